import { sql, type RawBuilder } from 'kysely';
import type { Db } from '../database/pool';
import { meaningKey } from '../recording/batch';

/**
 * The reconciler's reads and writes of its schedule (reconciliation_checks, sql/006), on its own pool. A row
 * holds an open order's place: the observation it is about (the last change of the order, or of a pending
 * refund of it), the checks since, the next one, or that it was given up. Nothing is derived again on a sweep,
 * and every query reads a range of an index: what is due, or what changed lately. Observation times are only
 * ever compared in SQL (a JavaScript Date would cut their microseconds).
 */

/** An open order in the schedule, and its place in it. */
export interface ScheduledOrder {
  orderId: string;
  /** The POS it belongs to; null when nothing bound it (no check can be asked for). */
  posId: string | null;
  /** Its observation (to the millisecond: only the give-up time is computed from it). */
  observedAt: Date;
  /** Which observation the row is about (a bigint, as text): a check's outcome is written against it. */
  observation: string;
  /** Checks since that observation. */
  checks: number;
  /** Null once given up. */
  nextCheckAt: Date | null;
  givenUp: boolean;
  /** Whether the order, or a refund of it, is still open here (false: a notification closed it since). */
  open: boolean;
}

/** A row of the schedule with its order's POS and whether it is still open, as the queries read it. */
export interface ScheduleRow {
  order_id: string;
  pos_id: string | null;
  observed_at: Date;
  observation: string;
  attempts: number;
  next_check_at: Date | null;
  given_up_at: Date | null;
  open: boolean;
}

const scheduled = (r: ScheduleRow): ScheduledOrder => ({
  orderId: r.order_id,
  posId: r.pos_id,
  observedAt: r.observed_at,
  observation: r.observation,
  checks: Number(r.attempts),
  nextCheckAt: r.next_check_at,
  givenUp: r.given_up_at !== null,
  open: r.open,
});

const milliseconds = (ms: number) => sql`${ms}::int * interval '1 millisecond'`;

/** Whether the order, or a refund of it, is still open here, as SQL over the order id given. */
const stillOpen = (orderId: RawBuilder<unknown>) => sql`(
  EXISTS (SELECT 1 FROM orders o WHERE o.order_id = ${orderId} AND o.status NOT IN ('COMPLETED', 'CANCELED'))
  OR EXISTS (SELECT 1 FROM refunds r WHERE r.order_id = ${orderId} AND r.status = 'PENDING'))`;

/**
 * Recording transactions still running when a round looks are caught by the next one, which looks this much
 * further back than the last: longer than a recording transaction can last (its statements time out at
 * DATABASE_TIMEOUT, 60 s at most; idle in a transaction, at four times that).
 */
export const OBSERVATION_MARGIN_MS = 10 * 60_000;

/**
 * Takes new observations in: every open order (or pending refund) changed since the last round (and the margin
 * before it) and at least RECONCILE_AFTER ago, whose row is about an older observation or missing, gets its row
 * at that observation, due at once, its checks counted from zero. Reads orders_open and refunds_pending by time:
 * the last minutes of intake, never the history. Answers how many rows it started over.
 */
export const takeInObservationsQuery = (now: Date, afterMs: number): RawBuilder<{ taken: string }> => sql`
    WITH progress AS (
      SELECT observed_through - ${milliseconds(OBSERVATION_MARGIN_MS)} AS since,
             ${now}::timestamptz - ${milliseconds(afterMs)} AS until
        FROM reconciliation_progress
    ), changed AS (
      SELECT order_id, updated_at FROM orders
       WHERE status NOT IN ('COMPLETED', 'CANCELED')
         AND updated_at > (SELECT since FROM progress) AND updated_at <= (SELECT until FROM progress)
      UNION ALL
      SELECT order_id, updated_at FROM refunds
       WHERE status = 'PENDING'
         AND updated_at > (SELECT since FROM progress) AND updated_at <= (SELECT until FROM progress)
    ), latest AS (
      SELECT order_id, max(updated_at) AS observed_at FROM changed GROUP BY order_id
    ), taken AS (
      INSERT INTO reconciliation_checks AS c (order_id, observed_at, next_check_at)
      SELECT l.order_id, l.observed_at, l.observed_at + ${milliseconds(afterMs)}
        FROM latest l
       WHERE NOT EXISTS (SELECT 1 FROM reconciliation_checks k
                          WHERE k.order_id = l.order_id AND k.observed_at >= l.observed_at)
      ON CONFLICT (order_id) DO UPDATE
         SET observed_at = excluded.observed_at, observation = c.observation + 1, attempts = 0,
             next_check_at = excluded.next_check_at, last_checked_at = NULL, last_result = NULL, given_up_at = NULL
      RETURNING 1
    ), advanced AS (
      UPDATE reconciliation_progress SET observed_through = greatest(observed_through, (SELECT until FROM progress))
    )
    SELECT count(*) AS taken FROM taken`;

