import { sql, type RawBuilder, type Selectable } from 'kysely';
import { columnsOf, tableOf, type Column, type ColumnRef, type Table } from '../database/columns';
import type { Db } from '../database/pool';
import type { OutboxEventsTable } from '../database/schema';
import type { BackoffPolicy } from '../domain/backoff';
import { backoffMsSql } from '../database/backoffSql';
import { insertJson } from '../database/jsonRows';
import { prepared, statement, type Slot, type Statement } from '../database/transaction';
import type { OutboxBacklog } from '../observability/metrics';
import { OUTBOX_COLUMNS } from './outboxRows';

/**
 * Every query of the outbox (outbox_events, sql/002-003, 010-011): the relay's claim, marks and sweep, the
 * wake-up hint the recorder and the re-publishing send it, the backlog and the conditions people and metrics
 * read (events waiting for the broker, events no queue took), an order's events, and the events a replay selects.
 * The feed's pages are feedQueries.ts's.
 */

/**
 * The LISTEN/NOTIFY channel on which a commit that wrote events hints the relay: named after the table the events are
 * in (relayHint below notifies it), so typed as that table.
 */
const OUTBOX_CHANNEL = 'outbox_events' satisfies Table;

/** The relay's session listens on the channel (sent on each new connection of its lock's). */
export const listenForEvents = (): Statement => statement(sql`LISTEN ${sql.id(OUTBOX_CHANNEL)}`);

/**
 * The hint, as SQL: delivered to the relay at commit. The relay also polls, so a lost hint costs a poll interval.
 * One per commit: the relay hears it wherever it runs (this replica, another, `npm run relay`).
 */
export const relayHint = sql`pg_notify(${OUTBOX_CHANNEL}, '')`;

/** The recording transaction's new events, as one JSON parameter (src/recording/batchQueries.ts embeds it). */
export const insertOutboxRows = (rows: Slot): RawBuilder<unknown> => insertJson('outbox_events', OUTBOX_COLUMNS, rows);

const o = columnsOf('outbox_events', 'o');
const c = columnsOf('outbox_events');
const OUTBOX = tableOf('outbox_events');

const CURSOR = tableOf('outbox_cursor');
const cur = columnsOf('outbox_cursor');
const HELD = tableOf('outbox_held');
const h = columnsOf('outbox_held', 'h');
const hp = columnsOf('outbox_held', 'hp');
const hc = columnsOf('outbox_held');
const HISTORY = tableOf('outbox_cursor_history');
const hist = columnsOf('outbox_cursor_history', 'hist');
const histc = columnsOf('outbox_cursor_history');
const newest = columnsOf('outbox_cursor_history', 'newest');
const passed = columnsOf('outbox_cursor_history', 'passed');
const batch = columnsOf('outbox_events', 'batch');

/**
 * An event of the relay's batch: one above the cursor, in the batch's transactions (`held` false), or a held event
 * due now (`held` true).
 */
export interface BatchEvent {
  id: string;
  order_id: string;
  sequence: string;
  type: string;
  message: string;
  created_at: Date;
  held: boolean;
  /** Above the cursor, and its order has held events: it joins them instead of being published now. */
  blocked: boolean;
  /** Above the cursor but published by its row already (a relay of the version before, during an upgrade). */
  published: boolean;
  /** The cursor the batch was read from, and the last transaction it reaches (null: none, only held events). */
  cursor_xid: string;
  last_xid: string | null;
}

/**
 * The relay's statements are not prepared by name: a named statement is planned generically after five runs, and
 * the plan is kept while the table changes under it (with the pending index of before, the claim scanned the whole
 * table once its plan was generic). Planned at each run with its arguments, a fraction of a millisecond once per
 * batch of up to 200 events, each walks its index.
 */

/**
 * The transactions whose events may all be read now: those below the oldest transaction still running anywhere in
 * the cluster. Every transaction with a lower id has ended, so every row it wrote that will ever be visible is
 * visible to this statement; a transaction that got its id earlier and commits later is above it until it ends
 * (docs/decisions/0023, "Why nothing is skipped").
 */
const ENDED_BELOW = sql`pg_snapshot_xmin(pg_current_snapshot())`;
const CURSOR_XID = sql`(SELECT ${cur('xid')} FROM ${CURSOR})`;

