import { sql, type Compilable, type CompiledQuery, type RawBuilder } from 'kysely';
import { columnsOf, tableOf, type ColumnRef } from '../database/columns';
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

const checks = tableOf('reconciliation_checks');
const orders = tableOf('orders');
const refunds = tableOf('refunds');
/** reconciliation_checks unqualified (an INSERT's or an UPDATE's own columns), and in the roles `c`, `k`, `excluded`. */
const col = columnsOf('reconciliation_checks');
const c = columnsOf('reconciliation_checks', 'c');
const k = columnsOf('reconciliation_checks', 'k');
const excluded = columnsOf('reconciliation_checks', 'excluded');
const through = columnsOf('reconciliation_progress');
const o = columnsOf('orders', 'o');
const r = columnsOf('refunds', 'r');

/** The statuses after which nothing more is learned of an order, or of a refund (spec, "Statuses"). */
const FINAL_ORDER = sql`('COMPLETED', 'CANCELED')`;
const OPEN_REFUND = sql`'PENDING'`;

/** A `sql` template as a query to compile (and to EXPLAIN, in tests) like a built one. */
const compilable = <Row>(db: Db, query: RawBuilder<Row>): Compilable<Row> => ({
  compile: (): CompiledQuery<Row> => query.compile(db),
});

const milliseconds = (ms: number) => sql`${ms}::int * interval '1 millisecond'`;

/** Whether the order, or a refund of it, is still open here, as SQL over the order id given. */
const stillOpen = (orderId: ColumnRef) => sql<boolean>`(
  EXISTS (SELECT 1 FROM ${orders} o WHERE ${o('order_id')} = ${orderId} AND ${o('status')} NOT IN ${FINAL_ORDER})
  OR EXISTS (SELECT 1 FROM ${refunds} r WHERE ${r('order_id')} = ${orderId} AND ${r('status')} = ${OPEN_REFUND}))`;

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
export const takeInObservationsQuery = (db: Db, now: Date, afterMs: number): Compilable<{ taken: string }> =>
  compilable(
    db,
    sql<{ taken: string }>`
    WITH progress AS (
      SELECT ${through('observed_through')} - ${milliseconds(OBSERVATION_MARGIN_MS)} AS since,
             ${now}::timestamptz - ${milliseconds(afterMs)} AS until
        FROM ${tableOf('reconciliation_progress')}
    ), changed (changed_order, changed_at) AS (
      SELECT ${o('order_id')}, ${o('updated_at')} FROM ${orders} o
       WHERE ${o('status')} NOT IN ${FINAL_ORDER}
         AND ${o('updated_at')} > (SELECT since FROM progress) AND ${o('updated_at')} <= (SELECT until FROM progress)
      UNION ALL
      SELECT ${r('order_id')}, ${r('updated_at')} FROM ${refunds} r
       WHERE ${r('status')} = ${OPEN_REFUND}
         AND ${r('updated_at')} > (SELECT since FROM progress) AND ${r('updated_at')} <= (SELECT until FROM progress)
    ), latest (latest_order, latest_at) AS (
      SELECT changed_order, max(changed_at) FROM changed GROUP BY changed_order
    ), taken AS (
      INSERT INTO ${checks} AS c (${col('order_id')}, ${col('observed_at')}, ${col('next_check_at')})
      SELECT latest_order, latest_at, latest_at + ${milliseconds(afterMs)}
        FROM latest
       WHERE NOT EXISTS (SELECT 1 FROM ${checks} k
                          WHERE ${k('order_id')} = latest_order AND ${k('observed_at')} >= latest_at)
      ON CONFLICT (${col('order_id')}) DO UPDATE
         SET ${col('observed_at')} = ${excluded('observed_at')}, ${col('observation')} = ${c('observation')} + 1,
             ${col('attempts')} = 0, ${col('next_check_at')} = ${excluded('next_check_at')},
             ${col('last_checked_at')} = NULL, ${col('last_result')} = NULL, ${col('given_up_at')} = NULL
      RETURNING 1
    ), advanced AS (
      UPDATE ${tableOf('reconciliation_progress')}
         SET ${through('observed_through')} = greatest(${through('observed_through')}, (SELECT until FROM progress))
    )
    SELECT count(*) AS taken FROM taken`,
  );

export async function takeInObservations(db: Db, now: Date, afterMs: number): Promise<number> {
  const { rows } = await db.executeQuery(takeInObservationsQuery(db, now, afterMs).compile());
  return Number(rows[0]?.taken ?? 0);
}

/**
 * The orders due for a check now, soonest first, through reconciliation_checks_next (a given-up row is not in
 * it), each with its POS and whether it is still open here.
 */
export const dueOrdersQuery = (db: Db, now: Date, limit: number) =>
  db
    .selectFrom('reconciliation_checks as c')
    .leftJoin('order_owners as w', 'w.order_id', 'c.order_id')
    .select(['c.order_id', 'w.pos_id', 'c.observed_at', 'c.observation', 'c.attempts', 'c.next_check_at'])
    .select(['c.given_up_at', stillOpen(c('order_id')).as('open')])
    .where('c.next_check_at', '<=', now)
    .orderBy('c.next_check_at')
    .orderBy('c.order_id')
    .limit(limit);

