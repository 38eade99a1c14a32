import { sql, type RawBuilder, type Selectable } from 'kysely';
import { columnsOf, tableOf, type Table } from '../database/columns';
import type { Db } from '../database/pool';
import type { OutboxEventsTable } from '../database/schema';
import type { BackoffPolicy } from '../domain/backoff';
import { backoffMsSql } from '../database/backoffSql';
import { insertJson } from '../database/jsonRows';
import { statement, type Slot, type Statement } from '../database/transaction';
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
const p = columnsOf('outbox_events', 'p');
const c = columnsOf('outbox_events');
const OUTBOX = tableOf('outbox_events');

export type ClaimedEvent = Pick<Selectable<OutboxEventsTable>, 'id' | 'type' | 'message' | 'created_at'>;

/**
 * The relay's statements are not prepared by name: a named statement is planned generically after five runs,
 * and the plan is kept while the table changes under it. Planned when the outbox was young, the mark scanned the
 * whole table for every batch (40 ms with 150,000 rows, growing), and the claim, its limit unknown, sorted every
 * pending event. Planned at each run with its arguments (a fraction of a millisecond, once per batch of up to 200
 * events), each walks its index.
 */

/**
 * The next batch: pending events due now, oldest first, at most the first pending event of each order,
 * skipping rows another transaction holds.
 */
export const claimEvents = (limit: number): Statement<ClaimedEvent> =>
  statement(
    sql<ClaimedEvent>`
      SELECT ${o('id')}, ${o('type')}, ${o('message')}, ${o('created_at')}
        FROM ${OUTBOX} o
       WHERE ${o('published_at')} IS NULL
         AND ${o('next_attempt_at')} <= now()
         AND NOT EXISTS (SELECT 1 FROM ${OUTBOX} p
                          WHERE ${p('order_id')} = ${o('order_id')} AND ${p('published_at')} IS NULL
                            AND ${p('sequence')} < ${o('sequence')})
       ORDER BY ${o('created_at')}
       LIMIT ${limit}
       FOR UPDATE OF o SKIP LOCKED`,
  );

/**
 * An event the broker did not confirm is attempted again after backoffMs(EVENT_RETRY, attempts): 1 s, 2 s, 4 s,
 * 8 s, ... 256 s, then every 5 min (the order's later events wait behind it). The one back-off policy
 * (src/domain/backoff.ts), computed in SQL for the events a batch marks (src/database/backoffSql.ts).
 */
export const EVENT_RETRY: BackoffPolicy = { firstMs: 1000, maxMs: 300_000, jitter: 'none' };

/**
 * What the broker said, written back: confirmed events published, those it returned (no queue bound) with
 * unrouted_at too, so that they never hold up their order's later events; the others attempted again later, after
 * EVENT_RETRY. Each mark writes its row a second time: the outbox keeps half of each page free so that the new version
 * stays on the row's page, logged as the bytes that changed (sql/015).
 */
export const markEvents = (
  published: readonly string[],
  unrouted: readonly string[],
  failed: ReadonlyArray<{ id: string; error: string }>,
): Statement =>
  statement(
    sql`
      WITH published AS (
        UPDATE ${OUTBOX} SET ${c('published_at')} = clock_timestamp(), ${c('last_error')} = NULL,
               ${c('unrouted_at')} = CASE WHEN ${c('id')} = ANY(${unrouted}::uuid[]) THEN clock_timestamp() END
         WHERE ${c('id')} = ANY(${published}::uuid[])
      ), failed AS (
        UPDATE ${OUTBOX} AS o
           SET ${c('attempts')} = ${o('attempts')} + 1,
               ${c('next_attempt_at')} = now() + interval '1 millisecond' * ${backoffMsSql(EVENT_RETRY, sql`${o('attempts')} + 1`)},
               ${c('last_error')} = f.failed_error
          FROM unnest(${failed.map((f) => f.id)}::uuid[], ${failed.map((f) => f.error)}::text[]) AS f(failed_id, failed_error)
         WHERE ${o('id')} = f.failed_id
      )
      SELECT 1`,
  );

const LEGACY = tableOf('legacy_event_ids');
const legacy = columnsOf('legacy_event_ids');
const d = columnsOf('outbox_events', 'd');

/**
 * Events created and published more than retention ago, deleted up to 10,000 at a time (the relay sweeps once a
 * minute), walking the outbox in the order events were stored (outbox_events_by_time, sql/011). One written by a
 * replica of the version before derived ids (a random, version-4 UUID: a rolling upgrade) is kept in
 * legacy_event_ids as it goes, so that `events rebuild` can give it its id again.
 */