/**
 * The next batch, one statement: the events of the first `limit` events' transactions above the cursor, whole
 * transactions (rounded up to the end of the last), sorted by transaction, order and sequence, unless the broker's
 * back-off on the cursor is not over; then the held events due now, the first of each order, at most `limit`. No row
 * is locked: the relay is the only reader that moves the cursor (its advisory lock, and advanceCursor's check).
 */
export const readBatch = (limit: number): Statement<BatchEvent> =>
  prepared(
    'relay_read',
    sql<BatchEvent>`
      WITH first AS (
        SELECT ${o('xid')} AS first_xid FROM ${OUTBOX} o
         WHERE ${o('xid')} > ${CURSOR_XID} AND ${o('xid')} < ${ENDED_BELOW}
           AND EXISTS (SELECT 1 FROM ${CURSOR} WHERE ${cur('next_attempt_at')} <= now())
         ORDER BY ${o('xid')} LIMIT ${limit}
      )
      SELECT * FROM (
        SELECT ${o('id')}, ${o('order_id')}, ${o('sequence')}, ${o('type')}, ${o('message')}, ${o('created_at')},
               false AS held,
               EXISTS (SELECT 1 FROM ${HELD} h WHERE ${h('order_id')} = ${o('order_id')}) AS blocked,
               ${o('published_at')} IS NOT NULL AS published,
               ${CURSOR_XID}::text AS cursor_xid, (SELECT max(first.first_xid) FROM first)::text AS last_xid,
               ${o('xid')} AS batch_xid
          FROM ${OUTBOX} o
         -- Both bounds scalar, so both bound the index scan: a range of it, not the whole index from its start.
         WHERE ${o('xid')} > ${CURSOR_XID} AND ${o('xid')} <= (SELECT max(first.first_xid) FROM first)
        UNION ALL
        SELECT * FROM (
          SELECT ${o('id')}, ${o('order_id')}, ${o('sequence')}, ${o('type')}, ${o('message')}, ${o('created_at')},
                 true, false, false, ${CURSOR_XID}::text, NULL::text, NULL::xid8
            FROM ${HELD} h JOIN ${OUTBOX} o ON ${o('id')} = ${h('event_id')}
           WHERE ${h('next_attempt_at')} <= now()
             AND NOT EXISTS (SELECT 1 FROM ${HELD} hp
                              WHERE ${hp('order_id')} = ${h('order_id')} AND ${hp('sequence')} < ${h('sequence')})
           ORDER BY ${h('held_at')} LIMIT ${limit}) AS due
      ) AS batch
      ORDER BY held DESC, batch_xid, ${batch('order_id')}, ${batch('sequence')}`,
  );

/**
 * An event the broker refused is attempted again after backoffMs(EVENT_RETRY, attempts): 1 s, 2 s, 4 s, 8 s, ...
 * 256 s, then every 5 min (its order's later events wait behind it, held too). A batch the broker failed as a whole
 * (its connection lost, its confirms late) is read again after the same back-off, kept on the cursor's row. The
 * one back-off policy (src/domain/backoff.ts), computed in SQL (src/database/backoffSql.ts).
 */
export const EVENT_RETRY: BackoffPolicy = { firstMs: 1000, maxMs: 300_000, jitter: 'none' };

const retryAt = (attempts: RawBuilder<unknown>): RawBuilder<unknown> =>
  sql`now() + interval '1 millisecond' * ${backoffMsSql(EVENT_RETRY, attempts)}`;

/** What the broker said of a batch, and what the relay does with it. */
export interface BatchOutcome {
  /** The cursor the batch was read from (the update checks it is still there). */
  cursorXid: string;
  /** Where the cursor goes, its back-off over (null: it stays, and so does its back-off unless batchError). */
  advanceTo: string | null;
  /** Why the batch is read again, with the back-off (null: it was not failed as a whole). */
  batchError: string | null;
  /** Events above the cursor that become held: refused by the broker (with its answer) or behind a held event. */
  hold: ReadonlyArray<{ id: string; orderId: string; sequence: string; error: string | null }>;
  /** Confirmed events the broker returned first (no queue bound). */
  unrouted: readonly string[];
  /** Held events the broker confirmed (routed or not): they leave the table, published by their row. */
  heldPublished: readonly string[];
  /** Held events not confirmed, with the broker's answer: attempted again after EVENT_RETRY. */
  heldFailed: ReadonlyArray<{ id: string; error: string }>;
}

