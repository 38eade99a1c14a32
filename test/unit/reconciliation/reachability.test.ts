import { CHECK_RESULTS } from '../../../src/observability/reconciliationMetrics';
import type { PaymentApiErrorDetails } from '../../../src/paymentApi/paymentApiError';
import { failureCode, reachabilityOf } from '../../../src/reconciliation/reachability';

const details = (over: Partial<PaymentApiErrorDetails>): PaymentApiErrorDetails => ({
  endpoint: 'order',
  posId: '300746',
  httpStatus: null,
  correlationId: null,
  code: null,
  retryAfterMs: null,
  noAnswer: null,
  attempts: 3,
  ...over,
});

describe('payment API reachability', () => {
  it('When a check could not reach the API, then it is unreachable, with what failed', () => {
    expect(reachabilityOf({ result: 'unavailable', failure: details({ noAnswer: 'timeout' }) })).toEqual({
      state: 'unreachable',
      detail: 'timeout',
    });
    expect(reachabilityOf({ result: 'unavailable', failure: details({ noAnswer: 'network' }) })?.detail).toBe(
      'network',
    );
    expect(reachabilityOf({ result: 'unavailable', failure: details({ httpStatus: 503 }) })?.detail).toBe('http_503');
    expect(failureCode(null)).toBe('unknown');
  });

  it('When the API refused the credentials, then it is refused; when it answered anything, it answers', () => {
    expect(reachabilityOf({ result: 'unauthorized', failure: details({ httpStatus: 401 }) })).toEqual({
      state: 'refused',
      detail: 'credentials',
    });
    for (const result of ['unchanged', 'repaired', 'not_found', 'forbidden', 'pos_mismatch', 'invalid_answer'] as const)
      expect(reachabilityOf({ result, failure: null })).toEqual({ state: 'answering', detail: '' });
  });

  it('When no question was asked, then nothing is said of the API', () => {
    for (const result of ['no_credentials', 'invalid_order_id', 'cancelled'] as const)
      expect(reachabilityOf({ result, failure: null })).toBeNull();
    // Every result is decided one way or the other.
    for (const result of CHECK_RESULTS) expect(() => reachabilityOf({ result, failure: null })).not.toThrow();
  });
});
