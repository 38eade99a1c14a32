import http from 'node:http';
import { PaymentServiceDouble, type DoubleClient, type DoubleFault } from '../../../src/simulator';
import { EventConsumer } from '../../support/broker';
import { query, testDatabase, type TestDatabase } from '../../support/database';
import { startTestService, type TestService } from '../../support/service';
import { DrivenClock } from '../../support/drivenClock';
import { sleep, waitUntil } from '../../support/wait';
import {
  exactBytes,
  OTHER_KEY,
  OTHER_POS_ID,
  orderBody,
  POS_ID,
  refundBody,
  sign,
  uniqueId,
} from '../../support/signing';

/**
 * Reconciliation end to end: the service against the payment-service double, through the admin port and
 * the background sweep, with the events consumed from RabbitMQ.
 */

const POS: DoubleClient = { posId: POS_ID, clientId: POS_ID, clientSecret: 'pos-secret-4c1f0e2b9d7a' };
const OTHER: DoubleClient = { posId: OTHER_POS_ID, clientId: OTHER_POS_ID, clientSecret: 'other-secret-9e8d7c6b' };

let double: PaymentServiceDouble;

beforeEach(async () => {
  double = new PaymentServiceDouble({ clients: [POS, OTHER] });
  await double.start();
});
afterEach(() => double.stop());

const credentials = (...clients: DoubleClient[]): string =>
  clients.map((c) => `${c.posId}:${c.clientId}:${c.clientSecret}`).join(',');

/** The service with reconciliation on; the sweep waits an hour unless the test says otherwise. */
function startReconciling(
  env: Record<string, string> = {},
  database?: TestDatabase,
  clock?: DrivenClock,
): Promise<TestService> {
  return startTestService({
    ...(database ? { database } : {}),
    ...(clock ? { clock } : {}),
    env: {
      PAYMENT_API_URL: double.url,
      PAYMENT_API_CREDENTIALS: credentials(POS, OTHER),
      RECONCILE_AFTER: '1h',
      RECONCILE_GIVE_UP: '7d',
      RECONCILE_INTERVAL: '1h',
      ...env,
    },
  });
}

async function metric(svc: TestService, name: string, labels: Record<string, string> = {}): Promise<number> {
  const metrics = await svc.service.metrics.registry.getMetricsAsJSON();
  const found = metrics.find((m) => m.name === name);
  return (found?.values ?? [])
    .filter((v) => Object.entries(labels).every(([k, value]) => v.labels[k] === value))
    .reduce((sum, v) => sum + v.value, 0);
}

/** A POST that its client abandons after `ms`, closing the connection. */
function hangUp(port: number, path: string, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const req = http.request({ host: '127.0.0.1', port, method: 'POST', path, agent: false });
    req.on('error', () => resolve());
    req.on('response', (res) => {
      res.resume();
      res.on('end', resolve);
    });
    req.end();
    setTimeout(() => {
      req.destroy();
      resolve();
    }, ms);
  });
}

/** The double's exact answer to an order retrieval with a token of the POS: what the service must store. */
async function apiAnswer(orderId: string, client: DoubleClient = POS): Promise<Buffer> {
  const token = await fetch(`${double.url}/pl/standard/user/oauth/authorize`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: client.clientId,
      client_secret: client.clientSecret,
    }).toString(),
  });
  const { access_token } = (await token.json()) as { access_token: string };
  const answer = await fetch(`${double.url}/api/v2_1/orders/${orderId}`, {
    headers: { authorization: `Bearer ${access_token}` },
  });
  return Buffer.from(await answer.arrayBuffer());
}

interface EventBody {
  type: string;
  data: { sequence: number; status: string; previousStatus: string | null; observedVia: string; paymentId?: string };
}

