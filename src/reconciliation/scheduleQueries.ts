import { sql } from 'kysely';
import type { Db } from '../database/pool';

/**
 * The reconciler's reads and writes of the schedule (sql/005), on its own pool. An order is open while its
 * status is not final or one of its refunds is not; its last observation is the last change of the order
 * or of one of its refunds.
 */

/** An open order past RECONCILE_AFTER, with its place in the schedule. */
export interface OpenOrder {
  orderId: string;
  posId: string;
  /** Its last observation. */
  observedAt: Date;
  /** Checks since that observation. */
  checks: number;
  nextCheckAt: Date | null;
  givenUp: boolean;
}

interface OpenOrderRow {
  order_id: string;
  pos_id: string;
  observed_at: Date;
  checks: number;
  next_check_at: Date | null;
  given_up: boolean;
}

/**
 * Open orders whose last observation is older than `afterMs`, each with its place in the schedule, counted
 * only when it is about that observation (a newer one starts the schedule over): the CTE `placed`.
 */
const placed = (now: Date, afterMs: number) => sql`
    open AS (
      SELECT order_id FROM orders WHERE status NOT IN ('COMPLETED', 'CANCELED')
      UNION
      SELECT order_id FROM refunds WHERE status = 'PENDING'
    ), observed AS (
      SELECT open.order_id, w.pos_id,
             greatest((SELECT o.updated_at FROM orders o WHERE o.order_id = open.order_id),
                      (SELECT max(r.updated_at) FROM refunds r WHERE r.order_id = open.order_id)) AS observed_at
        FROM open JOIN order_owners w ON w.order_id = open.order_id
    ), placed AS (
      SELECT b.order_id, b.pos_id, b.observed_at,
             CASE WHEN s.observed_at = b.observed_at THEN s.attempts ELSE 0 END AS checks,
             CASE WHEN s.observed_at = b.observed_at THEN s.next_check_at
                  ELSE b.observed_at + ${afterMs}::int * interval '1 millisecond' END AS next_check_at,
             (s.observed_at = b.observed_at AND s.given_up_at IS NOT NULL) IS TRUE AS given_up
        FROM observed b LEFT JOIN reconciliation_checks s ON s.order_id = b.order_id
       WHERE b.observed_at <= ${now}::timestamptz - ${afterMs}::int * interval '1 millisecond'
    )`;

async function openOrders(db: Db, now: Date, afterMs: number, due: boolean, limit: number): Promise<OpenOrder[]> {
  const { rows } = await sql<OpenOrderRow>`
    WITH ${placed(now, afterMs)}
    SELECT * FROM placed
     WHERE NOT ${due}::boolean OR (NOT given_up AND next_check_at <= ${now}::timestamptz)
     ORDER BY next_check_at, order_id
     LIMIT ${limit}::int`.execute(db);
  return rows.map((r) => ({
    orderId: r.order_id,
    posId: r.pos_id,
    observedAt: r.observed_at,
    checks: Number(r.checks),
    nextCheckAt: r.next_check_at,
    givenUp: r.given_up,
  }));
}

/** The orders due for a check now, soonest first. */
export const dueOrders = (db: Db, now: Date, afterMs: number, limit: number): Promise<OpenOrder[]> =>
  openOrders(db, now, afterMs, true, limit);

/** Every open order past RECONCILE_AFTER, given up ones included (`reconcile --stuck`). */
export const stuckOrders = (db: Db, now: Date, afterMs: number, limit = 100_000): Promise<OpenOrder[]> =>
  openOrders(db, now, afterMs, false, limit);

/** Open orders past RECONCILE_AFTER still being checked, and those given up: the reconciler's gauges. */
export async function countOpenOrders(db: Db, now: Date, afterMs: number): Promise<{ stuck: number; givenUp: number }> {
  const { rows } = await sql<{ stuck: string; given_up: string }>`
    WITH ${placed(now, afterMs)}
    SELECT count(*) FILTER (WHERE NOT given_up) AS stuck, count(*) FILTER (WHERE given_up) AS given_up
      FROM placed`.execute(db);
  return { stuck: Number(rows[0]?.stuck ?? 0), givenUp: Number(rows[0]?.given_up ?? 0) };
}

/** A check's place in the schedule: the observation it was about, and what comes next. */
export interface CheckRecord {
  orderId: string;
  observedAt: Date;
  checks: number;
  checkedAt: Date;
  nextCheckAt: Date | null;
  result: string;
  givenUp: boolean;
}

export async function recordCheck(db: Db, c: CheckRecord): Promise<void> {
  await db
    .insertInto('reconciliation_checks')
    .values({
      order_id: c.orderId,
      observed_at: c.observedAt,
      attempts: c.checks,
      next_check_at: c.nextCheckAt,
      last_checked_at: c.checkedAt,
      last_result: c.result,
      given_up_at: c.givenUp ? c.checkedAt : null,
    })
    .onConflict((oc) =>
      oc.column('order_id').doUpdateSet((eb) => ({
        observed_at: eb.ref('excluded.observed_at'),
        attempts: eb.ref('excluded.attempts'),
        next_check_at: eb.ref('excluded.next_check_at'),
        last_checked_at: eb.ref('excluded.last_checked_at'),
        last_result: eb.ref('excluded.last_result'),
        given_up_at: eb.ref('excluded.given_up_at'),
      })),
    )
    .execute();
}

/** The POS an order belongs to, when anything was recorded for it. */
export async function ownerOf(db: Db, orderId: string): Promise<string | undefined> {
  const row = await db.selectFrom('order_owners').select('pos_id').where('order_id', '=', orderId).executeTakeFirst();
  return row?.pos_id;
}
