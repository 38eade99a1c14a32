import { Registry } from 'prom-client';
import { createLogger } from '../../../src/observability/logger';
import { createPaymentApiMetrics, type PaymentApiMetrics } from '../../../src/observability/reconciliationMetrics';
import {
  createPaymentApi,
  MAX_ANSWER_BYTES,
  PaymentApiError,
  type PaymentApi,
  type PaymentApiOptions,
} from '../../../src/paymentApi/paymentApi';
import { buildLifecycle, PaymentServiceDouble, seededRandom, type DoubleClient } from '../../../src/simulator';
import { sleep } from '../../support/wait';

/**
 * The payment-API client against the payment-service double, over real HTTP: tokens, retries,
 * limits, errors, metrics and what reaches the logs.
 */

const POS_A: DoubleClient = { posId: '145227', clientId: '145227', clientSecret: 'a-secret-12f071174cb7eb79d4aac5bc' };
const POS_B: DoubleClient = { posId: '300746', clientId: '300746', clientSecret: 'b-secret-2ee86a66e5d97e3fadc400c9' };

let double: PaymentServiceDouble;
let clock: number;
const logLines: string[] = [];
const issuedTokens: string[] = [];
const sleeps: number[] = [];

/** The real fetch, noting every token issued so the logs can be searched for it. */
const recordingFetch: typeof fetch = async (input, init) => {
  const response = await fetch(input, init);
  const url = input instanceof Request ? input.url : input.toString();
  if (url.endsWith('/authorize') && response.status === 200) {
    const token = ((await response.clone().json()) as { access_token: string }).access_token;
    issuedTokens.push(token);
  }
  return response;
};

function client(overrides: Partial<PaymentApiOptions> = {}): { api: PaymentApi; metrics: PaymentApiMetrics } {
  const metrics = createPaymentApiMetrics(new Registry());
  const api = createPaymentApi({
    baseUrl: double.url,
    credentials: [POS_A, POS_B],
    timeoutMs: 5000,
    maxInFlight: 4,
    maxPerSecond: 1000,
    logger: createLogger('debug', { write: (line: string) => void logLines.push(line) }),
    metrics,
    retry: { backoff: { firstMs: 10, maxMs: 50, jitter: 'full' } },
    now: () => clock,
    // Delays are recorded, not waited: the tests assert what the client chose to wait, not how long it took.
    sleep: (ms) => {
      sleeps.push(ms);
      return Promise.resolve();
    },
    fetch: recordingFetch,
    ...overrides,
  });
  return { api, metrics };
}

const count = async (
  counter: PaymentApiMetrics['requests'] | PaymentApiMetrics['tokenFetches'],
  labels: Record<string, string>,
): Promise<number> =>
  (await counter.get()).values
    .filter((v) => Object.entries(labels).every(([k, value]) => v.labels[k as keyof typeof v.labels] === value))
    .reduce((sum, v) => sum + v.value, 0);

const failureOf = async (call: Promise<unknown>): Promise<PaymentApiError> => {
  try {
    await call;
  } catch (error) {
    if (error instanceof PaymentApiError) return error;
    throw error;
  }
  throw new Error('the call did not fail');
};

/** A realistic completed order of POS A, learned from the simulator's own notification bodies (buyer included). */
function completedOrder(orderId: string, posId = POS_A.posId): { orderId: string; buyerEmail: string } {
  const lifecycle = buildLifecycle(
    {
      posId,
      notifyUrl: 'https://shop.example/notify',
      payMethod: 'card',
      autoReceive: true,
      outcome: 'COMPLETED',
      totalAmount: '15000',
      currencyCode: 'PLN',
      refunds: [{ amount: '4500', status: 'FINALIZED' }],
      gapMs: 2000,
      startMs: 0,
      runStartedAt: new Date(),
      orderId,
    },
    seededRandom(orderId.length),
  );
  for (const n of lifecycle.notifications) double.learn(n.body);
  const completed = lifecycle.notifications.find((n) => n.status === 'COMPLETED');
  const body = JSON.parse(completed?.body.toString('utf8') ?? '{}') as { order: { buyer: { email: string } } };
  return { orderId, buyerEmail: body.order.buyer.email };
}

beforeEach(async () => {
  clock = Date.parse('2026-11-25T08:00:00Z');
  sleeps.length = 0;
  double = new PaymentServiceDouble({ clients: [POS_A, POS_B], now: () => clock });
  await double.start();
});
afterEach(() => double.stop());