describe('reconciliation against the payment API', () => {
  it('When the COMPLETED notification and a refund notification were lost, then POST reconcile applies both, publishes them in the order stream with observedVia reconciliation and keeps the API answer as the body', async () => {
    const svc = await startReconciling();
    const consumer = await new EventConsumer(svc.exchange).start();
    try {
      const orderId = uniqueId('LOST');
      await svc.post(orderBody({ orderId, status: 'PENDING' })).expect(200);
      double.setOrder({ orderId, merchantPosId: POS_ID, status: 'COMPLETED', paymentId: '5000123' });
      double.setRefund(orderId, { refundId: `${orderId}R`, status: 'FINALIZED', amount: '4500' });

      const res = await svc.admin.post(`/orders/${orderId}/reconcile`).expect(200);

      expect(res.body).toMatchObject({
        orderId,
        posId: POS_ID,
        result: 'repaired',
        applied: [
          { kind: 'order', id: orderId, status: 'COMPLETED' },
          { kind: 'refund', id: `${orderId}R`, status: 'FINALIZED' },
        ],
        stale: [],
        conflicts: [],
        order: { status: 'COMPLETED', paymentId: '5000123', refunds: [{ status: 'FINALIZED', amount: '4500' }] },
      });
      const history = (res.body as { order: { history: Array<{ status: string; observedVia: string }> } }).order
        .history;
      expect(history.map((h) => [h.status, h.observedVia])).toEqual([
        ['PENDING', 'notification'],
        ['COMPLETED', 'reconciliation'],
      ]);

      const events = (await consumer.waitFor(3)).map((m) => JSON.parse(m.content.toString()) as EventBody);
      expect(events.map((e) => [e.type, e.data.sequence, e.data.previousStatus, e.data.observedVia])).toEqual([
        ['order.pending', 1, null, 'notification'],
        ['order.completed', 2, 'PENDING', 'reconciliation'],
        ['refund.finalized', 3, null, 'reconciliation'],
      ]);
      expect(events[1]?.data.paymentId).toBe('5000123');

      const audit = await query<{ status: string; source_address: string | null; observed_via: string; body: Buffer }>(
        svc.database.url,
        `SELECT n.status, d.source_address, d.observed_via, n.body
           FROM notifications n JOIN deliveries d ON d.notification_id = n.id
          WHERE n.order_id = $1 AND n.kind = 'order' ORDER BY n.id`,
        [orderId],
      );
      expect(audit.map((a) => [a.status, a.source_address, a.observed_via])).toEqual([
        ['PENDING', '127.0.0.1', 'notification'],
        ['COMPLETED', null, 'reconciliation'],
      ]);
      expect(audit[1]?.body.equals(await apiAnswer(orderId))).toBe(true);
      expect(await metric(svc, 'reconciliation_repairs_total', { kind: 'order', status: 'COMPLETED' })).toBe(1);
      expect(await metric(svc, 'reconciliation_checks_total', { result: 'repaired' })).toBe(1);

      // Checking again changes nothing.
      const again = await svc.admin.post(`/orders/${orderId}/reconcile`).expect(200);
      expect(again.body).toMatchObject({ result: 'unchanged', applied: [] });
    } finally {
      await consumer.stop();
      await svc.stop();
    }
  });

  it('When the API confirms what is recorded, then the check writes nothing, not even a delivery row', async () => {
    const svc = await startReconciling();
    try {
      const orderId = uniqueId('SAME');
      await svc.post(orderBody({ orderId, status: 'COMPLETED', paymentId: '61' })).expect(200);
      double.setOrder({ orderId, merchantPosId: POS_ID, status: 'COMPLETED', paymentId: '61' });
      const rows = async (): Promise<unknown[]> =>
        query(
          svc.database.url,
          `SELECT d.id::text FROM deliveries d JOIN notifications n ON n.id = d.notification_id WHERE n.order_id = $1
           UNION ALL SELECT id::text FROM notifications WHERE order_id = $1`,
          [orderId],
        );
      const before = await rows();

      for (let i = 0; i < 3; i++)
        expect((await svc.admin.post(`/orders/${orderId}/reconcile`).expect(200)).body).toMatchObject({
          result: 'unchanged',
          said: [{ kind: 'order', id: orderId, status: 'COMPLETED' }],
          applied: [],
        });

      expect(await rows()).toEqual(before);
    } finally {
      await svc.stop();
    }
  });

  it('When a repaired status comes with the payment method, then the projection and the event carry it', async () => {
    const svc = await startReconciling();
    const consumer = await new EventConsumer(svc.exchange).start();
    try {
      const orderId = uniqueId('PAYM');
      await svc.post(orderBody({ orderId, status: 'PENDING' })).expect(200);
      double.setOrder({
        orderId,
        merchantPosId: POS_ID,
        status: 'COMPLETED',
        paymentId: '62',
        payMethodType: 'CARD_TOKEN',
      });

      const res = await svc.admin.post(`/orders/${orderId}/reconcile`).expect(200);

      expect(res.body).toMatchObject({
        result: 'repaired',
        order: { status: 'COMPLETED', payMethodType: 'CARD_TOKEN' },
      });
      const events = (await consumer.waitFor(2)).map((m) => JSON.parse(m.content.toString()) as EventBody);
      expect(events[1]).toMatchObject({ type: 'order.completed', data: { payMethodType: 'CARD_TOKEN' } });
    } finally {
      await consumer.stop();
      await svc.stop();
    }
  });

  it("When the API's amount disagrees with the notified order, then the status is recorded with the notified amount kept, and the event says so, counted", async () => {
    const svc = await startReconciling();
    const consumer = await new EventConsumer(svc.exchange).start();
    try {
      const orderId = uniqueId('DISAGREE');
      await svc.post(orderBody({ orderId, status: 'PENDING', totalAmount: '15000' })).expect(200);
      double.setOrder({ orderId, merchantPosId: POS_ID, status: 'COMPLETED', paymentId: '63', totalAmount: '99900' });

      const res = await svc.admin.post(`/orders/${orderId}/reconcile`).expect(200);

      expect(res.body).toMatchObject({ result: 'repaired', order: { status: 'COMPLETED', totalAmount: '15000' } });
      const events = (await consumer.waitFor(2)).map(
        (m) => JSON.parse(m.content.toString()) as EventBody & { data: { disagreements?: unknown } },
      );
      expect(events[0]?.data.disagreements).toBeUndefined();
      expect(events[1]).toMatchObject({
        type: 'order.completed',
        data: {
          totalAmount: '15000',
          observedVia: 'reconciliation',
          disagreements: [{ field: 'totalAmount', kept: '15000', received: '99900' }],
        },
      });
      expect(await metric(svc, 'reconciliation_disagreements_total', { kind: 'order', field: 'totalAmount' })).toBe(1);
      expect(svc.logs.some((l) => l.includes('states facts otherwise') && !l.includes('99900'))).toBe(true);
    } finally {
      await consumer.stop();
      await svc.stop();
    }
  });

  it('When the API lags (PENDING after a COMPLETED notification), then its answer is stale and changes nothing', async () => {
    const svc = await startReconciling();
    try {
      const orderId = uniqueId('LAG');
      await svc.post(orderBody({ orderId, status: 'COMPLETED', paymentId: '77' })).expect(200);
      double.setOrder({ orderId, merchantPosId: POS_ID, status: 'PENDING' });

      const res = await svc.admin.post(`/orders/${orderId}/reconcile`).expect(200);

      expect(res.body).toMatchObject({
        result: 'unchanged',
        applied: [],
        stale: [{ kind: 'order', id: orderId, status: 'PENDING' }],
        order: { status: 'COMPLETED' },
      });
      const [events] = await query<{ n: string }>(
        svc.database.url,
        'SELECT count(*) AS n FROM outbox_events WHERE order_id = $1',
        [orderId],
      );
      expect(events?.n).toBe('1');
    } finally {
      await svc.stop();
    }
  });

  it('When the API says COMPLETED for an order notified CANCELED, then the conflict is recorded, published, and counted as found by reconciliation (money taken on a canceled order)', async () => {
    const svc = await startReconciling();
    try {
      const orderId = uniqueId('PAIDCANCELED');
      await svc.post(orderBody({ orderId, status: 'CANCELED' })).expect(200);
      double.setOrder({ orderId, merchantPosId: POS_ID, status: 'COMPLETED', paymentId: '5000999' });
      const completedOnCanceled = { kind: 'order', status: 'COMPLETED', kept_status: 'CANCELED' };

      const res = await svc.admin.post(`/orders/${orderId}/reconcile`).expect(200);

      expect(res.body).toMatchObject({
        result: 'unchanged',
        applied: [],
        conflicts: [{ kind: 'order', id: orderId, status: 'COMPLETED' }],
        order: { status: 'CANCELED' },
      });
      const events = await query<{ type: string }>(
        svc.database.url,
        'SELECT type FROM outbox_events WHERE order_id = $1 ORDER BY sequence',
        [orderId],
      );
      expect(events.map((e) => e.type)).toEqual(['order.canceled', 'order.status_conflict']);
      expect(
        await metric(svc, 'payment_status_conflicts_total', { ...completedOnCanceled, source: 'reconciliation' }),
      ).toBe(1);
      expect(await metric(svc, 'payment_status_conflicts_total', { source: 'notification' })).toBe(0);
      // The sender's deliveries are counted apart; this conflict was not one of them.
      expect(await metric(svc, 'payment_notifications_total', { outcome: 'conflict' })).toBe(0);
      expect(svc.logs.map((l) => JSON.parse(l) as Record<string, unknown>)).toContainEqual(
        expect.objectContaining({ level: 50, orderId, conflicts: ['order COMPLETED'] }),
      );
    } finally {
      await svc.stop();
    }
  });

  it('When an order was never seen, then POST reconcile needs its POS among several, and learns it with it', async () => {
    const svc = await startReconciling();
    try {
      const orderId = uniqueId('UNSEEN');
      double.setOrder({ orderId, merchantPosId: OTHER_POS_ID, status: 'WAITING_FOR_CONFIRMATION', paymentId: '9' });

      const required = await svc.admin.post(`/orders/${orderId}/reconcile`).expect(400);
      expect(required.body.error.code).toBe('pos_required');

      const res = await svc.admin.post(`/orders/${orderId}/reconcile`).send({ posId: OTHER_POS_ID }).expect(200);
      expect(res.body).toMatchObject({ result: 'repaired', order: { status: 'WAITING_FOR_CONFIRMATION' } });

      const mismatch = await svc.admin.post(`/orders/${orderId}/reconcile`).send({ posId: POS_ID }).expect(409);
      expect(mismatch.body.error.code).toBe('pos_mismatch');
      const unknown = await svc.admin
        .post(`/orders/${uniqueId('NOPE')}/reconcile`)
        .send({ posId: POS_ID })
        .expect(404);
      expect(unknown.body.error.code).toBe('order_not_found');
    } finally {
      await svc.stop();
    }
  });

  it("When the order is another POS's at the API, then its 403 is the result and nothing is recorded", async () => {
    const svc = await startReconciling();
    try {
      const orderId = uniqueId('XPOS');
      await svc.post(orderBody({ orderId, status: 'PENDING' })).expect(200);
      // The API says the order is the other POS's (and lets this POS's token read it).
      double.setOrder({ orderId, merchantPosId: OTHER_POS_ID, status: 'COMPLETED', paymentId: '1' });
      const res = await svc.admin.post(`/orders/${orderId}/reconcile`).expect(200);
      expect(res.body).toMatchObject({ result: 'forbidden', applied: [], order: { status: 'PENDING' } });
      const [order] = await query<{ status: string }>(
        svc.database.url,
        'SELECT status FROM orders WHERE order_id = $1',
        [orderId],
      );
      expect(order?.status).toBe('PENDING');
    } finally {
      await svc.stop();
    }
  });

  it('When a token expires mid-run, then the next check fetches another once and goes on', async () => {
    const svc = await startReconciling();
    try {
      const first = uniqueId('TOK');
      const second = uniqueId('TOK');
      for (const orderId of [first, second]) {
        await svc.post(orderBody({ orderId, status: 'PENDING' })).expect(200);
        double.setOrder({ orderId, merchantPosId: POS_ID, status: 'COMPLETED', paymentId: '3' });
      }
      await svc.admin.post(`/orders/${first}/reconcile`).expect(200);
      double.expireTokens();
      const res = await svc.admin.post(`/orders/${second}/reconcile`).expect(200);

      expect(res.body).toMatchObject({ result: 'repaired' });
      expect(await metric(svc, 'payment_api_token_fetches_total', { pos_id: POS_ID, result: 'ok' })).toBe(2);
    } finally {
      await svc.stop();
    }
  });

  it('When notifications were lost, then the sweep repairs every open order past RECONCILE_AFTER, and a POS with wrong credentials is counted while the others go on', async () => {
    const clock = new DrivenClock();
    const svc = await startReconciling(
      {
        PAYMENT_API_CREDENTIALS: credentials(POS, { ...OTHER, clientSecret: 'wrong-secret' }),
        RECONCILE_AFTER: '1s',
        RECONCILE_INTERVAL: '200ms',
      },
      undefined,
      clock,
    );
    const consumer = await new EventConsumer(svc.exchange).start();
    try {
      const mine = [uniqueId('SWEEP'), uniqueId('SWEEP')];
      const theirs = uniqueId('SWEEPX');
      for (const orderId of mine) {
        await svc.post(orderBody({ orderId, status: 'PENDING' })).expect(200);
        double.setOrder({ orderId, merchantPosId: POS_ID, status: 'COMPLETED', paymentId: '11' });
      }
      const theirBody = orderBody({ orderId: theirs, status: 'PENDING', merchantPosId: OTHER_POS_ID });
      await svc.public
        .post('/notifications')
        .set('Content-Type', 'application/json;charset=UTF-8')
        .set('OpenSvc-Signature', sign(theirBody, OTHER_KEY))
        .serialize(exactBytes)
        .send(Buffer.from(theirBody))
        .expect(200);
      double.setOrder({ orderId: theirs, merchantPosId: OTHER_POS_ID, status: 'COMPLETED', paymentId: '12' });
      const refundOrder = uniqueId('SWEEPR');
      await svc.post(orderBody({ orderId: refundOrder, status: 'COMPLETED', paymentId: '13' })).expect(200);
      await svc.post(refundBody({ orderId: refundOrder, refundId: `${refundOrder}R`, status: 'PENDING' })).expect(200);
      double.setOrder({ orderId: refundOrder, merchantPosId: POS_ID, status: 'COMPLETED', paymentId: '13' });
      double.setRefund(refundOrder, { refundId: `${refundOrder}R`, status: 'FINALIZED', amount: '5000' });
      clock.advance(1000); // RECONCILE_AFTER, on the sweep's clock

      await waitUntil(
        'three statuses repaired by the sweep',
        async () => (await metric(svc, 'reconciliation_repairs_total')) >= 3,
        30_000,
      );
      await waitUntil(
        'the POS with wrong credentials counted',
        async () => (await metric(svc, 'reconciliation_checks_total', { result: 'unauthorized' })) >= 1,
        30_000,
      );

      const statuses = await query<{ order_id: string; status: string }>(
        svc.database.url,
        'SELECT order_id, status FROM orders WHERE order_id = ANY($1) ORDER BY order_id',
        [[...mine, theirs]],
      );
      expect(Object.fromEntries(statuses.map((s) => [s.order_id, s.status]))).toEqual({
        [mine[0] as string]: 'COMPLETED',
        [mine[1] as string]: 'COMPLETED',
        [theirs]: 'PENDING',
      });
      expect(
        await metric(svc, 'payment_api_token_fetches_total', { pos_id: OTHER_POS_ID, result: 'unauthorized' }),
      ).toBeGreaterThan(0);
      expect(await metric(svc, 'reconciler_active')).toBe(1);
      const completed = (await consumer.waitFor(8)).map((m) => JSON.parse(m.content.toString()) as EventBody);
      expect(
        completed
          .filter((e) => e.data.observedVia === 'reconciliation')
          .map((e) => e.type)
          .sort(),
      ).toEqual(['order.completed', 'order.completed', 'refund.finalized']);
      const [schedule] = await query<{ attempts: number; next_check_at: Date | null }>(
        svc.database.url,
        'SELECT attempts, next_check_at FROM reconciliation_checks WHERE order_id = $1',
        [theirs],
      );
      expect(schedule?.attempts).toBeGreaterThanOrEqual(1);
      expect(schedule?.next_check_at).not.toBeNull();
    } finally {
      await consumer.stop();
      await svc.stop();
    }
  });

  it.each<[string, DoubleFault, number]>([
    ['answers 503', { endpoint: 'order', status: 503, times: 1000 }, 200],
    ['answers 429 with Retry-After: 2', { endpoint: 'order', status: 429, retryAfter: '2', times: 1000 }, 2000],
    ['answers slower than PAYMENT_API_TIMEOUT', { endpoint: 'order', delayMs: 1500, times: 1000 }, 200],
  ])(
    'When the API %s, then the sweep backs off while the intake goes on answering, and repairs once it is back',
    async (_, fault, leastBackoffMs) => {
      double.injectFaults(fault);
      // The sweep's clock is driven: RECONCILE_AFTER and the back-off pass when the test moves it on.
      const clock = new DrivenClock();
      const svc = await startReconciling(
        { RECONCILE_AFTER: '1s', RECONCILE_INTERVAL: '100ms', PAYMENT_API_TIMEOUT: '300ms' },
        undefined,
        clock,
      );
      try {
        const orderId = uniqueId('DOWN');
        await svc.post(orderBody({ orderId, status: 'PENDING' })).expect(200);
        double.setOrder({ orderId, merchantPosId: POS_ID, status: 'COMPLETED', paymentId: '1' });
        clock.advance(1000);

        // A quarter of a second at each look, through the client's retries (Retry-After), not the sweep's back-off.
        await waitUntil('the sweep backing off', async () => {
          clock.advance(250);
          return svc.logs.some((l) => l.includes('reconciliation backs off'));
        });
        const backoff = svc.logs.find((l) => l.includes('reconciliation backs off')) as string;
        expect((JSON.parse(backoff) as { retryInMs: number }).retryInMs).toBeGreaterThanOrEqual(leastBackoffMs);
        expect(await metric(svc, 'reconciliation_checks_total', { result: 'unavailable' })).toBe(1);

        // The intake records meanwhile, on its own pool.
        const other = uniqueId('DOWN');
        await svc.post(orderBody({ orderId: other, status: 'PENDING' })).expect(200);
        await svc.post(orderBody({ orderId: other, status: 'COMPLETED', paymentId: '2' })).expect(200);

        double.clearFaults();
        // A second of the sweep's time at each look, through the back-off and the order's next check.
        await waitUntil('the order repaired once the API is back', async () => {
          clock.advance(1000);
          return (await metric(svc, 'reconciliation_repairs_total', { kind: 'order', status: 'COMPLETED' })) === 1;
        });
        const [order] = await query<{ status: string }>(
          svc.database.url,
          'SELECT status FROM orders WHERE order_id = $1',
          [orderId],
        );
        expect(order?.status).toBe('COMPLETED');
      } finally {
        await svc.stop();
      }
    },
  );

  it.each(['999999999', '2147483'])(
    'When the API answers 429 with Retry-After: %s, then the sweep pauses 15 minutes, after one call: no timer overflow, no busy loop',
    async (retryAfter) => {
      const warnings: string[] = [];
      const onWarning = (warning: Error): void => void warnings.push(warning.name);
      process.on('warning', onWarning);
      double.injectFaults({ endpoint: 'order', status: 429, retryAfter, times: 1000 });
      const clock = new DrivenClock();
      const svc = await startReconciling({ RECONCILE_AFTER: '1s', RECONCILE_INTERVAL: '100ms' }, undefined, clock);
      try {
        const orderId = uniqueId('ABSURD');
        await svc.post(orderBody({ orderId, status: 'PENDING' })).expect(200);
        clock.advance(1000);
        await waitUntil('the sweep backing off', async () =>
          svc.logs.some((l) => l.includes('reconciliation backs off')),
        );
        const backoff = svc.logs.find((l) => l.includes('reconciliation backs off')) as string;
        expect((JSON.parse(backoff) as { retryInMs: number }).retryInMs).toBe(15 * 60_000);
        expect(clock.waitsLeftMs.at(-1)).toBeGreaterThan(14 * 60_000);
        // A pause that checks nothing more happens (no second call, no busy loop, no overflow warning): three sweep
        // intervals, as long as a broken back-off would take to call again (an overflowed timer fires in 1 ms).
        await sleep(3 * 100);
        expect(double.count('order')).toBe(1);
        expect(warnings).toEqual([]);

        const api = await svc.admin.post(`/orders/${orderId}/reconcile`).expect(503);
        expect(api.headers['retry-after']).toBe('900');
      } finally {
        process.off('warning', onWarning);
        await svc.stop();
      }
    },
    60_000,
  );

  it('When the API does not answer an on-demand check, then it is 503 payment_api_unavailable', async () => {
    double.injectFaults({ endpoint: 'order', status: 503, times: 1000 });
    const svc = await startReconciling();
    try {
      const orderId = uniqueId('DOWN');
      await svc.post(orderBody({ orderId, status: 'PENDING' })).expect(200);
      const api = await svc.admin.post(`/orders/${orderId}/reconcile`).expect(503);
      expect(api.body.error.code).toBe('payment_api_unavailable');
    } finally {
      await svc.stop();
    }
  });

  it('When a hundred reconcile clients hang up after 100 ms, then checks start as the port admits them, at most ADMIN_CONCURRENCY at once, each is cancelled, and nothing is asked once they are gone', async () => {
    const svc = await startReconciling();
    try {
      const orders = Array.from({ length: 100 }, () => uniqueId('GONE'));
      for (const orderId of orders) {
        await svc.post(orderBody({ orderId, status: 'PENDING' })).expect(200);
        double.setOrder({ orderId, merchantPosId: POS_ID, status: 'COMPLETED', paymentId: '4' });
      }
      await svc.admin.post(`/orders/${orders[0] as string}/reconcile`).expect(200); // the token first
      const asked = double.count('order');
      double.injectFaults({ endpoint: 'order', delayMs: 3000, times: 1000 });

      // Clients that give up after 100 ms and close their connection (as curl --max-time does).
      await Promise.all(
        orders.slice(1).map((orderId) => hangUp(svc.service.adminPort, `/orders/${orderId}/reconcile`, 100)),
      );
      await waitUntil(
        'the checks cancelled',
        async () => (await metric(svc, 'reconciliation_checks_total', { result: 'cancelled' })) >= 1,
      );
      // The port has seen every client leave: the queue ahead has emptied and a place is free, so a request
      // sent after them is served.
      await waitUntil(
        'the port serving again',
        async () => (await svc.admin.get(`/orders/${orders[0] as string}`)).status === 200,
      );
      const started = double.count('order') - asked;
      // A pause that checks nothing more is asked once the clients are gone: three of the request limiter's spacings
      // (PAYMENT_API_MAX_PER_SECOND, 10 by default), as long as a check left waiting there would take to be asked.
      await sleep(3 * 100);

      expect(started).toBeGreaterThan(0);
      expect(started).toBeLessThan(40);
      expect(double.peakInFlight).toBeLessThanOrEqual(4);
      expect(double.count('order') - asked).toBe(started);
      // Each check that started was cancelled (some before they reached the API); none ran to its end.
      expect(await metric(svc, 'reconciliation_checks_total', { result: 'cancelled' })).toBeGreaterThanOrEqual(started);
      expect(await metric(svc, 'reconciliation_checks_total', { result: 'repaired' })).toBe(1);
      // Every place is free again: the next check is admitted.
      double.clearFaults();
      await svc.admin.post(`/orders/${orders[1] as string}/reconcile`).expect(200);
    } finally {
      await svc.stop();
    }
  });

  it('When three clients reconcile one order at once, then one check asks the API and each gets its answer', async () => {
    const svc = await startReconciling();
    try {
      const orderId = uniqueId('SHARED');
      await svc.post(orderBody({ orderId, status: 'PENDING' })).expect(200);
      double.setOrder({ orderId, merchantPosId: POS_ID, status: 'COMPLETED', paymentId: '5' });
      double.injectFaults({ endpoint: 'order', delayMs: 500 });

      const answers = await Promise.all(
        [1, 2, 3].map(() => svc.admin.post(`/orders/${orderId}/reconcile`).expect(200)),
      );

      expect(answers.map((a) => (a.body as { result: string }).result)).toEqual(['repaired', 'repaired', 'repaired']);
      expect(double.count('order')).toBe(1);
      expect(await metric(svc, 'reconciliation_checks_total')).toBe(1);
    } finally {
      await svc.stop();
    }
  });

  it('When two replicas share a database, then exactly one reconciler is active', async () => {
    const database = testDatabase();
    const first = await startReconciling({ RECONCILE_INTERVAL: '100ms' }, database);
    const second = await startReconciling({ RECONCILE_INTERVAL: '100ms' }, database);
    try {
      await waitUntil(
        'a reconciler active',
        async () => first.service.reconciler?.isActive === true || second.service.reconciler?.isActive === true,
        30_000,
      );
      expect([first, second].filter((s) => s.service.reconciler?.isActive)).toHaveLength(1);

      const active = first.service.reconciler?.isActive ? first : second;
      const standby = active === first ? second : first;
      await active.service.stop();
      await waitUntil('the standby taking over', async () => standby.service.reconciler?.isActive === true, 30_000);
      await active.stop();
    } finally {
      await second.stop();
      await first.stop();
      await database.drop();
    }
  });
});