export async function takeInObservations(db: Db, now: Date, afterMs: number): Promise<number> {
  const { rows } = await takeInObservationsQuery(now, afterMs).execute(db);
  return Number(rows[0]?.taken ?? 0);
}

/**
 * The orders due for a check now, soonest first, through reconciliation_checks_next (a given-up row is not in
 * it), each with its POS and whether it is still open here.
 */
export const dueOrdersQuery = (now: Date, limit: number): RawBuilder<ScheduleRow> => sql<ScheduleRow>`
    SELECT c.order_id, w.pos_id, c.observed_at, c.observation::text, c.attempts, c.next_check_at, c.given_up_at,
           ${stillOpen(sql`c.order_id`)} AS open
      FROM reconciliation_checks c LEFT JOIN order_owners w ON w.order_id = c.order_id
     WHERE c.next_check_at <= ${now}::timestamptz
     ORDER BY c.next_check_at, c.order_id
     LIMIT ${limit}::int`;

export async function dueOrders(db: Db, now: Date, limit: number): Promise<ScheduledOrder[]> {
  return (await dueOrdersQuery(now, limit).execute(db)).rows.map(scheduled);
}

/**
 * Every open order observed RECONCILE_AFTER ago or more, given-up ones included (`reconcile --stuck`): read
 * from the projections, so it also lists what no reconciler has taken in.
 */
export async function stuckOrders(db: Db, now: Date, afterMs: number, limit = 100_000): Promise<string[]> {
  const { rows } = await sql<{ order_id: string }>`
    WITH open AS (
      SELECT order_id, updated_at FROM orders WHERE status NOT IN ('COMPLETED', 'CANCELED')
      UNION ALL
      SELECT order_id, updated_at FROM refunds WHERE status = 'PENDING'
    )
    SELECT order_id FROM open
     GROUP BY order_id
    HAVING max(updated_at) <= ${now}::timestamptz - ${milliseconds(afterMs)}
     ORDER BY max(updated_at), order_id
     LIMIT ${limit}::int`.execute(db);
  return rows.map((r) => r.order_id);
}

/** The schedule's gauges: rows still checked, and rows given up. Counts of its partial indexes. */
export async function countOpenOrders(db: Db): Promise<{ stuck: number; givenUp: number }> {
  const { rows } = await sql<{ stuck: string; given_up: string }>`
    SELECT (SELECT count(*) FROM reconciliation_checks WHERE next_check_at IS NOT NULL) AS stuck,
           (SELECT count(*) FROM reconciliation_checks WHERE given_up_at IS NOT NULL) AS given_up`.execute(db);
  return { stuck: Number(rows[0]?.stuck ?? 0), givenUp: Number(rows[0]?.given_up ?? 0) };
}

/** A check's outcome: the observation it was about, and what comes next. */
export interface CheckOutcome {
  orderId: string;
  observation: string;
  checks: number;
  checkedAt: Date;
  /** Null when given up. */
  nextCheckAt: Date | null;
  result: string;
  givenUp: boolean;
}