export async function dueOrders(db: Db, now: Date, limit: number): Promise<ScheduledOrder[]> {
  return (await dueOrdersQuery(db, now, limit).execute()).map((row) => ({
    orderId: row.order_id,
    posId: row.pos_id,
    observedAt: row.observed_at,
    observation: row.observation,
    checks: Number(row.attempts),
    nextCheckAt: row.next_check_at,
    givenUp: row.given_up_at !== null,
    open: row.open,
  }));
}

/**
 * Every open order observed RECONCILE_AFTER ago or more, given-up ones included (`reconcile --stuck`): read
 * from the projections, so it also lists what no reconciler has taken in.
 */
export async function stuckOrders(db: Db, now: Date, afterMs: number, limit = 100_000): Promise<string[]> {
  const { rows } = await sql<{ open_order: string }>`
    WITH open (open_order, open_at) AS (
      SELECT ${o('order_id')}, ${o('updated_at')} FROM ${orders} o WHERE ${o('status')} NOT IN ${FINAL_ORDER}
      UNION ALL
      SELECT ${r('order_id')}, ${r('updated_at')} FROM ${refunds} r WHERE ${r('status')} = ${OPEN_REFUND}
    )
    SELECT open_order FROM open
     GROUP BY open_order
    HAVING max(open_at) <= ${now}::timestamptz - ${milliseconds(afterMs)}
     ORDER BY max(open_at), open_order
     LIMIT ${limit}::int`.execute(db);
  return rows.map((row) => row.open_order);
}

/** The schedule's gauges: rows still checked, and rows given up. Counts of its partial indexes. */
export async function countOpenOrders(db: Db): Promise<{ stuck: number; givenUp: number }> {
  const { rows } = await sql<{ stuck: string; given_up: string }>`
    SELECT (SELECT count(*) FROM ${checks} WHERE ${col('next_check_at')} IS NOT NULL) AS stuck,
           (SELECT count(*) FROM ${checks} WHERE ${col('given_up_at')} IS NOT NULL) AS given_up`.execute(db);
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
    DELETE FROM ${checks} c
     WHERE ${c('order_id')} = ${orderId} AND ${c('observation')} = ${observation}::bigint
       AND NOT ${stillOpen(c('order_id'))}`.execute(db);
}

/**
 * Looks at up to `limit` rows after `after` (in order_id order, a cursor that goes round the table) and drops
 * those of orders final here now (a notification closed them since): rows, and the gauges they feed, stay those
 * of open orders. Answers where to go on from ('' once round), and how many went.
 */
export async function pruneClosed(db: Db, after: string, limit: number): Promise<{ next: string; pruned: number }> {
  const { rows } = await sql<{ last: string | null; seen: string; pruned: string }>`
    WITH batch (batch_order, batch_observation) AS (
      SELECT ${col('order_id')}, ${col('observation')} FROM ${checks} WHERE ${col('order_id')} > ${after}
       ORDER BY ${col('order_id')} LIMIT ${limit}::int
    ), pruned AS (
      DELETE FROM ${checks} c USING batch
       WHERE ${c('order_id')} = batch_order AND ${c('observation')} = batch_observation
         AND NOT ${stillOpen(sql`batch_order`)}
      RETURNING 1
    )
    SELECT (SELECT max(batch_order) FROM batch) AS last, (SELECT count(*) FROM batch) AS seen,
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
      DELETE FROM ${checks}
       WHERE ${col('order_id')} IN (SELECT ${col('order_id')} FROM ${checks}
                                     WHERE ${col('given_up_at')} < ${before}::timestamptz
                                     ORDER BY ${col('given_up_at')}
                                     LIMIT ${limit}::int)
         AND ${col('given_up_at')} < ${before}::timestamptz
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

/** An order's place in the schedule, as people read it (the order's story). */
export interface ScheduleEntry {
  observedAt: Date;
  attempts: number;
  nextCheckAt: Date | null;
  lastCheckedAt: Date | null;
  lastResult: string | null;
  givenUpAt: Date | null;
}

/** The order's place in the schedule; null when it has none (final, or not taken in yet). */
export async function scheduleOf(db: Db, orderId: string): Promise<ScheduleEntry | null> {
  const row = await db
    .selectFrom('reconciliation_checks')
    .selectAll()
    .where('order_id', '=', orderId)
    .executeTakeFirst();
  return row
    ? {
        observedAt: row.observed_at,
        attempts: row.attempts,
        nextCheckAt: row.next_check_at,
        lastCheckedAt: row.last_checked_at,
        lastResult: row.last_result,
        givenUpAt: row.given_up_at,
      }
    : null;
}

/** An order given up, as people read it (needs attention). */
export interface GivenUpOrder {
  orderId: string;
  givenUpAt: Date;
  attempts: number;
  lastResult: string | null;
}

/** The orders given up, the latest first, at most `limit` (through reconciliation_checks_given_up). */
export async function givenUpOrders(db: Db, limit: number): Promise<GivenUpOrder[]> {
  const rows = await db
    .selectFrom('reconciliation_checks')
    .select(['order_id', 'given_up_at', 'attempts', 'last_result'])
    .where('given_up_at', 'is not', null)
    .orderBy('given_up_at', 'desc')
    .limit(limit)
    .execute();
  return rows.flatMap((g) =>
    g.given_up_at === null
      ? []
      : [{ orderId: g.order_id, givenUpAt: g.given_up_at, attempts: g.attempts, lastResult: g.last_result }],
  );
}