/**
 * The batch's outcome in one statement (one transaction): the cursor moved (or its back-off), its history, the events
 * held, the held events published or failed, the unrouted marked. All of it only if the cursor is still where the
 * batch read it: a relay that lost its lock to another does not move it (the answer's `moved` is then false, and
 * nothing is written). Rows are written only for the rare cases (held, unrouted); the cursor's row and its history's
 * newest row are updated in place (HOT: no index names their changing columns).
 */
export const recordBatch = (outcome: BatchOutcome): Statement<{ moved: boolean }> => {
  const advanceTo = outcome.advanceTo;
  const heldIds = outcome.hold.map((e) => e.id);
  return prepared(
    'relay_record',
    sql<{ moved: boolean }>`
      WITH moved AS (
        UPDATE ${CURSOR} SET
               ${cur('xid')} = coalesce(${advanceTo}::xid8, ${cur('xid')}),
               ${cur('advanced_at')} = CASE WHEN ${advanceTo}::xid8 IS NULL THEN ${cur('advanced_at')} ELSE now() END,
               ${cur('attempts')} = CASE WHEN ${outcome.batchError}::text IS NOT NULL THEN ${cur('attempts')} + 1
                                         WHEN ${advanceTo}::xid8 IS NOT NULL THEN 0 ELSE ${cur('attempts')} END,
               ${cur('next_attempt_at')} = CASE WHEN ${outcome.batchError}::text IS NOT NULL
                                                  THEN ${retryAt(sql`${cur('attempts')} + 1`)}
                                                WHEN ${advanceTo}::xid8 IS NOT NULL THEN '-infinity'
                                                ELSE ${cur('next_attempt_at')} END,
               ${cur('last_error')} = CASE WHEN ${outcome.batchError}::text IS NOT NULL THEN ${outcome.batchError}::text
                                           WHEN ${advanceTo}::xid8 IS NOT NULL THEN NULL ELSE ${cur('last_error')} END
         WHERE ${cur('xid')} = ${outcome.cursorXid}::xid8
        RETURNING 1
      ), newest AS (
        SELECT ${hist('opened_at')} FROM ${HISTORY} hist ORDER BY ${hist('opened_at')} DESC LIMIT 1
      ), history_moved AS (
        UPDATE ${HISTORY} SET ${histc('xid')} = ${advanceTo}::xid8, ${histc('reached_at')} = now()
         WHERE ${advanceTo}::xid8 IS NOT NULL AND EXISTS (SELECT 1 FROM moved)
           AND ${histc('opened_at')} = (SELECT ${newest('opened_at')} FROM newest) AND ${histc('opened_at')} > now() - interval '1 second'
      ), history_started AS (
        INSERT INTO ${HISTORY} (${histc('opened_at')}, ${histc('xid')}, ${histc('reached_at')})
        SELECT now(), ${advanceTo}::xid8, now()
         WHERE ${advanceTo}::xid8 IS NOT NULL AND EXISTS (SELECT 1 FROM moved)
           AND NOT EXISTS (SELECT 1 FROM newest WHERE ${newest('opened_at')} > now() - interval '1 second')
      ), held AS (
        INSERT INTO ${HELD} (${hc('event_id')}, ${hc('order_id')}, ${hc('sequence')}, ${hc('attempts')},
                             ${hc('next_attempt_at')}, ${hc('last_error')})
        SELECT f.held_id, f.held_order, f.held_sequence, CASE WHEN f.held_error IS NULL THEN 0 ELSE 1 END,
               CASE WHEN f.held_error IS NULL THEN '-infinity' ELSE ${retryAt(sql`1`)} END, f.held_error
          FROM unnest(${heldIds}::uuid[], ${outcome.hold.map((e) => e.orderId)}::text[],
                      ${outcome.hold.map((e) => e.sequence)}::bigint[], ${outcome.hold.map((e) => e.error)}::text[])
               AS f(held_id, held_order, held_sequence, held_error)
         WHERE EXISTS (SELECT 1 FROM moved)
        ON CONFLICT (${hc('event_id')}) DO NOTHING
      ), held_sent AS (
        DELETE FROM ${HELD} WHERE ${hc('event_id')} = ANY(${outcome.heldPublished}::uuid[]) AND EXISTS (SELECT 1 FROM moved)
      ), held_failed AS (
        UPDATE ${HELD} AS h
           SET ${hc('attempts')} = ${h('attempts')} + 1, ${hc('next_attempt_at')} = ${retryAt(sql`${h('attempts')} + 1`)},
               ${hc('last_error')} = f.failed_error
          FROM unnest(${outcome.heldFailed.map((f) => f.id)}::uuid[], ${outcome.heldFailed.map((f) => f.error)}::text[])
               AS f(failed_id, failed_error)
         WHERE ${h('event_id')} = f.failed_id AND EXISTS (SELECT 1 FROM moved)
      ), rows_marked AS (
        UPDATE ${OUTBOX}
           SET ${c('published_at')} = CASE WHEN ${c('id')} = ANY(${outcome.heldPublished}::uuid[]) THEN clock_timestamp()
                                           ELSE ${c('published_at')} END,
               ${c('last_error')} = CASE WHEN ${c('id')} = ANY(${outcome.heldPublished}::uuid[]) THEN NULL
                                         ELSE ${c('last_error')} END,
               ${c('unrouted_at')} = CASE WHEN ${c('id')} = ANY(${outcome.unrouted}::uuid[]) THEN clock_timestamp() END
         WHERE (${c('id')} = ANY(${outcome.heldPublished}::uuid[]) OR ${c('id')} = ANY(${outcome.unrouted}::uuid[]))
           AND EXISTS (SELECT 1 FROM moved)
      )
      SELECT EXISTS (SELECT 1 FROM moved) AS moved`,
  );
};

