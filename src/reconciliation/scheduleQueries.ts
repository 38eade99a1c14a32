import { sql, type Compilable, type CompiledQuery, type RawBuilder } from 'kysely';
import { columnsOf, tableOf, type ColumnRef } from '../database/columns';
import type { Db } from '../database/pool';
import type { CheckResult } from '../observability/reconciliationMetrics';
import type { ExpectedOrder } from '../parsing/orderLists';
import { meaningKey } from '../recording/batch';

/**
 * The reconciler's reads and writes of its schedule (reconciliation_checks, sql/006), on its own pool. A row
 * holds an open order's place: the observation it is about (the last change of the order, or of a pending
 * refund of it), the checks since, the next one, or that it was given up. Nothing is derived again on a sweep,
 * and every query reads a range of an index: what is due, or what changed lately. Observation times are only
 * ever compared in SQL (a JavaScript Date would cut their microseconds).
 *
 * What the schedule cannot see from the projections comes in two ways (issue 54): orders the shop said it created
 * (expected_orders, sql/016), taken in like open ones once RECONCILE_AFTER passed with no notification; and checks
 * forced for a cause (forced_checks, sql/017): an order checked once whatever its state here, then kept only
 * while open.
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
  /**
   * Whether the order is still open here (false: a notification closed it since): not final, a refund of it
   * pending, or expected by the shop and never heard of.
   */
  open: boolean;
  /** Whether a check of it was forced (forceChecks) and not made yet: it is checked whatever `open` says. */
  forced: boolean;
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
const expected = tableOf('expected_orders');
const ex = columnsOf('expected_orders');
const e = columnsOf('expected_orders', 'e');
const forced = tableOf('forced_checks');
const fc = columnsOf('forced_checks');
const f = columnsOf('forced_checks', 'f');

/** The statuses after which nothing more is learned of an order, or of a refund (spec, "Statuses"). */
const FINAL_ORDER = sql`('COMPLETED', 'CANCELED')`;
const OPEN_REFUND = sql`'PENDING'`;

/** A `sql` template as a query to compile (and to EXPLAIN, in tests) like a built one. */
const compilable = <Row>(db: Db, query: RawBuilder<Row>): Compilable<Row> => ({
  compile: (): CompiledQuery<Row> => query.compile(db),
});

const milliseconds = (ms: number) => sql`${ms}::int * interval '1 millisecond'`;

/** Whether anything was recorded of the order: its projection, or a refund of it. */
const heardOf = (orderId: ColumnRef) => sql<boolean>`(
  EXISTS (SELECT 1 FROM ${orders} o WHERE ${o('order_id')} = ${orderId})
  OR EXISTS (SELECT 1 FROM ${refunds} r WHERE ${r('order_id')} = ${orderId}))`;

/**
 * Whether the order is still open here, as SQL over the order id given: its status not final, a refund of it
 * pending, or the shop said it created it and nothing was heard of it since (key lookups, each).
 */
const stillOpen = (orderId: ColumnRef) => sql<boolean>`(
  EXISTS (SELECT 1 FROM ${orders} o WHERE ${o('order_id')} = ${orderId} AND ${o('status')} NOT IN ${FINAL_ORDER})
  OR EXISTS (SELECT 1 FROM ${refunds} r WHERE ${r('order_id')} = ${orderId} AND ${r('status')} = ${OPEN_REFUND})
  OR (EXISTS (SELECT 1 FROM ${expected} e WHERE ${e('order_id')} = ${orderId}) AND NOT ${heardOf(orderId)}))`;

/** Whether a check of the order was forced and not made yet (through forced_checks_pending). */
const forcedPending = (orderId: ColumnRef) => sql<boolean>`
  EXISTS (SELECT 1 FROM ${forced} f WHERE ${f('order_id')} = ${orderId} AND ${f('checked_at')} IS NULL)`;