describe('payment API client', () => {
  it('When an order is retrieved twice, then one form-encoded token serves both, and the answer is the exact bytes with its Correlation-Id', async () => {
    const { orderId } = completedOrder('ORDER00001261125GUEST000P01');
    const { api, metrics } = client();

    const first = await api.retrieveOrder(POS_A.posId, orderId);
    const second = await api.retrieveOrder(POS_A.posId, orderId);

    expect(first.value).toMatchObject({
      orderId,
      merchantPosId: POS_A.posId,
      status: 'COMPLETED',
      totalAmount: '15000',
    });
    expect(first.value.paymentId).toMatch(/^\d+$/);
    expect(first.correlationId).toMatch(/^[0-9a-f-]{36}$/);
    expect(second.correlationId).not.toBe(first.correlationId);
    const raw = JSON.parse(first.body.toString('utf8')) as { orders: Array<{ buyer?: unknown }> };
    expect(raw.orders[0]?.buyer).toBeDefined();
    expect(double.count('token')).toBe(1);
    expect(double.requests.find((r) => r.endpoint === 'token')?.contentType).toBe('application/x-www-form-urlencoded');
    expect(double.requests.filter((r) => r.endpoint === 'order').map((r) => r.tokenPosId)).toEqual([
      POS_A.posId,
      POS_A.posId,
    ]);
    expect(await count(metrics.tokenFetches, { pos_id: POS_A.posId, result: 'ok' })).toBe(1);
    expect(await count(metrics.requests, { endpoint: 'order', status: '200' })).toBe(2);
    expect(await count(metrics.requests, { endpoint: 'token', status: '200' })).toBe(1);
    expect((await metrics.requestDuration.get()).values.find((v) => v.metricName?.endsWith('_count'))).toBeDefined();
  });

  it('When refunds are listed, then each refund record is read', async () => {
    const { orderId } = completedOrder('ORDER00002261125GUEST000P01');
    const answer = await client().api.listRefunds(POS_A.posId, orderId);
    expect(answer.value).toEqual([
      expect.objectContaining({ amount: '4500', currencyCode: 'PLN', status: 'FINALIZED', statusError: null }),
    ]);
    expect(answer.correlationId).not.toBeNull();
  });

  it('When the token is revoked, then the 401 brings one new token and the call succeeds', async () => {
    const { orderId } = completedOrder('ORDER00003261125GUEST000P01');
    const { api, metrics } = client();
    await api.retrieveOrder(POS_A.posId, orderId);
    double.expireTokens();
    await expect(api.retrieveOrder(POS_A.posId, orderId)).resolves.toMatchObject({ value: { status: 'COMPLETED' } });
    expect(double.count('token')).toBe(2);
    expect(double.requests.filter((r) => r.endpoint === 'order').map((r) => r.status)).toEqual([200, 401, 200]);
    expect(await count(metrics.requests, { endpoint: 'order', status: '401' })).toBe(1);
  });

  it('When the token expires mid-run, then the client fetches a new one shortly before expires_in, without a 401', async () => {
    double.setTokenLifetime(120);
    const { orderId } = completedOrder('ORDER00004261125GUEST000P01');
    const { api } = client({ tokenRefreshMarginMs: 30_000 });
    await api.retrieveOrder(POS_A.posId, orderId);
    clock += 80_000; // still valid for 40 s: kept
    await api.retrieveOrder(POS_A.posId, orderId);
    expect(double.count('token')).toBe(1);
    clock += 15_000; // 25 s left, inside the margin: fetched again
    await api.listRefunds(POS_A.posId, orderId);
    clock += 200_000; // long expired
    await api.listRefunds(POS_A.posId, orderId);
    expect(double.count('token')).toBe(3);
    expect(double.requests.filter((r) => r.status === 401)).toEqual([]);
  });

  it('When a POS has a wrong secret, then its calls fail unauthorized and are counted, while another POS goes on', async () => {
    const { orderId } = completedOrder('ORDER00005261125GUEST000P01');
    const other = completedOrder('ORDER00006261125GUEST000P01', POS_B.posId);
    const { api, metrics } = client({ credentials: [POS_A, { ...POS_B, clientSecret: 'wrong-secret-value' }] });

    const error = await failureOf(api.retrieveOrder(POS_B.posId, other.orderId));
    expect(error).toMatchObject({
      kind: 'unauthorized',
      details: { endpoint: 'token', posId: POS_B.posId, httpStatus: 401 },
    });
    expect(error.message).not.toContain('wrong-secret-value');
    await expect(api.retrieveOrder(POS_A.posId, orderId)).resolves.toMatchObject({ value: { orderId } });
    expect(await count(metrics.tokenFetches, { pos_id: POS_B.posId, result: 'unauthorized' })).toBe(1);
    expect(await count(metrics.tokenFetches, { pos_id: POS_A.posId, result: 'ok' })).toBe(1);
  });

  it('When the token is asked for without the form content type, then the double answers 401, as the spec says', async () => {
    const res = await fetch(`${double.url}/pl/standard/user/oauth/authorize`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        grant_type: 'client_credentials',
        client_id: POS_A.clientId,
        client_secret: POS_A.clientSecret,
      }),
    });
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({ status: expect.objectContaining({ statusCode: 'UNAUTHORIZED' }) });
  });

  it('When the order belongs to another POS, then the answer is forbidden with INVALID_AUTH_FOR_THIS_ORDER', async () => {
    const { orderId } = completedOrder('ORDER00007261125GUEST000P01', POS_B.posId);
    const error = await failureOf(client().api.retrieveOrder(POS_A.posId, orderId));
    expect(error).toMatchObject({
      kind: 'forbidden',
      details: { httpStatus: 403, code: 'INVALID_AUTH_FOR_THIS_ORDER' },
    });
    expect(error.details.correlationId).not.toBeNull();
  });

  it('When the order is unknown, then the call fails not_found; without credentials for the POS, no_credentials', async () => {
    const { api } = client();
    await expect(failureOf(api.retrieveOrder(POS_A.posId, 'NOSUCHORDER'))).resolves.toMatchObject({
      kind: 'not_found',
      details: { httpStatus: 404, code: 'DATA_NOT_FOUND' },
    });
    await expect(failureOf(api.listRefunds('999999', 'NOSUCHORDER'))).resolves.toMatchObject({
      kind: 'no_credentials',
    });
    expect(double.requests.filter((r) => r.path.includes('NOSUCHORDER'))).toHaveLength(1);
  });

  it('When the API answers 429 with Retry-After, then the client waits what it asks and succeeds; a Retry-After too long fails unavailable at once', async () => {
    const { orderId } = completedOrder('ORDER00008261125GUEST000P01');
    const { api, metrics } = client();
    double.injectFaults({ endpoint: 'order', status: 429, retryAfter: '3' });
    await expect(api.retrieveOrder(POS_A.posId, orderId)).resolves.toMatchObject({ value: { orderId } });
    expect(sleeps).toEqual([3000]);
    expect(await count(metrics.requests, { endpoint: 'order', status: '429' })).toBe(1);

    sleeps.length = 0;
    double.injectFaults({ endpoint: 'refunds', status: 429, retryAfter: '600' });
    await expect(failureOf(api.listRefunds(POS_A.posId, orderId))).resolves.toMatchObject({
      kind: 'unavailable',
      details: { httpStatus: 429, retryAfterMs: 600_000 },
    });
    expect(sleeps).toEqual([]);
  });

  it('When the API answers 5xx then 200, then the call succeeds after backoff with full jitter; when 5xx persists, it fails unavailable', async () => {
    const { orderId } = completedOrder('ORDER00009261125GUEST000P01');
    const { api, metrics } = client({
      random: () => 0.5,
      retry: { backoff: { firstMs: 100, maxMs: 1000, jitter: 'full' }, maxAttempts: 3 },
    });
    double.injectFaults({ endpoint: 'order', status: 500 }, { endpoint: 'order', status: 503 });
    await expect(api.retrieveOrder(POS_A.posId, orderId)).resolves.toMatchObject({ value: { orderId } });
    expect(sleeps).toEqual([50, 100]);
    expect(await count(metrics.requests, { endpoint: 'order', status: '500' })).toBe(1);
    expect(await count(metrics.requests, { endpoint: 'order', status: '503' })).toBe(1);

    double.injectFaults({ endpoint: 'refunds', status: 502, times: 3 });
    await expect(failureOf(api.listRefunds(POS_A.posId, orderId))).resolves.toMatchObject({
      kind: 'unavailable',
      details: { httpStatus: 502 },
    });
    expect(double.requests.filter((r) => r.endpoint === 'refunds')).toHaveLength(3);
  });

  it('When the token endpoint fails with 503 first, then the token fetch is retried too', async () => {
    const { orderId } = completedOrder('ORDER00010261125GUEST000P01');
    double.injectFaults({ endpoint: 'token', status: 503 });
    await expect(client().api.retrieveOrder(POS_A.posId, orderId)).resolves.toMatchObject({ value: { orderId } });
    expect(double.requests.filter((r) => r.endpoint === 'token').map((r) => r.status)).toEqual([503, 200]);
  });

  it('When an answer is slower than the timeout or the connection drops, then the attempt counts as timeout or network and is retried', async () => {
    const { orderId } = completedOrder('ORDER00011261125GUEST000P01');
    const { api, metrics } = client({ timeoutMs: 200 });
    await api.retrieveOrder(POS_A.posId, orderId); // the token first, outside the faults
    double.injectFaults({ endpoint: 'order', delayMs: 1500 }, { endpoint: 'order', reset: true });
    await expect(api.retrieveOrder(POS_A.posId, orderId)).resolves.toMatchObject({ value: { orderId } });
    expect(await count(metrics.requests, { endpoint: 'order', status: 'timeout' })).toBe(1);
    expect(await count(metrics.requests, { endpoint: 'order', status: 'network' })).toBe(1);
    expect(await count(metrics.requests, { endpoint: 'order', status: '200' })).toBe(2);
  });

  it('When many calls are made at once, then no more than PAYMENT_API_MAX_IN_FLIGHT reach the API together, and one token is fetched', async () => {
    const { orderId } = completedOrder('ORDER00012261125GUEST000P01');
    const { api } = client({ maxInFlight: 2 });
    double.injectFaults({ endpoint: 'order', delayMs: 100, times: 8 });
    const answers = await Promise.all(Array.from({ length: 8 }, () => api.retrieveOrder(POS_A.posId, orderId)));
    expect(answers).toHaveLength(8);
    expect(double.peakInFlight).toBe(2);
    expect(double.count('token')).toBe(1);
  });

  it('When the answer lags the truth, then a retrieval right after COMPLETED still says PENDING, and a fresh refund still PENDING', async () => {
    const { api } = client();
    double.setOrder({ orderId: 'LAGGING', merchantPosId: POS_A.posId, status: 'PENDING' });
    clock += 10_000;
    double.setOrder({ orderId: 'LAGGING', merchantPosId: POS_A.posId, status: 'COMPLETED' });
    double.setRefund('LAGGING', { refundId: '77', status: 'FINALIZED', amount: '500' });
    double.setLag(5_000);
    expect((await api.retrieveOrder(POS_A.posId, 'LAGGING')).value).toMatchObject({
      status: 'PENDING',
      paymentId: null,
    });
    expect((await api.listRefunds(POS_A.posId, 'LAGGING')).value).toEqual([
      expect.objectContaining({ refundId: '77', status: 'PENDING' }),
    ]);
    clock += 5_000;
    expect((await api.retrieveOrder(POS_A.posId, 'LAGGING')).value).toMatchObject({ status: 'COMPLETED' });
    expect((await api.listRefunds(POS_A.posId, 'LAGGING')).value).toEqual([
      expect.objectContaining({ refundId: '77', status: 'FINALIZED' }),
    ]);
  });

  it('When the answer is not in the spec shape, then the call fails invalid_answer', async () => {
    const { api } = client();
    double.setOrder({ orderId: 'ODD', merchantPosId: POS_A.posId, status: 'PENDING' });
    double.injectFaults({ endpoint: 'order', status: 400 });
    await expect(failureOf(api.retrieveOrder(POS_A.posId, 'ODD'))).resolves.toMatchObject({
      kind: 'invalid_answer',
      details: { httpStatus: 400 },
    });
  });
});