const LEGACY = tableOf('legacy_event_ids');
const legacy = columnsOf('legacy_event_ids');
const d = columnsOf('outbox_events', 'd');

/**
 * When an event was published, from its row or the cursor (docs/decisions/0023, "What published means"): null while
 * it is held or above the cursor; its published_at when its row has one (held once, rebuilt, from before sql/024);
 * else the end of the cursor history's row that passed it (published within the second before).
 */
const publishedAtOf = (e: (column: Column<'outbox_events'>) => ColumnRef): RawBuilder<Date | null> =>
  sql<Date | null>`CASE
    WHEN EXISTS (SELECT 1 FROM ${HELD} h WHERE ${h('event_id')} = ${e('id')}) THEN NULL
    WHEN ${e('published_at')} IS NOT NULL THEN ${e('published_at')}
    WHEN ${e('xid')} <= ${CURSOR_XID} THEN coalesce(
      (SELECT ${hist('reached_at')} FROM ${HISTORY} hist
        WHERE ${hist('opened_at')} > ${e('created_at')} - interval '1 second' AND ${hist('xid')} >= ${e('xid')}
        ORDER BY ${hist('opened_at')} LIMIT 1),
      (SELECT ${cur('advanced_at')} FROM ${CURSOR}))
  END`;

/**
 * An event waiting for the broker above the cursor: written by a transaction the relay has not passed (and not
 * published by its row: a relay of the version before, during an upgrade). The other waiting events are held.
 */
const aboveCursor = (e: (column: Column<'outbox_events'>) => ColumnRef): RawBuilder<boolean> =>
  sql<boolean>`${e('xid')} > ${CURSOR_XID} AND ${e('published_at')} IS NULL`;

/**
 * Events created and published more than retention ago, deleted up to 10,000 at a time (the relay sweeps once a
 * minute), walking the outbox in the order events were stored (outbox_events_by_time, sql/011): those below where the
 * cursor was a retention ago (its history), and those published by their row, never a held one. The cursor's history
 * goes with them, its row of a retention ago kept. One written by a replica of the version before derived ids (a
 * random, version-4 UUID: a rolling upgrade) is kept in legacy_event_ids as it goes, so that `events rebuild` can
 * give it its id again.
 */
