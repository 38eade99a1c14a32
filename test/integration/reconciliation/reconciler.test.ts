import pg from 'pg';
import { Registry } from 'prom-client';
import { systemClock } from '../../../src/domain/clock';
import { createDb, createPool, type Db } from '../../../src/database/pool';
import { PooledTransactions } from '../../../src/database/transaction';
import { createLogger } from '../../../src/observability/logger';
import { createPaymentApiMetrics, createReconciliationMetrics } from '../../../src/observability/reconciliationMetrics';
import { Recorder } from '../../../src/recording/recorder';
import { createReconciliation } from '../../../src/reconciliation/reconciliation';
import type { Reconciler } from '../../../src/reconciliation/reconciler';
import { afterCheck, firstCheckAt, schedulePolicy } from '../../../src/reconciliation/schedule';
import {
  dueOrdersQuery,
  expectOrders,
  forceChecks,
  forcedCheckProgress,
  takeInObservationsQuery,
  uncoveredForcedChecks,
} from '../../../src/reconciliation/scheduleQueries';
import { PaymentServiceDouble, type DoubleClient } from '../../../src/simulator';
import { query } from '../../support/database';
import { tableReads } from '../../support/plans';
import { startTestService, type TestService } from '../../support/service';
import { orderBody, POS_ID, refundBody, uniqueId } from '../../support/signing';
import { waitUntil } from '../../support/wait';

/**
 * The reconciler's schedule against the database as it grows: one order the API keeps PENDING is asked on the
 * widening schedule and then given up (issue 31), a sweep reads what is due, whatever the given-up history
 * (issue 30), and what the projections cannot show comes in (issue 54): checks forced for a cause, whatever the
 * order's state here, and orders the shop said it created that no notification named. The service records the notifications (reconciliation off, so its own reconciler stays out); the
 * reconciler under test runs on a clock of the test's, so a minute of schedule takes a few seconds.
 */

const POS: DoubleClient = { posId: POS_ID, clientId: POS_ID, clientSecret: 'pos-secret-sched-8e2a41' };
const AFTER_MS = 1000;
const GIVE_UP_MS = 60_000;
const SECOND = 1000;

interface ClockedReconciler {
  reconciler: Reconciler;
  registry: Registry;
  db: Db;
  /** Moves the reconciler's clock to `at` and sweeps until nothing more is due then. */
  sweepAt(at: number): Promise<void>;
  close(): Promise<void>;
}

async function clockedReconciler(databaseUrl: string, apiUrl: string, start: number): Promise<ClockedReconciler> {
  const logger = createLogger('silent');
  const pool = createPool(
    { url: databaseUrl, poolMax: 2, timeoutMs: 5000, applicationName: 'test-reconciler', keyLookupsOnly: true },
    logger,
  );
  const db = createDb(pool);
  const store = new Recorder(
    new PooledTransactions(pool),
    { eventSource: 'urn:test', paymentServiceTimeZone: 'Europe/Warsaw' },
    { maxBatchSize: 64, lanes: 1, maxQueued: 1000, maxWaitMs: 5000, answerWithinMs: 10_000 },
    logger,
  );
  const registry = new Registry();
  let now = start;
  const reconciliation = createReconciliation(
    {
      paymentApiUrl: apiUrl,
      credentials: [POS],
      timeoutMs: 5000,
      maxInFlight: 4,
      maxPerSecond: 1000,
      afterMs: AFTER_MS,
      giveUpMs: GIVE_UP_MS,
      intervalMs: 3_600_000,
    },
    {
      db,
      store,
      metrics: { paymentApi: createPaymentApiMetrics(registry), reconciliation: createReconciliationMetrics(registry) },
      logger,
    },
  );
  // Swept by hand (sweepAt), never started: only its time is read.
  const reconciler = reconciliation.createReconciler(databaseUrl, { ...systemClock, now: () => now });
  return {
    reconciler,
    registry,
    db,
    async sweepAt(at) {
      now = at;
      while ((await reconciler.sweep()).checked >= 50);
    },
    close: () => db.destroy(),
  };
}

async function metric(registry: Registry, name: string): Promise<number> {
  const found = (await registry.getMetricsAsJSON()).find((m) => m.name === name);
  return (found?.values ?? []).reduce((sum, v) => sum + v.value, 0);
}

