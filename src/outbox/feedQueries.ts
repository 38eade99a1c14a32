import { sql } from 'kysely';
import { columnsOf, type Table } from '../database/columns';
import type { Db } from '../database/pool';
import type { EventType } from './cloudEvents';

/**
 * The event feed (GET /events) and what a replay reads: the outbox's events in the order they were stored
 * (created_at, then id), a bounded page at a time after a keyset cursor. Each page walks outbox_events_by_time
 * (sql/011) from the cursor, or, for one order, its (order_id, sequence) index: it reads at most `limit` rows, or
 * SCAN_BOUND when filtering by type (the page may then hold fewer events than asked, or none, and says there is
 * more), whatever the outbox's size.
 */

/** Rows a page filtered by type reads at most. */
export const SCAN_BOUND = 5000;
export const FEED_LIMIT_MAX = 1000;

/** A place in the feed: the last event read, as stored (created_at with its microseconds, as text) and its id. */
export interface FeedCursor {
  at: string;
  id: string;
}

export interface FeedQuery {
  /** When the events were stored, from (inclusive) and until (exclusive). */
  since: Date | null;
  until: Date | null;
  /** Only these types (none: all). */
  types: readonly EventType[];
  orderId: string | null;
  after: FeedCursor | null;
  limit: number;
}

export interface FeedEvent {
  id: string;
  type: string;
  /** The CloudEvent as published (the outbox's text). */
  message: string;
  createdAt: Date;
}

export interface FeedPage {
  events: FeedEvent[];
  /** Where the next page starts: after the last event read (or the last row scanned); null only when none was. */
  next: FeedCursor | null;
  /** The page ended at its limit or its scan bound, not at the end of the range: ask again at once. */
  more: boolean;
}

const OUTBOX = 'outbox_events' satisfies Table;
const o = columnsOf('outbox_events', 'o');
const c = columnsOf('outbox_events');

interface Row {
  id: string;
  type: string;
  at: string;
  created_at: Date;
  message: string;
}

/**
 * Events are stored with created_at = clock_timestamp() by transactions that commit later; one still running may
 * yet commit an event before those already visible. The feed stops short of the oldest transaction in progress
 * (its start bounds every created_at it will write), read before the page's own snapshot, so a page never passes
 * an event that commits afterwards.
 */
async function horizon(db: Db): Promise<string> {
  const { rows } = await sql<{ horizon: string }>`
    SELECT to_json(least(statement_timestamp(),
             (SELECT min(xact_start) FROM pg_stat_activity
               WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()
                 AND datname = current_database())))#>>'{}' AS horizon`.execute(db);
  return (rows[0] as { horizon: string }).horizon;
}

export async function readFeedPage(db: Db, q: FeedQuery): Promise<FeedPage> {
  const before = await horizon(db);
  // The range, in stored order: each page walks outbox_events_by_time (created_at, id) from the cursor, or the
  // (order_id, sequence) index for one order.
  const range = (...columns: ReturnType<typeof o>[]) => sql`
    SELECT ${sql.join(columns)}
      FROM ${sql.table(OUTBOX)} o
     WHERE ${o('created_at')} < ${before}::timestamptz
       ${q.until ? sql`AND ${o('created_at')} < ${q.until}` : sql``}
       ${q.since ? sql`AND ${o('created_at')} >= ${q.since}` : sql``}
       ${q.after ? sql`AND (${o('created_at')}, ${o('id')}) > (${q.after.at}::timestamptz, ${q.after.id}::uuid)` : sql``}
       ${q.orderId !== null ? sql`AND ${o('order_id')} = ${q.orderId}` : sql``}
     ORDER BY ${o('created_at')}, ${o('id')}`;
  const filtered = q.types.length > 0;
  // Filtered by type, the walk stops at `limit` matches or SCAN_BOUND rows, whichever comes first (the outer
  // query pulls rows one at a time and keeps their order).
  const { rows } = await sql<Row>`
    SELECT ${c('id')}, ${c('type')}, ${c('created_at')}, ${c('message')}, to_json(${c('created_at')})#>>'{}' AS at
      FROM (${range(o('id'), o('type'), o('created_at'), o('message'))} LIMIT ${filtered ? SCAN_BOUND : q.limit}) s
     ${filtered ? sql`WHERE ${c('type')} = ANY(${q.types}::text[])` : sql``}
     LIMIT ${q.limit}`.execute(db);
  const events = rows.map((r) => ({ id: r.id, type: r.type, message: r.message, createdAt: r.created_at }));
  const final = rows[rows.length - 1];
  if (!filtered || rows.length === q.limit)
    return { events, next: final ? { at: final.at, id: final.id } : q.after, more: rows.length === q.limit };
  // Fewer matches than asked: the walk read the range to its end, or to its bound. Where it stopped (from the
  // index alone), and whether it read all it could.
  const last = sql`ORDER BY ${c('created_at')} DESC, ${c('id')} DESC`;
  const { rows: ends } = await sql<{ at: string | null; id: string | null; scanned: number }>`
    SELECT count(*)::int AS scanned, (array_agg(to_json(${c('created_at')})#>>'{}' ${last}))[1] AS at,
           (array_agg(${c('id')} ${last}))[1] AS id
      FROM (${range(o('created_at'), o('id'))} LIMIT ${SCAN_BOUND}) k`.execute(db);
  const end = ends[0];
  return {
    events,
    next: end?.at && end.id ? { at: end.at, id: end.id } : q.after,
    more: end?.scanned === SCAN_BOUND,
  };
}