export const deletePublished = (retentionMs: number): Statement<{ deleted: number }> =>
  statement(
    sql<{ deleted: number }>`
      WITH passed AS (
        SELECT ${hist('opened_at')}, ${hist('xid')} FROM ${HISTORY} hist
         WHERE ${hist('opened_at')} < now() - ${retentionMs} * interval '1 millisecond' - interval '1 second'
         ORDER BY ${hist('opened_at')} DESC LIMIT 1
      ), deleted AS (
        DELETE FROM ${OUTBOX} WHERE ${c('id')} IN (
          SELECT ${d('id')} FROM ${OUTBOX} d
           WHERE ${d('created_at')} < now() - ${retentionMs} * interval '1 millisecond'
             AND (${d('published_at')} < now() - ${retentionMs} * interval '1 millisecond'
                  OR ${d('xid')} <= (SELECT ${passed('xid')} FROM passed))
             AND NOT EXISTS (SELECT 1 FROM ${HELD} h WHERE ${h('event_id')} = ${d('id')})
           ORDER BY ${d('created_at')} LIMIT 10000)
        RETURNING ${c('id')}, ${c('message')}, ${c('created_at')}
      ), history_gone AS (
        DELETE FROM ${HISTORY} WHERE ${histc('opened_at')} < (SELECT ${passed('opened_at')} FROM passed)
      ), kept AS (
        INSERT INTO ${LEGACY} (${legacy('notification_id')}, ${legacy('event_id')}, ${legacy('event_time')}, ${legacy('created_at')})
        SELECT (${d('message')}::json -> 'data' ->> 'notificationId')::bigint, ${d('id')},
               (${d('message')}::json ->> 'time')::timestamptz, ${d('created_at')}
          FROM deleted d WHERE substr(${d('id')}::text, 15, 1) <> '7'
        ON CONFLICT (${legacy('notification_id')}) DO NOTHING
      )
      SELECT count(*)::int AS deleted FROM deleted`,
  );

/**
 * Re-publishing an order's events (the console's action): its published events still in the outbox are held, due
 * now, with their ids, sequences and bodies unchanged, and the relay is hinted. The relay publishes held events in
 * sequence order, each with the same CloudEvents id and AMQP messageId, and the order's events committed meanwhile
 * join them behind, so a consumer that deduplicates by id (as docs/asyncapi.yaml asks of every consumer: delivery is
 * at least once) ignores those it has, and one that lost them gets them. Nothing new is written: no event is
 * invented, none reordered. Events already deleted after OUTBOX_RETENTION cannot be re-published; the answer says how
 * many were.
 */
export async function republishOrderEvents(db: Db, orderId: string): Promise<{ republished: number }> {
  return db.transaction().execute(async (trx) => {
    const { rows } = await sql<{ event_id: string }>`
      INSERT INTO ${HELD} (${hc('event_id')}, ${hc('order_id')}, ${hc('sequence')}, ${hc('next_attempt_at')})
      SELECT ${o('id')}, ${o('order_id')}, ${o('sequence')}, now() FROM ${OUTBOX} o
       WHERE ${o('order_id')} = ${orderId} AND (${o('published_at')} IS NOT NULL OR ${o('xid')} <= ${CURSOR_XID})
      ON CONFLICT (${hc('event_id')}) DO NOTHING
      RETURNING ${hc('event_id')}`.execute(trx);
    if (rows.length > 0) await sql`SELECT ${relayHint}`.execute(trx);
    return { republished: rows.length };
  });
}

/**
 * Waiting events (above the cursor, and held), the creation time of the oldest (of the lowest transaction above
 * the cursor, and of the held events), and how long the oldest transaction with an id anywhere in the cluster has
 * been open (a running one in pg_stat_activity, or a prepared one): the relay publishes nothing committed after it
 * began until it ends (metrics). Other roles' sessions are seen only with pg_read_all_stats (docs/OPERATIONS.md).
 */