/** The order's last observation here: its projection's last change, or a refund's; null when none. */
const lastObservation = (orderId: ColumnRef) => sql<Date | null>`
  greatest((SELECT ${o('updated_at')} FROM ${orders} o WHERE ${o('order_id')} = ${orderId}),
           (SELECT max(${r('updated_at')}) FROM ${refunds} r WHERE ${r('order_id')} = ${orderId}))`;

/**
 * Recording transactions still running when a round looks are caught by the next one, which looks this much
 * further back than the last: longer than a recording transaction can last (its statements time out at
 * DATABASE_TIMEOUT, 60 s at most; idle in a transaction, at four times that).
 */
export const OBSERVATION_MARGIN_MS = 10 * 60_000;

/** Expected orders looked at per round at most, the oldest first (the rest wait for the next round). */
export const EXPECTED_BATCH = 1000;

/**
 * Takes new observations in: every open order (or pending refund) changed since the last round (and the margin
 * before it) and at least RECONCILE_AFTER ago, whose row is about an older observation or missing, gets its row
 * at that observation, due at once, its checks counted from zero. Reads orders_open and refunds_pending by time:
 * the last minutes of intake, never the history. Answers how many rows it started over.
 *
 * And up to EXPECTED_BATCH expected orders created RECONCILE_AFTER ago or more and not taken in yet (through
 * expected_orders_waiting): one heard of since (a projection, or a refund of it) is dropped, being now the
 * projections' to follow; one never heard of gets its row at its creation time, due at once, with its POS to ask
 * with, and is marked taken (its row stays, marking the order open here, until heard of or RECONCILE_GIVE_UP old).
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
    ), waiting (waiting_order, waiting_pos, waiting_since, heard) AS (
      SELECT ${e('order_id')}, ${e('pos_id')}, ${e('created_at')}, ${heardOf(e('order_id'))}
        FROM ${expected} e
       WHERE ${e('taken_at')} IS NULL AND ${e('created_at')} <= (SELECT until FROM progress)
       ORDER BY ${e('created_at')}
       LIMIT ${EXPECTED_BATCH}::int
    ), heard_of AS (
      DELETE FROM ${expected} e USING waiting WHERE ${e('order_id')} = waiting_order AND heard
    ), unheard AS (
      UPDATE ${expected} e SET ${ex('taken_at')} = ${now}::timestamptz
        FROM waiting WHERE ${e('order_id')} = waiting_order AND NOT heard
      RETURNING waiting_order, waiting_pos, waiting_since
    ), latest (latest_order, latest_at, latest_pos) AS (
      SELECT changed_order, max(changed_at), NULL::text FROM changed GROUP BY changed_order
      UNION ALL
      SELECT waiting_order, waiting_since, waiting_pos FROM unheard
    ), taken AS (
      INSERT INTO ${checks} AS c (${col('order_id')}, ${col('observed_at')}, ${col('next_check_at')}, ${col('pos_id')})
      SELECT latest_order, latest_at, latest_at + ${milliseconds(afterMs)}, latest_pos
        FROM latest
       WHERE NOT EXISTS (SELECT 1 FROM ${checks} k
                          WHERE ${k('order_id')} = latest_order AND ${k('observed_at')} >= latest_at)
      ON CONFLICT (${col('order_id')}) DO UPDATE
         SET ${col('observed_at')} = ${excluded('observed_at')}, ${col('observation')} = ${c('observation')} + 1,
             ${col('attempts')} = 0, ${col('next_check_at')} = ${excluded('next_check_at')},
             ${col('last_checked_at')} = NULL, ${col('last_result')} = NULL, ${col('given_up_at')} = NULL,
             ${col('pos_id')} = coalesce(${excluded('pos_id')}, ${c('pos_id')})
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
 * it), each with its POS (the one it is bound to, else the row's), whether it is still open here and whether a
 * check of it was forced.
 */