/** Writes a check's outcome, unless a newer observation replaced the one it was about. Answers whether it did. */
export async function recordCheck(db: Db, c: CheckOutcome): Promise<boolean> {
  const result = await db
    .updateTable('reconciliation_checks')
    .set({
      attempts: c.checks,
      next_check_at: c.givenUp ? null : c.nextCheckAt,
      last_checked_at: c.checkedAt,
      last_result: c.result,
      given_up_at: c.givenUp ? c.checkedAt : null,
    })
    .where('order_id', '=', c.orderId)
    .where('observation', '=', c.observation)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/**
 * Drops an order's row while it is about this observation: the order is final here now (with no refund
 * pending), or nothing bound it to a POS (none may ask about it).
 */
export async function forgetOrder(db: Db, orderId: string, observation: string): Promise<void> {
  await db
    .deleteFrom('reconciliation_checks')
    .where('order_id', '=', orderId)
    .where('observation', '=', observation)
    .execute();
}

/** Drops an order's row, about this observation, when nothing of the order is open here any more (its repair). */
export async function forgetIfClosed(db: Db, orderId: string, observation: string): Promise<void> {
  await sql`
    DELETE FROM reconciliation_checks c
     WHERE c.order_id = ${orderId} AND c.observation = ${observation}::bigint
       AND NOT ${stillOpen(sql`c.order_id`)}`.execute(db);
}

/**
 * Looks at up to `limit` rows after `after` (in order_id order, a cursor that goes round the table) and drops
 * those of orders final here now (a notification closed them since): rows, and the gauges they feed, stay those
 * of open orders. Answers where to go on from ('' once round), and how many went.
 */
export async function pruneClosed(db: Db, after: string, limit: number): Promise<{ next: string; pruned: number }> {
  const { rows } = await sql<{ last: string | null; seen: string; pruned: string }>`
    WITH batch AS (
      SELECT order_id, observation FROM reconciliation_checks WHERE order_id > ${after} ORDER BY order_id
       LIMIT ${limit}::int
    ), pruned AS (
      DELETE FROM reconciliation_checks c USING batch b
       WHERE c.order_id = b.order_id AND c.observation = b.observation AND NOT ${stillOpen(sql`b.order_id`)}
      RETURNING 1
    )
    SELECT (SELECT max(order_id) FROM batch) AS last, (SELECT count(*) FROM batch) AS seen,
           (SELECT count(*) FROM pruned) AS pruned`.execute(db);
  const row = rows[0];
  const seen = Number(row?.seen ?? 0);
  return { next: seen < limit ? '' : (row?.last ?? ''), pruned: Number(row?.pruned ?? 0) };
}

/**
 * Drops up to `limit` rows given up before `before` (through reconciliation_checks_given_up): the table holds
 * the open orders, not their history. A newer observation brings an order back. Answers how many went.
 */
export async function forgetGivenUp(db: Db, before: Date, limit: number): Promise<number> {
  const { rows } = await sql<{ forgotten: string }>`
    WITH gone AS (
      DELETE FROM reconciliation_checks
       WHERE order_id IN (SELECT order_id FROM reconciliation_checks
                           WHERE given_up_at < ${before}::timestamptz
                           ORDER BY given_up_at
                           LIMIT ${limit}::int)
         AND given_up_at < ${before}::timestamptz
      RETURNING 1
    )
    SELECT count(*) AS forgotten FROM gone`.execute(db);
  return Number(rows[0]?.forgotten ?? 0);
}

/**
 * What is recorded for an order and its refunds, as meaning keys: a check records only what is new. Read from the
 * projections, which keep each status recorded (sql/007) whatever the history's age.
 */
export async function recordedMeanings(db: Db, orderId: string): Promise<Set<string>> {
  const [order, refunds] = await Promise.all([
    db.selectFrom('orders').select('recorded').where('order_id', '=', orderId).executeTakeFirst(),
    db.selectFrom('refunds').select(['refund_id', 'recorded']).where('order_id', '=', orderId).execute(),
  ]);
  return new Set([
    ...Object.keys(order?.recorded ?? {}).map((status) => meaningKey('order', orderId, status)),
    ...refunds.flatMap((r) => Object.keys(r.recorded).map((status) => meaningKey('refund', r.refund_id, status))),
  ]);
}

/** The POS an order belongs to, when anything was recorded for it. */
export async function ownerOf(db: Db, orderId: string): Promise<string | undefined> {
  const row = await db.selectFrom('order_owners').select('pos_id').where('order_id', '=', orderId).executeTakeFirst();
  return row?.pos_id;
}