describe('payment API answers, ids and callers that leave', () => {
  it('When the API sends an endless answer, then the client stops reading at 1 MiB, fails invalid_answer without retrying, and its RSS grows by under 64 MB', async () => {
    const { api, metrics } = client();
    double.setOrder({ orderId: 'ENDLESS', merchantPosId: POS_A.posId, status: 'PENDING' });
    await api.retrieveOrder(POS_A.posId, 'ENDLESS'); // the token first, outside the fault
    double.injectFaults({ endpoint: 'order', hugeBody: Infinity, times: 10 });
    const rssBefore = process.memoryUsage().rss;

    await expect(failureOf(api.retrieveOrder(POS_A.posId, 'ENDLESS'))).resolves.toMatchObject({
      kind: 'invalid_answer',
      message: expect.stringContaining(`larger than ${MAX_ANSWER_BYTES} bytes`) as unknown,
    });

    expect(process.memoryUsage().rss - rssBefore).toBeLessThan(64 * 1024 * 1024);
    expect(double.count('order')).toBe(2);
    expect(await count(metrics.requests, { endpoint: 'order', status: 'too_large' })).toBe(1);
  });

  it('When the API declares an answer past 1 MiB, then the client refuses it from its Content-Length, unread', async () => {
    const { api } = client();
    double.setOrder({ orderId: 'DECLARED', merchantPosId: POS_A.posId, status: 'PENDING' });
    double.injectFaults({ endpoint: 'order', hugeBody: 200 * 1024 * 1024, declared: true });
    await expect(failureOf(api.retrieveOrder(POS_A.posId, 'DECLARED'))).resolves.toMatchObject({
      kind: 'invalid_answer',
    });
  });

  it.each(['.', '..', 'a/b', '../../oauth', 'tab\there', 'nul\u0000', 'x'.repeat(129), ''])(
    'When the order id is %j, then the call fails invalid_order_id and nothing reaches the API',
    async (orderId) => {
      const { api } = client();
      await expect(failureOf(api.retrieveOrder(POS_A.posId, orderId))).resolves.toMatchObject({
        kind: 'invalid_order_id',
      });
      await expect(failureOf(api.listRefunds(POS_A.posId, orderId))).resolves.toMatchObject({
        kind: 'invalid_order_id',
      });
      expect(double.requests).toEqual([]);
    },
  );

  it('When an id holds characters a path gives meaning to, then they are sent encoded in one segment', async () => {
    const { api } = client();
    const orderId = 'A?b#c%2e d\\e';
    double.setOrder({ orderId, merchantPosId: POS_A.posId, status: 'PENDING' });
    await expect(api.retrieveOrder(POS_A.posId, orderId)).resolves.toMatchObject({ value: { orderId } });
    expect(double.requests.at(-1)?.path).toBe(`/api/v2_1/orders/${encodeURIComponent(orderId)}`);
  });

  it('When the caller leaves during a slow answer or a retry wait, then the call fails cancelled at once and asks nothing more', async () => {
    const { api } = client({ sleep });
    double.setOrder({ orderId: 'LEFT', merchantPosId: POS_A.posId, status: 'PENDING' });
    await api.retrieveOrder(POS_A.posId, 'LEFT'); // the token first
    const asked = double.count('order');

    double.injectFaults({ endpoint: 'order', delayMs: 3000 });
    const slow = failureOf(api.retrieveOrder(POS_A.posId, 'LEFT', AbortSignal.timeout(100)));
    await expect(slow).resolves.toMatchObject({ kind: 'cancelled' });

    double.clearFaults();
    double.injectFaults({ endpoint: 'order', status: 503, retryAfter: '1', times: 10 });
    const waiting = failureOf(api.retrieveOrder(POS_A.posId, 'LEFT', AbortSignal.timeout(300)));
    await expect(waiting).resolves.toMatchObject({ kind: 'cancelled' });
    // A pause that checks nothing more is asked: past the Retry-After (1 s, from the answer before the cancel).
    await sleep(1000);
    expect(double.count('order')).toBe(asked + 2);
  });
});

describe('payment API logs', () => {
  it('When the client has run, then the logs hold Correlation-Ids at debug, and never a secret, a token or a byte of an answer', async () => {
    logLines.length = 0;
    const { orderId, buyerEmail } = completedOrder('ORDER00013261125GUEST000P01');
    const { api } = client({ credentials: [POS_A, { ...POS_B, clientSecret: 'wrong-secret-value' }] });
    const answer = await api.retrieveOrder(POS_A.posId, orderId);
    await api.listRefunds(POS_A.posId, orderId);
    double.expireTokens();
    double.injectFaults({ endpoint: 'order', status: 500 });
    await api.retrieveOrder(POS_A.posId, orderId);
    await failureOf(api.retrieveOrder(POS_B.posId, orderId));

    const logs = logLines.join('\n');
    expect(logs).toContain(`"correlationId":"${answer.correlationId}"`);
    expect(issuedTokens.length).toBeGreaterThan(0);
    for (const secret of [POS_A.clientSecret, 'wrong-secret-value', ...issuedTokens, buyerEmail, 'buyer', 'Bearer'])
      expect(logs).not.toContain(secret);
  });
});