export async function readOutboxBacklog(db: Db): Promise<OutboxBacklog> {
  const { rows } = await sql<{ pending: string; oldest: string | null; held_seconds: string | null }>`
    SELECT (SELECT count(*) FROM ${OUTBOX} o WHERE ${aboveCursor(o)}) + (SELECT count(*) FROM ${HELD}) AS pending,
           extract(epoch from least(
             (SELECT min(${o('created_at')}) FROM ${HELD} h JOIN ${OUTBOX} o ON ${o('id')} = ${h('event_id')}),
             (SELECT ${o('created_at')} FROM ${OUTBOX} o WHERE ${aboveCursor(o)} ORDER BY ${o('xid')} LIMIT 1))) AS oldest,
           extract(epoch from now() - least(
             (SELECT min(xact_start) FROM pg_stat_activity WHERE backend_xid IS NOT NULL AND pid <> pg_backend_pid()),
             (SELECT min(prepared) FROM pg_prepared_xacts))) AS held_seconds`.execute(db);
  const row = rows[0];
  return {
    pending: Number(row?.pending ?? 0),
    oldestCreatedAtSeconds: row?.oldest == null ? 0 : Number(row.oldest),
    cursorHeldSeconds: row?.held_seconds == null ? 0 : Math.max(0, Number(row.held_seconds)),
  };
}

/** Events counted at most (the outbox may hold millions: a broker outage, or a type nobody binds). */
export const EVENT_COUNT_BOUND = 10_000;

export interface EventCondition {
  /** Events in the condition, counted up to countBound + 1 (the newest ones, for unrouted events). */
  count: number;
  countBound: number;
  /** The orders those counted belong to. */
  orders: number;
  /** Since when: the oldest waiting event's creation, or the first unrouted event's publication. */
  since: Date | null;
  /**
   * Why: the broker's last error on the oldest waiting event (null: not attempted yet), or the routing keys no
   * queue was bound for, among those counted.
   */
  lastReason: string | null;
  /** An order the condition holds for (the oldest waiting event's, the latest unrouted event's): where to look. */
  orderId: string | null;
}

const NONE: EventCondition = {
  count: 0,
  countBound: EVENT_COUNT_BOUND,
  orders: 0,
  since: null,
  lastReason: null,
  orderId: null,
};

/**
 * Events published that no queue was bound for (the broker returned them): kept in the outbox and the feed, they
 * held up nothing, but a consumer may be missing. Counted among the newest, since the first one kept.
 */
export async function unroutedEvents(db: Db): Promise<EventCondition> {
  const [counted, first] = await Promise.all([
    db
      .selectFrom((eb) =>
        eb
          .selectFrom('outbox_events')
          .select(['order_id', 'type', 'unrouted_at'])
          .where('unrouted_at', 'is not', null)
          .orderBy('unrouted_at', 'desc')
          .limit(EVENT_COUNT_BOUND + 1)
          .as('unrouted'),
      )
      .select((eb) => [
        eb.fn.countAll<string>().as('events'),
        eb.fn.count<string>('order_id').distinct().as('orders'),
        sql<string[] | null>`array_agg(DISTINCT ${c('type')} ORDER BY ${c('type')})`.as('types'),
        sql<string | null>`(array_agg(${c('order_id')} ORDER BY ${c('unrouted_at')} DESC))[1]`.as('latest_order_id'),
      ])
      .executeTakeFirstOrThrow(),
    db
      .selectFrom('outbox_events')
      .select('unrouted_at')
      .where('unrouted_at', 'is not', null)
      .orderBy('unrouted_at')
      .limit(1)
      .executeTakeFirst(),
  ]);
  if (!first?.unrouted_at) return NONE;
  return {
    ...NONE,
    count: Number(counted.events),
    orders: Number(counted.orders),
    since: first.unrouted_at,
    lastReason: counted.types ? `no queue bound for ${counted.types.join(', ')}` : null,
    orderId: counted.latest_order_id,
  };
}

export interface OutboxLag {
  /** Pending events, counted up to countBound + 1. */
  count: number;
  /** Orders those events are about (of the first countBound + 1 pending). */
  orders: number;
  oldest: Date | null;
  countBound: number;
  /** The broker's answers to the oldest pending events, most frequent first (at most three): why they wait. */
  reasons: Array<{ reason: string | null; events: number }>;
}