/** The check times the schedule gives an order observed at `observedAt` and checked as soon as due. */
function scheduledChecks(observedAt: number): number[] {
  const policy = schedulePolicy(AFTER_MS, GIVE_UP_MS);
  const times = [firstCheckAt(new Date(observedAt), policy).getTime()];
  for (;;) {
    const next = afterCheck(new Date(observedAt), times.length, new Date(times.at(-1) as number), policy);
    if (next.givenUp) return times;
    times.push(next.nextCheckAt.getTime());
  }
}

let double: PaymentServiceDouble;
let svc: TestService;

beforeEach(async () => {
  double = new PaymentServiceDouble({ clients: [POS] });
  await double.start();
  svc = await startTestService();
});
afterEach(async () => {
  await svc.stop();
  await double.stop();
});

describe('the reconciliation schedule', () => {
  it('When the API keeps an order PENDING, then over a minute it is asked on the widening schedule, given up, and asked again only after a new notification', async () => {
    const orderId = uniqueId('SCHED');
    await svc.post(orderBody({ orderId, status: 'PENDING' })).expect(200);
    double.setOrder({ orderId, merchantPosId: POS_ID, status: 'PENDING' });
    const [row] = await query<{ observed_at: Date }>(
      svc.database.url,
      'SELECT updated_at AS observed_at FROM orders WHERE order_id = $1',
      [orderId],
    );
    const observedAt = (row as { observed_at: Date }).observed_at.getTime();
    const clocked = await clockedReconciler(svc.database.url, double.url, observedAt);
    try {
      // Ninety seconds of schedule, swept every 100 ms: the time of each question the API gets.
      const asked: number[] = [];
      for (let at = observedAt; at <= observedAt + 90 * SECOND; at += 100) {
        const before = double.count('order');
        await clocked.sweepAt(at);
        for (let n = before; n < double.count('order'); n++) asked.push(at - observedAt);
      }

      const expected = scheduledChecks(observedAt).map((t) => t - observedAt);
      expect(asked).toHaveLength(expected.length);
      // Each question within one sweep (100 ms, plus the 1 ms the observation's microseconds may add) of its time.
      asked.forEach((t, i) => {
        expect(t).toBeGreaterThanOrEqual(expected[i] as number);
        expect(t - (expected[i] as number)).toBeLessThanOrEqual(101 * (i + 1));
      });
      expect(asked.at(-1)).toBeGreaterThanOrEqual(GIVE_UP_MS);
      expect(await metric(clocked.registry, 'reconciliation_given_up_total')).toBe(1);
      expect(await metric(clocked.registry, 'reconciliation_checks_total')).toBe(expected.length);

      // A new notification starts the schedule over: asked again RECONCILE_AFTER later.
      await svc.post(orderBody({ orderId, status: 'WAITING_FOR_CONFIRMATION', paymentId: '71' })).expect(200);
      double.setOrder({ orderId, merchantPosId: POS_ID, status: 'WAITING_FOR_CONFIRMATION', paymentId: '71' });
      const [renewed] = await query<{ observed_at: Date }>(
        svc.database.url,
        'SELECT updated_at AS observed_at FROM orders WHERE order_id = $1',
        [orderId],
      );
      const renewedAt = (renewed as { observed_at: Date }).observed_at.getTime();
      await clocked.sweepAt(renewedAt + AFTER_MS / 2);
      expect(double.count('order')).toBe(expected.length);
      await clocked.sweepAt(renewedAt + AFTER_MS + 1);
      expect(double.count('order')).toBe(expected.length + 1);
      const [schedule] = await query<{ attempts: number; given_up_at: Date | null }>(
        svc.database.url,
        'SELECT attempts, given_up_at FROM reconciliation_checks WHERE order_id = $1',
        [orderId],
      );
      expect(schedule).toEqual({ attempts: 1, given_up_at: null });

      // Once the order is final here, its row goes when next due, and nothing is asked about it again.
      await svc.post(orderBody({ orderId, status: 'COMPLETED', paymentId: '71' })).expect(200);
      await clocked.sweepAt(renewedAt + 3_600_000);
      expect(double.count('order')).toBe(expected.length + 1);
      expect(
        await query(svc.database.url, 'SELECT 1 FROM reconciliation_checks WHERE order_id = $1', [orderId]),
      ).toEqual([]);
    } finally {
      await clocked.close();
    }
  });

  it('When 200,000 abandoned orders were given up, then a sweep reads only what is due or newly observed, through indexes, and rows given up long ago are dropped', async () => {
    const due = [uniqueId('DUE'), uniqueId('DUE'), uniqueId('DUE')];
    for (const orderId of due) {
      await svc.post(orderBody({ orderId, status: 'PENDING' })).expect(200);
      double.setOrder({ orderId, merchantPosId: POS_ID, status: 'PENDING' });
    }
    // 200,000 abandoned checkouts: PENDING for a month, given up 20 days ago for half of them (long ago: to be
    // dropped) and just now for the other half.
    const seeding = new pg.Client({ connectionString: svc.database.url });
    await seeding.connect();
    try {
      await seeding.query(
        `INSERT INTO orders (order_id, merchant_pos_id, status, status_rank, total_amount, currency_code, updated_at)
         SELECT 'ABANDONED-' || i, $1, 'PENDING', 1, 1000, 'PLN', now() - interval '30 days'
           FROM generate_series(1, 200000) AS i`,
        [POS_ID],
      );
      await seeding.query(
        `INSERT INTO order_owners (order_id, pos_id) SELECT 'ABANDONED-' || i, $1 FROM generate_series(1, 200000) AS i`,
        [POS_ID],
      );
      await seeding.query(`
        INSERT INTO reconciliation_checks (order_id, observed_at, attempts, last_checked_at, last_result, given_up_at)
        SELECT 'ABANDONED-' || i, now() - interval '30 days', 20, g, 'unchanged', g
          FROM generate_series(1, 200000) AS i,
               LATERAL (SELECT now() - CASE WHEN i % 2 = 0 THEN interval '20 days' ELSE interval '0' END AS g) AS t`);
      // And the refunds of a year: 20,000 finalized.
      await seeding.query(
        `INSERT INTO refunds (refund_id, order_id, status, status_rank, amount, currency_code, updated_at)
         SELECT 'REFUND-' || i, 'REFUNDED-' || i, 'FINALIZED', 2, 500, 'PLN', now() - interval '60 days'
           FROM generate_series(1, 20000) AS i`,
      );
      // A year's leftovers of what the projections cannot show: orders the shop expected that no notification
      // ever named, taken in long ago, and forced checks answered; and orders expected for later.
      await seeding.query(
        `INSERT INTO expected_orders (order_id, pos_id, created_at, taken_at)
         SELECT 'EXPECTED-' || i, $1, now() - interval '3 days', now() - interval '3 days'
           FROM generate_series(1, 100000) AS i
         UNION ALL
         SELECT 'EXPECTED-LATER-' || i, $1, now() + interval '1 hour', NULL FROM generate_series(1, 1000) AS i`,
        [POS_ID],
      );
      await seeding.query(
        `INSERT INTO forced_checks (cause, order_id, requested_at, checked_at, result)
         SELECT 'failover:old', 'ABANDONED-' || i, now() - interval '1 day', now() - interval '1 day', 'unchanged'
           FROM generate_series(1, 100000) AS i`,
      );
      await seeding.query(
        'ANALYZE orders, refunds, order_owners, reconciliation_checks, expected_orders, forced_checks',
      );
    } finally {
      await seeding.end();
    }

    const now = Date.now() + 2 * AFTER_MS;
    const clocked = await clockedReconciler(svc.database.url, double.url, now);
    try {
      // What a sweep reads: the orders observed since the last round, then the due rows; each through an index.
      const read = [
        ...(await tableReads(clocked.db, takeInObservationsQuery(clocked.db, new Date(now), AFTER_MS))),
        ...(await tableReads(clocked.db, dueOrdersQuery(clocked.db, new Date(now), 50))),
      ];
      const history = read.filter(
        (r) =>
          ['orders', 'refunds', 'reconciliation_checks', 'expected_orders', 'forced_checks'].includes(r.relation) &&
          r.node.endsWith('Scan'),
      );
      expect(history.filter((r) => r.node === 'Seq Scan')).toEqual([]);
      expect(history.reduce((rows, r) => rows + r.rows, 0)).toBeLessThanOrEqual(3 * due.length);

      await clocked.sweepAt(now);

      // Only the due orders were asked about; the given-up ones, not at all.
      expect(double.count('order')).toBe(due.length);
      expect(await metric(clocked.registry, 'reconciliation_stuck_orders')).toBe(due.length);
      // The first housekeeping dropped 10,000 of the 100,000 given up more than RECONCILE_GIVE_UP ago; the next
      // ones, a minute apart, go on.
      expect(await metric(clocked.registry, 'reconciliation_given_up_orders')).toBe(200_000 - 10_000);
      // So did it 10,000 of the forced checks answered and of the expected orders created RECONCILE_GIVE_UP ago.
      const [kept] = await query<{ forced: string; expected: string }>(
        svc.database.url,
        `SELECT (SELECT count(*) FROM forced_checks) AS forced,
                (SELECT count(*) FROM expected_orders WHERE order_id NOT LIKE 'EXPECTED-LATER-%') AS expected`,
      );
      expect(kept).toEqual({ forced: String(100_000 - 10_000), expected: String(100_000 - 10_000) });
      await clocked.sweepAt(now + 60 * SECOND);
      const [left] = await query<{ n: string }>(
        svc.database.url,
        `SELECT count(*) AS n FROM reconciliation_checks WHERE given_up_at < now() - interval '7 days'`,
      );
      expect(Number(left?.n)).toBe(100_000 - 20_000);
      // The due ones were asked once more, on their schedule; a given-up one never.
      expect(double.count('order')).toBe(2 * due.length);
    } finally {
      await clocked.close();
    }
  }, 60_000);
});