export const deletePublished = (retentionMs: number): Statement<{ deleted: number }> =>
  statement(
    sql<{ deleted: number }>`
      WITH deleted AS (
        DELETE FROM ${OUTBOX} WHERE ${c('id')} IN (
          SELECT ${c('id')} FROM ${OUTBOX}
           WHERE ${c('created_at')} < now() - ${retentionMs} * interval '1 millisecond'
             AND ${c('published_at')} < now() - ${retentionMs} * interval '1 millisecond'
           ORDER BY ${c('created_at')} LIMIT 10000)
        RETURNING ${c('id')}, ${c('message')}, ${c('created_at')}
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
 * Re-publishing an order's events (the console's action): its published events still in the outbox are made
 * pending again, with their ids, sequences and bodies unchanged, and the relay is hinted. The relay publishes
 * them again in sequence order, each with the same CloudEvents id and AMQP messageId, so a consumer that
 * deduplicates by id (as docs/asyncapi.yaml asks of every consumer: delivery is at least once) ignores those it
 * has, and one that lost them gets them. Nothing new is written: no event is invented, none reordered. Events
 * already deleted after OUTBOX_RETENTION cannot be re-published; the answer says how many were.
 */
export async function republishOrderEvents(db: Db, orderId: string): Promise<{ republished: number }> {
  return db.transaction().execute(async (trx) => {
    const rows = await trx
      .updateTable('outbox_events')
      .set({ published_at: null, attempts: 0, next_attempt_at: sql`now()`, last_error: null, unrouted_at: null })
      .where('order_id', '=', orderId)
      .where('published_at', 'is not', null)
      .returning('id')
      .execute();
    if (rows.length > 0) await sql`SELECT ${relayHint}`.execute(trx);
    return { republished: rows.length };
  });
}

/** Pending events and the creation time of the oldest, from the small partial index of pending rows (metrics). */
export async function readOutboxBacklog(db: Db): Promise<OutboxBacklog> {
  const row = await db
    .selectFrom('outbox_events')
    .select((eb) => [
      eb.fn.countAll<string>().as('pending'),
      sql<string | null>`extract(epoch from min(${c('created_at')}))`.as('oldest'),
    ])
    .where('published_at', 'is', null)
    .executeTakeFirstOrThrow();
  return { pending: Number(row.pending), oldestCreatedAtSeconds: row.oldest === null ? 0 : Number(row.oldest) };
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

/** The oldest pending events, at most EVENT_COUNT_BOUND + 1, through outbox_events_pending (by age). */
const oldestPending = (db: Db) =>
  db
    .selectFrom('outbox_events')
    .select(['order_id', 'created_at', 'last_error'])
    .where('published_at', 'is', null)
    .orderBy('created_at')
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

/** An order's events still in the outbox (published ones go after OUTBOX_RETENTION), in sequence, at most `limit`. */
export async function eventsOfOrder(db: Db, orderId: string, limit: number): Promise<StoredEventRow[]> {
  const rows = await db
    .selectFrom('outbox_events')
    .select([
      'id',
      'sequence',
      'type',
      'message',
      'created_at',
      'published_at',
      'unrouted_at',
      'attempts',
      'last_error',
    ])
    // '-infinity' (due at once) reads back as a string: none.
    .select((eb) => eb.fn<Date | null>('nullif', [eb.ref('next_attempt_at'), sql.lit('-infinity')]).as('due_at'))
    .where('order_id', '=', orderId)
    .orderBy('sequence')
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
 * (created_at) when one is given; in the order the relay publishes them (created, then per-order sequence).
 */
export async function selectEvents(db: Db, selection: ReplaySelection): Promise<StoredEvent[]> {
  let query = db
    .selectFrom('outbox_events')
    .select(['id', 'order_id', 'sequence', 'type', 'message', 'created_at', 'published_at'])
    .orderBy('created_at')
    .orderBy('order_id')
    .orderBy('sequence');
  if (selection.ids.length > 0 || selection.orders.length > 0) {
    query = query.where((eb) =>
      eb.or([
        ...(selection.ids.length > 0 ? [eb('id', 'in', selection.ids)] : []),
        ...(selection.orders.length > 0 ? [eb('order_id', 'in', selection.orders)] : []),
      ]),
    );
  }
  if (selection.types.length > 0) query = query.where('type', 'in', selection.types);
  if (selection.since) query = query.where('created_at', '>=', selection.since);
  if (selection.until) query = query.where('created_at', '<', selection.until);
  return query.execute();
}