export const dueOrdersQuery = (db: Db, now: Date, limit: number) =>
  db
    .selectFrom('reconciliation_checks as c')
    .leftJoin('order_owners as w', 'w.order_id', 'c.order_id')
    .select((eb) => [
      'c.order_id',
      eb.fn.coalesce('w.pos_id', 'c.pos_id').as('pos_id'),
      'c.observed_at',
      'c.observation',
      'c.attempts',
      'c.next_check_at',
      'c.given_up_at',
      stillOpen(c('order_id')).as('open'),
      forcedPending(c('order_id')).as('forced'),
    ])
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
    forced: row.forced,
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

/**
 * Drops an order's row, about this observation, when nothing of the order is open here any more (its repair, or
 * a forced check of an order final here) and no forced check of it waits. Answers whether it did.
 */
export async function forgetIfClosed(db: Db, orderId: string, observation: string): Promise<boolean> {
  const result = await sql`
    DELETE FROM ${checks} c
     WHERE ${c('order_id')} = ${orderId} AND ${c('observation')} = ${observation}::bigint
       AND NOT ${stillOpen(c('order_id'))} AND NOT ${forcedPending(c('order_id'))}`.execute(db);
  return (result.numAffectedRows ?? 0n) > 0n;
}

/**
 * Looks at up to `limit` rows after `after` (in order_id order, a cursor that goes round the table) and drops
 * those of orders final here now (a notification closed them since), unless a forced check of them waits: rows,
 * and the gauges they feed, stay those of open orders. Answers where to go on from ('' once round), and how many
 * went.
 */
export function pruneClosed(db: Db, after: string, limit: number): Promise<{ next: string; pruned: number }> {
  return pruneRound(
    db,
    sql`batch (batch_order, batch_observation) AS (
      SELECT ${col('order_id')}, ${col('observation')} FROM ${checks} WHERE ${col('order_id')} > ${after}
       ORDER BY ${col('order_id')} LIMIT ${limit}::int)`,
    sql`DELETE FROM ${checks} c USING batch
         WHERE ${c('order_id')} = batch_order AND ${c('observation')} = batch_observation
           AND NOT ${stillOpen(sql`batch_order`)} AND NOT ${forcedPending(sql`batch_order`)}`,
    limit,
  );
}

/**
 * One step of a cursor round a table: `batch` names its next `limit` rows (a CTE `batch` with a `batch_order`
 * column, in order id order), `prune` deletes those of them to go. Answers where to go on from ('' once round),
 * and how many went.
 */