const scheduleRows = (url: string, orderIds: string[]) =>
  query<{ order_id: string; attempts: number; next_check_at: Date | null }>(
    url,
    'SELECT order_id, attempts, next_check_at FROM reconciliation_checks WHERE order_id = ANY($1) ORDER BY order_id',
    [orderIds],
  );

const statusOf = async (url: string, table: 'orders' | 'refunds', id: string): Promise<string | undefined> =>
  (
    await query<{ status: string }>(
      url,
      `SELECT status FROM ${table} WHERE ${table === 'orders' ? 'order_id' : 'refund_id'} = $1`,
      [id],
    )
  )[0]?.status;

describe('what the projections cannot show', () => {
  it('When checks are forced for an order known only through a refund, a refund lost of an order final here and orders never seen, then each is checked once whatever its state, and forcedCheckProgress counts them', async () => {
    const refundOnly = uniqueId('FRCREF');
    const finalHere = uniqueId('FRCFIN');
    const openHere = uniqueId('FRCOPEN');
    const neverSeen = uniqueId('FRCNEW');
    const unknown = uniqueId('FRCUNK');
    const noPos = uniqueId('FRCNOPOS');
    // Known only through a FINALIZED refund: open neither by its status nor by a pending refund.
    await svc.post(refundBody({ orderId: refundOnly, refundId: `${refundOnly}R`, status: 'FINALIZED' })).expect(200);
    double.setOrder({ orderId: refundOnly, merchantPosId: POS_ID, status: 'COMPLETED', paymentId: '81' });
    double.setRefund(refundOnly, { refundId: `${refundOnly}R`, status: 'FINALIZED' });
    // COMPLETED here; the refund's notification is lost.
    await svc.post(orderBody({ orderId: finalHere, status: 'COMPLETED', paymentId: '82' })).expect(200);
    double.setOrder({ orderId: finalHere, merchantPosId: POS_ID, status: 'COMPLETED', paymentId: '82' });
    double.setRefund(finalHere, { refundId: `${finalHere}R`, status: 'FINALIZED' });
    // Open here and there: checked, then kept on the usual schedule.
    await svc.post(orderBody({ orderId: openHere, status: 'PENDING' })).expect(200);
    double.setOrder({ orderId: openHere, merchantPosId: POS_ID, status: 'PENDING' });
    // Never heard of here: asked with the POS given; one the API does not know either; one with no POS at all.
    double.setOrder({ orderId: neverSeen, merchantPosId: POS_ID, status: 'CANCELED' });

    const cause = `failover:${uniqueId('T')}`;
    const asked = [
      { orderId: refundOnly },
      { orderId: finalHere },
      { orderId: openHere },
      { orderId: neverSeen, posId: POS_ID },
      { orderId: unknown, posId: POS_ID },
      { orderId: noPos },
      { orderId: refundOnly, posId: POS_ID },
    ];
    const clocked = await clockedReconciler(svc.database.url, double.url, Date.now());
    try {
      expect(await forceChecks(clocked.db, asked, cause)).toBe(6);
      expect(await forcedCheckProgress(clocked.db, cause)).toEqual({ due: 6, answered: 0, uncovered: 0 });

      await clocked.sweepAt(Date.now() + SECOND);

      expect(double.count('order')).toBe(5);
      expect(await statusOf(svc.database.url, 'orders', refundOnly)).toBe('COMPLETED');
      expect(await statusOf(svc.database.url, 'refunds', `${finalHere}R`)).toBe('FINALIZED');
      expect(await statusOf(svc.database.url, 'orders', neverSeen)).toBe('CANCELED');
      expect(await forcedCheckProgress(clocked.db, cause)).toEqual({ due: 0, answered: 5, uncovered: 1 });
      expect(await uncoveredForcedChecks(clocked.db, cause, 10)).toEqual([{ orderId: noPos, result: 'no_pos' }]);
      // Only the order still open keeps its row, on the usual schedule: checked once, next in 2 * RECONCILE_AFTER.
      expect(
        (
          await scheduleRows(
            svc.database.url,
            asked.map((a) => a.orderId),
          )
        ).map((row) => [row.order_id, row.attempts]),
      ).toEqual([[openHere, 1]]);

      // The same orders forced again for the same cause: nothing added, nothing asked.
      expect(await forceChecks(clocked.db, asked, cause)).toBe(0);
      await clocked.sweepAt(Date.now() + SECOND);
      expect(double.count('order')).toBe(5);
      // Another cause asks again, once, whatever the state here.
      expect(await forceChecks(clocked.db, [{ orderId: finalHere }], `operator:${uniqueId('T')}`)).toBe(1);
      await clocked.sweepAt(Date.now() + SECOND);
      expect(double.count('order')).toBe(6);
      await expect(
        forceChecks(
          clocked.db,
          Array.from({ length: 10_001 }, (_, i) => ({ orderId: `X${i}` })),
          cause,
        ),
      ).rejects.toThrow(RangeError);
    } finally {
      await clocked.close();
    }
  });

  it('When the API does not answer a forced check, then it stays due and is asked again, and a check forced during a check makes it ask again', async () => {
    const orderId = uniqueId('FRCDOWN');
    await svc.post(orderBody({ orderId, status: 'COMPLETED', paymentId: '90' })).expect(200);
    double.setOrder({ orderId, merchantPosId: POS_ID, status: 'COMPLETED', paymentId: '90' });
    const cause = `failover:${uniqueId('T')}`;
    const clocked = await clockedReconciler(svc.database.url, double.url, Date.now());
    try {
      await forceChecks(clocked.db, [{ orderId }], cause);
      // Longer than the client waits for: unavailable at once.
      double.injectFaults({ endpoint: 'order', status: 429, retryAfter: '120' });
      await clocked.sweepAt(Date.now() + SECOND);
      expect(double.count('order')).toBe(1);
      expect(await forcedCheckProgress(clocked.db, cause)).toEqual({ due: 1, answered: 0, uncovered: 0 });
      expect(await scheduleRows(svc.database.url, [orderId])).toHaveLength(1);

      // A second cause arrives while the next check is under way: that check writes nothing, and one more comes.
      const during = `operator:${uniqueId('T')}`;
      double.injectFaults({ endpoint: 'order', delayMs: 300 });
      const sweeping = clocked.sweepAt(Date.now() + SECOND);
      await waitUntil('the check under way', async () => double.count('order') === 2);
      await forceChecks(clocked.db, [{ orderId }], during);
      await sweeping;
      expect(await forcedCheckProgress(clocked.db, cause)).toEqual({ due: 1, answered: 0, uncovered: 0 });
      await clocked.sweepAt(Date.now() + SECOND);
      expect(double.count('order')).toBe(3);
      expect(await forcedCheckProgress(clocked.db, cause)).toEqual({ due: 0, answered: 1, uncovered: 0 });
      expect(await forcedCheckProgress(clocked.db, during)).toEqual({ due: 0, answered: 1, uncovered: 0 });
      expect(await scheduleRows(svc.database.url, [orderId])).toEqual([]);
    } finally {
      await clocked.close();
    }
  });

  it('When a forced check stays unanswered RECONCILE_GIVE_UP, then it is given up, counted as not covered, and its row goes', async () => {
    const orderId = uniqueId('FRCGONE');
    await svc.post(orderBody({ orderId, status: 'CANCELED' })).expect(200);
    const cause = `failover:${uniqueId('T')}`;
    const clocked = await clockedReconciler(svc.database.url, double.url, Date.now());
    try {
      await forceChecks(clocked.db, [{ orderId }], cause);
      double.injectFaults({ endpoint: 'order', status: 429, retryAfter: '120', times: 2 });
      await clocked.sweepAt(Date.now() + SECOND);
      expect(await forcedCheckProgress(clocked.db, cause)).toEqual({ due: 1, answered: 0, uncovered: 0 });
      await clocked.sweepAt(Date.now() + GIVE_UP_MS + 2 * 60 * SECOND);
      expect(double.count('order')).toBe(2);
      expect(await forcedCheckProgress(clocked.db, cause)).toEqual({ due: 0, answered: 0, uncovered: 1 });
      expect(await uncoveredForcedChecks(clocked.db, cause, 10)).toEqual([{ orderId, result: 'given_up' }]);
      // Final here and no longer forced: its row goes unasked.
      await clocked.sweepAt(Date.now() + GIVE_UP_MS + 3 * 60 * SECOND);
      expect(double.count('order')).toBe(2);
      expect(await scheduleRows(svc.database.url, [orderId])).toEqual([]);
    } finally {
      await clocked.close();
    }
  });

  it('When the shop expected orders, then one never heard of is checked with its POS once RECONCILE_AFTER has passed since its creation, and one heard of is never asked', async () => {
    const lost = uniqueId('EXPLOST');
    const heard = uniqueId('EXPHEARD');
    const fresh = uniqueId('EXPFRESH');
    const now = Date.now();
    await svc.post(orderBody({ orderId: heard, status: 'COMPLETED', paymentId: '92' })).expect(200);
    double.setOrder({ orderId: lost, merchantPosId: POS_ID, status: 'COMPLETED', paymentId: '91' });
    const clocked = await clockedReconciler(svc.database.url, double.url, now);
    try {
      const entries = [
        { orderId: lost, posId: POS_ID, createdAt: new Date(now - 3 * AFTER_MS) },
        { orderId: heard, posId: POS_ID, createdAt: new Date(now - 3 * AFTER_MS) },
        { orderId: fresh, posId: POS_ID, createdAt: new Date(now + 10 * AFTER_MS) },
      ];
      expect(await expectOrders(clocked.db, entries)).toBe(3);
      expect(await expectOrders(clocked.db, entries)).toBe(0);

      await clocked.sweepAt(now);

      // Only the one never heard of was asked, with its POS; what the API said is recorded, and it is heard of now.
      expect(double.requests.filter((q) => q.endpoint === 'order').map((q) => [q.path, q.tokenPosId])).toEqual([
        [`/api/v2_1/orders/${lost}`, POS_ID],
      ]);
      expect(await statusOf(svc.database.url, 'orders', lost)).toBe('COMPLETED');
      expect(await scheduleRows(svc.database.url, [lost, heard, fresh])).toEqual([]);
      // The one heard of went at its take-in; the one checked, at the housekeeping after it (heard of by then).
      expect(
        await query(svc.database.url, 'SELECT order_id, taken_at FROM expected_orders WHERE order_id = ANY($1)', [
          [lost, heard, fresh],
        ]),
      ).toEqual([{ order_id: fresh, taken_at: null }]);

      // The fresh one, RECONCILE_AFTER after its creation: the API does not know it yet; asked again on the schedule.
      await clocked.sweepAt(now + 11 * AFTER_MS);
      expect(double.count('order')).toBe(2);
      expect(await scheduleRows(svc.database.url, [fresh])).toEqual([
        expect.objectContaining({ order_id: fresh, attempts: 1 }),
      ]);
    } finally {
      await clocked.close();
    }
  });
});
