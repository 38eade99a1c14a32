import pg from 'pg';
import { createDb, createPool, type Db } from '../../../src/database/pool';
import { createLogger } from '../../../src/observability/logger';
import { ordersObservedBetween, ordersObservedBetweenQuery } from '../../../src/reconciliation/scheduleQueries';
import { testDatabase, type TestDatabase } from '../../support/database';
import { tableReads } from '../../support/plans';
import { startTestService, type TestService } from '../../support/service';
import { OTHER_POS_ID, POS_ID } from '../../support/signing';

/**
 * The schedule's queries that the recovery after a failover reads directly (the reconciler's own are tested
 * through it, test/integration/reconciliation/reconciler.test.ts): what a window of time changed, over a year of history.
 */

let svc: TestService;
let database: TestDatabase;
let db: Db;
/** The window's start: an hour ago, so that nothing the test did not seed falls in it. */
const T0 = Date.now() - 3_600_000;
const at = (seconds: number): Date => new Date(T0 + seconds * 1000);

beforeAll(async () => {
  database = testDatabase();
  svc = await startTestService({ database, env: { RELAY_ENABLED: 'false' } });
  // The pool a caller of the recovery would use: no planner settings of its own (not the reconciler's).
  db = createDb(createPool({ url: database.url, poolMax: 1, timeoutMs: 5000 }, createLogger('silent')));
  const seeding = new pg.Client({ connectionString: database.url });
  await seeding.connect();
  try {
    // A year of history around the window: 200,000 orders final long ago, 20,000 refunds, 1,000 open ones since.
    await seeding.query(
      `INSERT INTO orders (order_id, merchant_pos_id, status, status_rank, total_amount, currency_code, updated_at)
       SELECT 'YEAR-' || i, $1, CASE WHEN i % 10 = 0 THEN 'CANCELED' ELSE 'COMPLETED' END, 4, 1000, 'PLN',
              now() - interval '2 hours' - i * interval '2 minutes'
         FROM generate_series(1, 200000) AS i
       UNION ALL
       SELECT 'LATER-' || i, $1, 'PENDING', 1, 1000, 'PLN', now() - interval '10 minutes' + i * interval '1 ms'
         FROM generate_series(1, 1000) AS i`,
      [POS_ID],
    );
    await seeding.query(
      `INSERT INTO refunds (refund_id, order_id, status, status_rank, amount, currency_code, updated_at)
       SELECT 'YEAR-R' || i, 'YEAR-' || i, 'FINALIZED', 2, 500, 'PLN', now() - interval '2 hours' - i * interval '20 minutes'
         FROM generate_series(1, 20000) AS i`,
    );
    // The window [T0, T0 + 7 s]: each kind of change once, an order changed twice, and one just outside each end.
    const orders: Array<[string, string, number]> = [
      ['OBS-BEFORE', 'COMPLETED', -1],
      ['OBS-OPEN', 'PENDING', 1],
      ['OBS-DONE', 'COMPLETED', 2],
      ['OBS-CANCELED', 'CANCELED', 3],
      ['OBS-AFTER', 'PENDING', 10],
    ];
    for (const [orderId, status, seconds] of orders)
      await seeding.query(
        `INSERT INTO orders (order_id, merchant_pos_id, status, status_rank, total_amount, currency_code, updated_at)
         VALUES ($1, $2, $3, 1, 1000, 'PLN', $4)`,
        [orderId, POS_ID, status, at(seconds)],
      );
    const refunds: Array<[string, string, string, number]> = [
      ['OBS-REFUND-ONLY', 'OBS-REFUND-ONLY-R', 'FINALIZED', 4],
      ['OBS-DONE', 'OBS-DONE-R', 'PENDING', 5],
      ['OBS-REFUND-CANCELED', 'OBS-REFUND-CANCELED-R', 'CANCELED', 6],
    ];
    for (const [orderId, refundId, status, seconds] of refunds)
      await seeding.query(
        `INSERT INTO refunds (refund_id, order_id, status, status_rank, amount, currency_code, updated_at)
         VALUES ($1, $2, $3, 1, 500, 'PLN', $4)`,
        [refundId, orderId, status, at(seconds)],
      );
    await seeding.query(
      `INSERT INTO order_owners (order_id, pos_id)
       VALUES ('OBS-OPEN', $1), ('OBS-DONE', $1), ('OBS-CANCELED', $1), ('OBS-REFUND-ONLY', $2)`,
      [POS_ID, OTHER_POS_ID],
    );
    await seeding.query('ANALYZE orders, refunds, order_owners');
  } finally {
    await seeding.end();
  }
}, 60_000);
afterAll(async () => {
  await db.destroy();
  await svc.stop();
  await database.drop();
});

describe('ordersObservedBetween', () => {
  it('When orders and refunds changed in a window, then each order is listed once, by its first change, final ones and refund-only ones included, with its POS', async () => {
    expect(await ordersObservedBetween(db, at(0), at(7), 100)).toEqual([
      { orderId: 'OBS-OPEN', posId: POS_ID },
      { orderId: 'OBS-DONE', posId: POS_ID },
      { orderId: 'OBS-CANCELED', posId: POS_ID },
      { orderId: 'OBS-REFUND-ONLY', posId: OTHER_POS_ID },
      { orderId: 'OBS-REFUND-CANCELED', posId: null },
    ]);
  });

  it('When the window holds more than the limit, then the orders of its first changes come, oldest first: fewer when one changed twice among them', async () => {
    expect((await ordersObservedBetween(db, at(0), at(7), 3)).map((o) => o.orderId)).toEqual([
      'OBS-OPEN',
      'OBS-DONE',
      'OBS-CANCELED',
    ]);
    // The first five changes: OBS-DONE's refund is the fifth, and OBS-DONE is listed already.
    expect((await ordersObservedBetween(db, at(0), at(7), 5)).map((o) => o.orderId)).toEqual([
      'OBS-OPEN',
      'OBS-DONE',
      'OBS-CANCELED',
      'OBS-REFUND-ONLY',
    ]);
    expect(await ordersObservedBetween(db, at(7.5), at(9), 100)).toEqual([]);
  });

  it('When a year of history surrounds the window, then it reads only the window, through the projections’ indexes by time', async () => {
    const reads = await tableReads(db, ordersObservedBetweenQuery(db, at(0), at(7), 3));
    const projections = reads.filter((r) => r.relation === 'orders' || r.relation === 'refunds');
    expect(projections.filter((r) => !r.node.startsWith('Index'))).toEqual([]);
    expect(projections.reduce((rows, r) => rows + r.rows, 0)).toBeLessThanOrEqual(3 + 4);
    // A whole window's worth, at a limit far above it: still only what the window holds.
    const wide = await tableReads(db, ordersObservedBetweenQuery(db, at(-0.5), at(7), 100_000));
    expect(
      wide.filter((r) => r.relation === 'orders' || r.relation === 'refunds').reduce((n, r) => n + r.rows, 0),
    ).toBeLessThanOrEqual(8);
  });
});