/**
 * The oldest waiting events, at most EVENT_COUNT_BOUND + 1: the held ones, with the broker's answer to each, and those
 * of the lowest transactions above the cursor (an index range from it), with the answer to the batch the broker last
 * failed, if it did.
 */
const oldestPending = (db: Db) =>
  db
    .selectFrom(
      sql<{ order_id: string; created_at: Date; last_error: string | null }>`(
        (SELECT ${o('order_id')}, ${o('created_at')}, ${h('last_error')}
           FROM ${HELD} h JOIN ${OUTBOX} o ON ${o('id')} = ${h('event_id')}
          ORDER BY ${o('created_at')} LIMIT ${EVENT_COUNT_BOUND + 1})
        UNION ALL
        (SELECT ${o('order_id')}, ${o('created_at')}, (SELECT ${cur('last_error')} FROM ${CURSOR})
           FROM ${OUTBOX} o WHERE ${aboveCursor(o)}
          ORDER BY ${o('xid')} LIMIT ${EVENT_COUNT_BOUND + 1}))`.as('waiting'),
    )
    .select(['waiting.order_id', 'waiting.created_at', 'waiting.last_error'])
    .orderBy('waiting.created_at')
    .limit(EVENT_COUNT_BOUND + 1);

/** The events waiting for the broker: how many (bounded), about how many orders, since when, and why. */
export async function outboxLag(db: Db): Promise<OutboxLag> {
  const [counts, reasons] = await Promise.all([
    db
      .selectFrom(oldestPending(db).as('p'))
      .select((eb) => [
        eb.fn.countAll<string>().as('events'),
        eb.fn.count<string>('p.order_id').distinct().as('orders'),
        eb.fn.min('p.created_at').as('oldest'),
      ])
      .executeTakeFirst(),
    db
      .selectFrom(oldestPending(db).as('p'))
      .select((eb) => ['p.last_error', eb.fn.countAll<string>().as('events')])
      .groupBy('p.last_error')
      .orderBy('events', 'desc')
      .limit(3)
      .execute(),
  ]);
  return {
    count: Number(counts?.events ?? 0),
    orders: Number(counts?.orders ?? 0),
    oldest: counts?.oldest ?? null,
    countBound: EVENT_COUNT_BOUND,
    reasons: reasons.map((r) => ({ reason: r.last_error, events: Number(r.events) })),
  };
}

/** An order whose events wait for the broker: how many, since when, and the broker's last answer about them. */
export interface WaitingOrder {
  orderId: string;
  events: number;
  oldest: Date;
  lastError: string | null;
}

/** The orders whose events wait longest, at most `limit` (of the oldest EVENT_COUNT_BOUND + 1 pending events). */
export async function waitingOrders(db: Db, limit: number): Promise<WaitingOrder[]> {
  const rows = await db
    .selectFrom(oldestPending(db).as('p'))
    .select((eb) => [
      'p.order_id',
      eb.fn.countAll<string>().as('events'),
      eb.fn.min('p.created_at').as('oldest'),
      eb.fn.max('p.last_error').as('last_error'),
    ])
    .groupBy('p.order_id')
    .orderBy('oldest')
    .limit(limit)
    .execute();
  return rows.map((r) => ({
    orderId: r.order_id,
    events: Number(r.events),
    oldest: r.oldest,
    lastError: r.last_error,
  }));
}

/** An event of the outbox, and what its message says it is about. */
export interface StoredEventRow {
  id: string;
  sequence: string;
  type: string;
  createdAt: Date;
  publishedAt: Date | null;
  /** Published, but no queue was bound for its routing key (the broker returned it). */
  unroutedAt: Date | null;
  attempts: number;
  /** null: due at once. */
  nextAttemptAt: Date | null;
  lastError: string | null;
  /** From the message's data: the refund, the status and the one before it, the notification. */
  refundId: string | null;
  status: string | null;
  previousStatus: string | null;
  notificationId: string | null;
}

