import pg from 'pg';
import { Registry } from 'prom-client';
import { createDb, createPool, type Db } from '../../src/database/pool';
import { PooledTransactions } from '../../src/database/transaction';
import { createLogger } from '../../src/observability/logger';
import { createPaymentApiMetrics, createReconciliationMetrics } from '../../src/observability/reconciliationMetrics';
import { GroupCommitStore } from '../../src/recording/groupCommit';
import { createReconciliation } from '../../src/reconciliation/reconciliation';
import type { Reconciler } from '../../src/reconciliation/reconciler';
import { afterCheck, firstCheckAt, schedulePolicy } from '../../src/reconciliation/schedule';
import { dueOrdersQuery, takeInObservationsQuery } from '../../src/reconciliation/scheduleQueries';
import { PaymentServiceDouble, type DoubleClient } from '../../src/simulator';
import { query } from '../support/database';
import { startTestService, type TestService } from '../support/service';
import { orderBody, POS_ID, uniqueId } from '../support/signing';

/**
 * The reconciler's schedule against the database as it grows: one order the API keeps PENDING is asked on the
 * widening schedule and then given up (issue 31), and a sweep reads what is due, whatever the given-up history
 * (issue 30). The service records the notifications (reconciliation off, so its own reconciler stays out); the
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
  const store = new GroupCommitStore(
    new PooledTransactions(pool),
    { eventSource: 'urn:test' },
    { maxBatchSize: 64, lanes: 1, maxQueued: 1000, maxWaitMs: 5000, answerWithinMs: 10_000 },
    logger,
  );
  const registry = new Registry();
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
  let now = start;
  const reconciler = reconciliation.createReconciler(databaseUrl, () => new Date(now));
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
      await seeding.query('ANALYZE orders, order_owners, reconciliation_checks');
    } finally {
      await seeding.end();
    }

    const now = Date.now() + 2 * AFTER_MS;
    const clocked = await clockedReconciler(svc.database.url, double.url, now);
    try {
      // What a sweep reads: the orders observed since the last round, then the due rows; each through an index.
      const read: Array<{ relation: string; node: string; rows: number }> = [];
      for (const step of [
        takeInObservationsQuery(clocked.db, new Date(now), AFTER_MS),
        dueOrdersQuery(clocked.db, new Date(now), 50),
      ]) {
        const compiled = step.compile();
        const [explained] = await query<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(
          svc.database.url,
          `EXPLAIN (ANALYZE, FORMAT JSON) ${compiled.sql}`,
          [...compiled.parameters],
        );
        for (const n of planNodes(explained?.['QUERY PLAN'][0]?.Plan))
          if (n['Relation Name'] !== undefined)
            read.push({
              relation: n['Relation Name'],
              node: n['Node Type'],
              rows: n['Actual Rows'] * n['Actual Loops'],
            });
      }
      const history = read.filter(
        (r) => ['orders', 'refunds', 'reconciliation_checks'].includes(r.relation) && r.node.endsWith('Scan'),
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

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Actual Rows': number;
  'Actual Loops': number;
  Plans?: PlanNode[];
}
function planNodes(node: PlanNode | undefined): PlanNode[] {
  if (!node) return [];
  return [node, ...(node.Plans ?? []).flatMap(planNodes)];
}
