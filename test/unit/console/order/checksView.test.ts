import { LocalTime } from '../../../../src/console/language/localTime';
import { checkStatus, nextCheck, whatFailed, type CheckSchedule } from '../../../../src/console/order/checksView';
import type { PageContext } from '../../../../src/console/frame/layout';
import type { PaymentApiErrorDetails } from '../../../../src/paymentApi/paymentApiError';
const now = new Date('2026-11-27T15:00:00Z');
const ctx: PageContext = {
  viewer: null,
  now,
  clock: new LocalTime('Europe/Warsaw', 'en-GB'),
  paymentServiceTimeZone: 'Europe/Warsaw',
};
const ago = (ms: number) => new Date(now.getTime() - ms);
const MIN = 60_000;
const HOUR = 60 * MIN;
const text = (html: { text: string }) => html.text.replace(/<[^>]*>/g, '').replace(/\s+/g, ' ');

describe('a check’s result in words', () => {
  const schedule: CheckSchedule = { afterMs: 5 * MIN, giveUpMs: 7 * 24 * HOUR, timeoutMs: 10_000 };
  const failure = (over: Partial<PaymentApiErrorDetails>): PaymentApiErrorDetails => ({
    endpoint: 'order',
    posId: '300746',
    httpStatus: null,
    correlationId: null,
    code: null,
    retryAfterMs: null,
    noAnswer: null,
    attempts: 4,
    ...over,
  });

  it('When a check failed, then what failed is said: timed out, unreachable, refused, unknown order', () => {
    expect(whatFailed('unavailable', failure({ noAnswer: 'timeout' }), schedule, '300746')).toBe(
      'the payment service timed out: it did not answer within 10 s (PAYMENT_API_TIMEOUT) (4 tries).',
    );
    expect(whatFailed('unavailable', failure({ noAnswer: 'network' }), schedule, '300746')).toBe(
      'the service could not reach the payment service: no connection (4 tries).',
    );
    expect(whatFailed('unavailable', failure({ httpStatus: 503 }), schedule, '300746')).toContain('HTTP 503');
    expect(whatFailed('unavailable', failure({ httpStatus: 429 }), schedule, '300746')).toContain('too busy');
    expect(whatFailed('unauthorized', failure({ httpStatus: 401, attempts: 1 }), schedule, '300746')).toBe(
      'the payment service refused the credentials of shop account 300746 (PAYMENT_API_CREDENTIALS).',
    );
    expect(whatFailed('not_found', failure({ httpStatus: 404 }), schedule, '300746')).toContain(
      'does not know this order',
    );
    expect([checkStatus('unavailable', failure({ noAnswer: 'timeout' })), checkStatus('unavailable', null)]).toEqual([
      504, 503,
    ]);
    expect([checkStatus('repaired', null), checkStatus('unchanged', null), checkStatus('not_found', null)]).toEqual([
      200, 200, 502,
    ]);
  });

  it('When the next automatic check is asked for, then it is when it comes, or why none will', () => {
    const say = (state: Parameters<typeof nextCheck>[0], s: CheckSchedule | null = schedule) =>
      text(nextCheck(state, ctx, s));
    const open = { open: true, lastChange: ago(MIN), nextCheckAt: null, givenUpAt: null };
    expect(say(open)).toMatch(/^about 27 Nov 2026, 16:04:00 CET \(in 4 min\), 5 min after its last news/);
    expect(say({ ...open, nextCheckAt: new Date(now.getTime() + HOUR) })).toMatch(
      /^27 Nov 2026, 17:00:00 CET \(in 1 h\)/,
    );
    expect(say({ ...open, open: false })).toContain('none: the order is final');
    expect(say({ ...open, givenUpAt: ago(HOUR) })).toContain('given up');
    expect(say({ ...open, lastChange: ago(90 * 24 * HOUR) })).toContain(
      'none: the order has had no news for 90 days, longer than 7 days (RECONCILE_GIVE_UP), so it is no longer checked',
    );
    expect(say({ ...open, lastChange: ago(HOUR) })).toBe('due now: the next round of checks takes it.');
    expect(say(open, null)).toContain('checks are off');
  });
});