/** What an event's message says in its data (every message is JSON: writeEvent.ts); nothing when unreadable. */
function eventData(message: string): Pick<StoredEventRow, 'refundId' | 'status' | 'previousStatus' | 'notificationId'> {
  let data: { status?: unknown; previousStatus?: unknown; notificationId?: unknown; refundId?: unknown } = {};
  try {
    data = (JSON.parse(message) as { data?: typeof data }).data ?? {};
  } catch {
    // Show the row anyway.
  }
  const text = (value: unknown): string | null => (typeof value === 'string' ? value : null);
  return {
    refundId: text(data.refundId),
    status: text(data.status),
    previousStatus: text(data.previousStatus),
    notificationId: text(data.notificationId),
  };
}

/**
 * Where an event's attempts stand: a held event's own, the cursor's for one above it (the broker failing whole
 * batches), else its row's (from before sql/024).
 */
const attemptState = <V>(
  held: Column<'outbox_held'>,
  cursor: Column<'outbox_cursor'>,
  row: Column<'outbox_events'>,
): RawBuilder<V> =>
  sql<V>`CASE
    WHEN EXISTS (SELECT 1 FROM ${HELD} h WHERE ${h('event_id')} = ${o('id')})
      THEN (SELECT ${h(held)} FROM ${HELD} h WHERE ${h('event_id')} = ${o('id')})
    WHEN ${aboveCursor(o)} THEN (SELECT ${cur(cursor)} FROM ${CURSOR})
    ELSE ${o(row)}
  END`;

/** An order's events still in the outbox (published ones go after OUTBOX_RETENTION), in sequence, at most `limit`. */
export async function eventsOfOrder(db: Db, orderId: string, limit: number): Promise<StoredEventRow[]> {
  const rows = await db
    .selectFrom('outbox_events as o')
    .select(['o.id', 'o.sequence', 'o.type', 'o.message', 'o.created_at', 'o.unrouted_at'])
    .select([
      publishedAtOf(o).as('published_at'),
      attemptState<number>('attempts', 'attempts', 'attempts').as('attempts'),
      attemptState<string | null>('last_error', 'last_error', 'last_error').as('last_error'),
      // '-infinity' (due at once) reads back as a string: none.
      sql<Date | null>`nullif(${attemptState('next_attempt_at', 'next_attempt_at', 'next_attempt_at')}, '-infinity')`.as(
        'due_at',
      ),
    ])
    .where('o.order_id', '=', orderId)
    .orderBy('o.sequence')
    .limit(limit)
    .execute();
  return rows.map((e) => ({
    id: e.id,
    sequence: e.sequence,
    type: e.type,
    createdAt: e.created_at,
    publishedAt: e.published_at,
    unroutedAt: e.unrouted_at,
    attempts: e.attempts,
    nextAttemptAt: e.due_at,
    lastError: e.last_error,
    ...eventData(e.message),
  }));
}

export type StoredEvent = Pick<
  Selectable<OutboxEventsTable>,
  'id' | 'order_id' | 'sequence' | 'type' | 'message' | 'created_at' | 'published_at'
>;

export interface ReplaySelection {
  ids: string[];
  orders: string[];
  /** Only these types (routing keys); none: every type. */
  types: string[];
  since: Date | null;
  until: Date | null;
}

/**
 * The stored events a selection names: by id and by order (either matches), within the time range
 * (created_at) when one is given; in the order they were stored (created, then per-order sequence), each with
 * when it was published (publishedAtOf).
 */
export async function selectEvents(db: Db, selection: ReplaySelection): Promise<StoredEvent[]> {
  let query = db
    .selectFrom('outbox_events as o')
    .select(['o.id', 'o.order_id', 'o.sequence', 'o.type', 'o.message', 'o.created_at'])
    .select(publishedAtOf(o).as('published_at'))
    .orderBy('o.created_at')
    .orderBy('o.order_id')
    .orderBy('o.sequence');
  if (selection.ids.length > 0 || selection.orders.length > 0) {
    query = query.where((eb) =>
      eb.or([
        ...(selection.ids.length > 0 ? [eb('o.id', 'in', selection.ids)] : []),
        ...(selection.orders.length > 0 ? [eb('o.order_id', 'in', selection.orders)] : []),
      ]),
    );
  }
  if (selection.types.length > 0) query = query.where('o.type', 'in', selection.types);
  if (selection.since) query = query.where('o.created_at', '>=', selection.since);
  if (selection.until) query = query.where('o.created_at', '<', selection.until);
  return query.execute();
}