async function pruneRound(
  db: Db,
  batch: RawBuilder<unknown>,
  prune: RawBuilder<unknown>,
  limit: number,
): Promise<{ next: string; pruned: number }> {
  const { rows } = await sql<{ last: string | null; seen: string; pruned: string }>`
    WITH ${batch}, pruned AS (${prune} RETURNING 1)
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

// ---- Forced checks (forced_checks, sql/017): orders checked once whatever their state here, for a cause. ----

/** How a forced check ended: a check's result, no POS to ask with, or still pending after RECONCILE_GIVE_UP. */
export type ForcedCheckResult = CheckResult | 'no_pos' | 'given_up';

/** The results in which the payment API said what it knows of the order (not_found included): answered. */
export const ANSWERED_RESULTS = ['unchanged', 'repaired', 'not_found'] as const satisfies readonly CheckResult[];

/** Orders one forceChecks call takes at most. */
export const FORCED_CHECKS_MAX = 10_000;

/**
 * Schedules these orders for a check as soon as the reconciler can, once even when final here, for `cause`;
 * answers how many orders it added a check for under that cause (an order already asked for under it is not
 * counted again, nor checked twice). At most FORCED_CHECKS_MAX per call (more is a programming error: throw).
 * posId is the POS to ask with when the order has no owner here (the first one given for an order wins).
 *
 * One statement: each order's forced_checks row, and its schedule row moved to now (an order not in the schedule
 * gets one at its last observation here, or now when it has none), its observation bumped so that a check under
 * way when it came writes nothing and the order is checked again.
 */
export async function forceChecks(
  db: Db,
  orders: ReadonlyArray<{ orderId: string; posId?: string }>,
  cause: string,
): Promise<number> {
  if (orders.length > FORCED_CHECKS_MAX)
    throw new RangeError(`forceChecks takes at most ${FORCED_CHECKS_MAX} orders a call, not ${orders.length}`);
  if (cause === '') throw new RangeError('forceChecks needs a cause');
  const posOf = new Map<string, string | null>();
  for (const { orderId, posId } of orders) if (!posOf.has(orderId)) posOf.set(orderId, posId ?? null);
  if (posOf.size === 0) return 0;
  const { rows } = await sql<{ added: string }>`
    WITH asked (asked_order, asked_pos) AS (
      SELECT * FROM unnest(${[...posOf.keys()]}::text[], ${[...posOf.values()]}::text[])
    ), added AS (
      INSERT INTO ${forced} (${fc('cause')}, ${fc('order_id')})
      SELECT ${cause}::text, asked_order FROM asked
      ON CONFLICT DO NOTHING
      RETURNING ${fc('order_id')} AS added_order
    ), scheduled AS (
      INSERT INTO ${checks} AS c (${col('order_id')}, ${col('observed_at')}, ${col('next_check_at')}, ${col('pos_id')})
      SELECT asked_order, coalesce(${lastObservation(sql`asked_order`)}, now()), now(), asked_pos
        FROM added JOIN asked ON asked_order = added_order
      ON CONFLICT (${col('order_id')}) DO UPDATE
         SET ${col('observation')} = ${c('observation')} + 1,
             ${col('next_check_at')} = least(${c('next_check_at')}, ${excluded('next_check_at')}),
             ${col('given_up_at')} = NULL,
             ${col('pos_id')} = coalesce(${excluded('pos_id')}, ${c('pos_id')})
      RETURNING 1
    )
    SELECT count(*) AS added FROM added`.execute(db);
  return Number(rows[0]?.added ?? 0);
}

const answered = sql.join(ANSWERED_RESULTS.map((result) => sql.lit(result)));

/**
 * For one cause: forced checks still due, answered by the API, and not covered (no POS to ask with, no
 * credentials, refused, pos mismatch, or given up). Read through the primary key: as many rows as the cause has.
 */
export async function forcedCheckProgress(
  db: Db,
  cause: string,
): Promise<{ due: number; answered: number; uncovered: number }> {
  const { rows } = await sql<{ due: string; answered: string; uncovered: string }>`
    SELECT count(*) FILTER (WHERE ${fc('checked_at')} IS NULL) AS due,
           count(*) FILTER (WHERE ${fc('result')} IN (${answered})) AS answered,
           count(*) FILTER (WHERE ${fc('checked_at')} IS NOT NULL AND ${fc('result')} NOT IN (${answered})) AS uncovered
      FROM ${forced} WHERE ${fc('cause')} = ${cause}`.execute(db);
  const row = rows[0];
  return { due: Number(row?.due ?? 0), answered: Number(row?.answered ?? 0), uncovered: Number(row?.uncovered ?? 0) };
}

/** For one cause, the first `limit` orders (by id) whose forced check did not cover them, and why. */
export async function uncoveredForcedChecks(
  db: Db,
  cause: string,
  limit: number,
): Promise<Array<{ orderId: string; result: string }>> {
  const rows = await db
    .selectFrom('forced_checks')
    .select(['order_id', 'result'])
    .where('cause', '=', cause)
    .where('checked_at', 'is not', null)
    .where('result', 'not in', ANSWERED_RESULTS)
    .orderBy('order_id')
    .limit(limit)
    .execute();
  return rows.map((row) => ({ orderId: row.order_id, result: row.result ?? '' }));
}

/**
 * Writes how a check of the order ended into its pending forced checks, every cause's, unless its schedule row
 * is no longer about this observation (a forced check came during the check: the order is checked again).
 */
export async function answerForcedChecks(
  db: Db,
  orderId: string,
  observation: string,
  result: ForcedCheckResult,
  checkedAt: Date,
): Promise<void> {
  await db
    .updateTable('forced_checks')
    .set({ checked_at: checkedAt, result })
    .where('order_id', '=', orderId)
    .where('checked_at', 'is', null)
    .where((eb) =>
      eb.exists(
        eb
          .selectFrom('reconciliation_checks')
          // Qualified: forced_checks has an order_id too, which a renamed column here would silently become.
          .select('reconciliation_checks.order_id')
          .where('reconciliation_checks.order_id', '=', orderId)
          .where('observation', '=', observation),
      ),
    )
    .execute();
}

/**
 * Gives up up to `limit` forced checks still pending since before `before` (through forced_checks_pending_since):
 * they count as not covered. Answers how many.
 */
export async function giveUpForcedChecks(db: Db, before: Date, at: Date, limit: number): Promise<number> {
  const { rows } = await sql<{ gave_up: string }>`
    WITH given_up AS (
      UPDATE ${forced} f SET ${fc('checked_at')} = ${at}::timestamptz, ${fc('result')} = 'given_up'
        FROM (SELECT ${fc('cause')} AS old_cause, ${fc('order_id')} AS old_order FROM ${forced}
               WHERE ${fc('checked_at')} IS NULL AND ${fc('requested_at')} < ${before}::timestamptz
               ORDER BY ${fc('requested_at')} LIMIT ${limit}::int) AS old
       WHERE ${f('cause')} = old_cause AND ${f('order_id')} = old_order AND ${f('checked_at')} IS NULL
      RETURNING 1
    )
    SELECT count(*) AS gave_up FROM given_up`.execute(db);
  return Number(rows[0]?.gave_up ?? 0);
}

/** Drops up to `limit` forced checks answered before `before` (through forced_checks_answered). Answers how many. */
export async function forgetForcedChecks(db: Db, before: Date, limit: number): Promise<number> {
  const { rows } = await sql<{ forgotten: string }>`
    WITH gone AS (
      DELETE FROM ${forced} f
       USING (SELECT ${fc('cause')} AS old_cause, ${fc('order_id')} AS old_order FROM ${forced}
               WHERE ${fc('checked_at')} < ${before}::timestamptz
               ORDER BY ${fc('checked_at')} LIMIT ${limit}::int) AS old
       WHERE ${f('cause')} = old_cause AND ${f('order_id')} = old_order
      RETURNING 1
    )
    SELECT count(*) AS forgotten FROM gone`.execute(db);
  return Number(rows[0]?.forgotten ?? 0);
}

/**
 * The orders of the first `limit` changes recorded in [from, to], in time order: each order once, by its first
 * change in the range, oldest first, with the POS it is bound to. A change is a projection's, the order's or a
 * refund's (what a database still has of a window: a projection keeps only its last change), final ones
 * included. At most `limit` orders, fewer when one changed several times among those. Reads the four partial
 * indexes of projections by time (orders_open, orders_final, refunds_pending, refunds_final), merged in time order
 * and cut at `limit`: never more rows than that, whatever the history.
 */
export const ordersObservedBetweenQuery = (db: Db, from: Date, to: Date, limit: number) =>
  compilable(
    db,
    sql<{ observed_order: string; owner: string | null }>`
    SELECT observed_order, ${columnsOf('order_owners', 'w')('pos_id')} AS owner
      FROM (SELECT changed_order AS observed_order, min(changed_at) AS earliest_at
              FROM (SELECT changed_order, changed_at
                      FROM (SELECT ${o('order_id')} AS changed_order, ${o('updated_at')} AS changed_at FROM ${orders} o
                             WHERE ${o('status')} NOT IN ${FINAL_ORDER}
                               AND ${o('updated_at')} BETWEEN ${from}::timestamptz AND ${to}::timestamptz
                            UNION ALL
                            SELECT ${o('order_id')}, ${o('updated_at')} FROM ${orders} o
                             WHERE ${o('status')} IN ${FINAL_ORDER}
                               AND ${o('updated_at')} BETWEEN ${from}::timestamptz AND ${to}::timestamptz
                            UNION ALL
                            SELECT ${r('order_id')}, ${r('updated_at')} FROM ${refunds} r
                             WHERE ${r('status')} = ${OPEN_REFUND}
                               AND ${r('updated_at')} BETWEEN ${from}::timestamptz AND ${to}::timestamptz
                            UNION ALL
                            SELECT ${r('order_id')}, ${r('updated_at')} FROM ${refunds} r
                             WHERE ${r('status')} <> ${OPEN_REFUND}
                               AND ${r('updated_at')} BETWEEN ${from}::timestamptz AND ${to}::timestamptz
                           ) AS changes
                     ORDER BY changed_at
                     LIMIT ${limit}::int) AS first_changes
             GROUP BY changed_order) AS observed
      LEFT JOIN ${tableOf('order_owners')} w ON ${columnsOf('order_owners', 'w')('order_id')} = observed_order
     ORDER BY earliest_at, observed_order`,
  );

/**
 * Orders whose projection, or a refund of which, changed in [from, to] (what a database still has of a window),
 * final ones included, oldest first, at most `limit` (ordersObservedBetweenQuery). An order changed again after
 * `to` has its last change there and is not listed: to cover a window up to now, give `to` as now.
 */
export async function ordersObservedBetween(
  db: Db,
  from: Date,
  to: Date,
  limit: number,
): Promise<Array<{ orderId: string; posId: string | null }>> {
  const { rows } = await db.executeQuery(ordersObservedBetweenQuery(db, from, to, limit).compile());
  return rows.map((row) => ({ orderId: row.observed_order, posId: row.owner }));
}

// ---- Expected orders (expected_orders, sql/016): what the shop said it created. ----

/**
 * Records expected orders; one already expected keeps its row as it was (the same order twice changes nothing).
 * Answers how many were new. The caller bounds the list (a statement takes three parameters an order).
 */
export async function expectOrders(db: Db, entries: readonly ExpectedOrder[]): Promise<number> {
  if (entries.length === 0) return 0;
  const result = await db
    .insertInto('expected_orders')
    .values(entries.map((x) => ({ order_id: x.orderId, pos_id: x.posId, created_at: x.createdAt })))
    .onConflict((oc) => oc.column('order_id').doNothing())
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0n);
}

/** Drops up to `limit` expected orders created before `before` (through expected_orders_by_created). */
export async function forgetExpectedOrders(db: Db, before: Date, limit: number): Promise<number> {
  const { rows } = await sql<{ forgotten: string }>`
    WITH gone AS (
      DELETE FROM ${expected}
       WHERE ${ex('order_id')} IN (SELECT ${ex('order_id')} FROM ${expected}
                                    WHERE ${ex('created_at')} < ${before}::timestamptz
                                    ORDER BY ${ex('created_at')} LIMIT ${limit}::int)
      RETURNING 1
    )
    SELECT count(*) AS forgotten FROM gone`.execute(db);
  return Number(rows[0]?.forgotten ?? 0);
}

/**
 * Looks at up to `limit` expected orders after `after` (in order_id order, a cursor that goes round the table)
 * and drops those heard of since (a projection, or a refund of them): the projections follow them now. Answers
 * where to go on from ('' once round), and how many went.
 */
export function pruneHeardOf(db: Db, after: string, limit: number): Promise<{ next: string; pruned: number }> {
  return pruneRound(
    db,
    sql`batch (batch_order) AS (
      SELECT ${ex('order_id')} FROM ${expected} WHERE ${ex('order_id')} > ${after}
       ORDER BY ${ex('order_id')} LIMIT ${limit}::int)`,
    sql`DELETE FROM ${expected} e USING batch WHERE ${e('order_id')} = batch_order AND ${heardOf(sql`batch_order`)}`,
    limit,
  );
}
