import { sql, type Selectable } from 'kysely';
import type { Db } from '../database/pool';
import type { QuarantinedNotificationsTable } from '../database/schema';
import { queries, statement, type Statement } from '../database/transaction';

/**
 * Every query of the quarantine (quarantined_notifications, sql/001 and sql/004) but the recorder's own write
 * (batchQueries.ts): a row locked for a retry and its resolution, the open ones people list, count and retry in
 * bulk, and the command line's list with their deliveries.
 */

/** A quarantined notification, locked for the rest of the retry's transaction (SELECT ... FOR UPDATE). */
export const lockQuarantined = (id: string): Statement<Selectable<QuarantinedNotificationsTable>> =>
  statement(queries.selectFrom('quarantined_notifications').selectAll().where('id', '=', id).forUpdate());

/** Where a quarantined body was first delivered from, and how long the sender said it took. */
export const firstDeliveryOfQuarantined = (
  id: string,
): Statement<{ source_address: string | null; processing_time_ms: number | null }> =>
  statement(
    queries
      .selectFrom('deliveries')
      .select(['source_address', 'processing_time_ms'])
      .where('quarantine_id', '=', id)
      .orderBy('id')
      .limit(1),
  );

/** Marks a quarantined notification resolved now, saying how. */
export const resolveQuarantined = (id: string, resolution: string): Statement =>
  statement(
    queries
      .updateTable('quarantined_notifications')
      .set({ resolved_at: sql`now()`, resolution })
      .where('id', '=', id),
  );

export interface QuarantineRow {
  id: string;
  receivedAt: Date;
  reason: string;
  detail: string;
  posId: string;
}

/** Filter of the quarantined notifications a bulk retry takes: open ones, optionally of one reason or POS. */
export interface QuarantineFilter {
  reason: string | null;
  posId: string | null;
}

function openQuarantine(db: Db, filter: QuarantineFilter) {
  let query = db.selectFrom('quarantined_notifications').where('resolved_at', 'is', null);
  if (filter.reason !== null) query = query.where('reason', '=', filter.reason);
  if (filter.posId !== null) query = query.where('pos_id', '=', filter.posId);
  return query;
}

/** Open quarantined notifications, newest first, at most `limit`. */
export async function openQuarantined(db: Db, filter: QuarantineFilter, limit: number): Promise<QuarantineRow[]> {
  const rows = await openQuarantine(db, filter)
    .select(['id', 'received_at', 'reason', 'detail', 'pos_id'])
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
  return rows.map((q) => ({
    id: q.id,
    receivedAt: q.received_at,
    reason: q.reason,
    detail: q.detail,
    posId: q.pos_id,
  }));
}

/** How many open quarantined notifications match, counted up to `bound` + 1 (more: "more than bound"). */
export async function countOpenQuarantined(db: Db, filter: QuarantineFilter, bound: number): Promise<number> {
  const row = await db
    .selectFrom(
      openQuarantine(db, filter)
        .select('id')
        .limit(bound + 1)
        .as('matching'),
    )
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}

/** The ids of the open quarantined notifications matching, oldest first, at most `bound` (null: all). */
export async function openQuarantinedIds(db: Db, filter: QuarantineFilter, bound: number | null): Promise<string[]> {
  const query = openQuarantine(db, filter).select('id').orderBy('id');
  return (await (bound === null ? query : query.limit(bound)).execute()).map((r) => r.id);
}

/** A quarantined notification as the command line lists it. */
export interface QuarantineListRow {
  id: string;
  receivedAt: Date;
  reason: string;
  detail: string;
  posId: string;
  keyFingerprint: string;
  bodySha256: Buffer;
  /** null once purged. */
  bodyBytes: number | null;
  /** Its deliveries, those counted without a row (past the first 100) included. */
  deliveries: number;
  resolvedAt: Date | null;
  resolution: string | null;
}

/** Quarantined notifications in id order, at most `limit`; only the open ones with `open`. */
export async function listQuarantined(db: Db, { open, limit }: { open: boolean; limit: number }) {
  let query = db
    .selectFrom('quarantined_notifications as q')
    .select([
      'q.id',
      'q.received_at',
      'q.reason',
      'q.detail',
      'q.pos_id',
      'q.key_fingerprint',
      'q.body_sha256',
      'q.resolved_at',
      'q.resolution',
    ])
    .select((eb) => [
      eb.fn<number | null>('octet_length', ['q.body']).as('body_bytes'),
      eb
        .selectFrom('deliveries as d')
        .select((d) => d.fn.countAll<string>().as('c'))
        .whereRef('d.quarantine_id', '=', 'q.id')
        .as('deliveries'),
      eb
        .selectFrom('delivery_repeats as r')
        .select('r.deliveries')
        .whereRef('r.quarantine_id', '=', 'q.id')
        .as('repeats'),
    ])
    .orderBy('q.id')
    .limit(limit);
  if (open) query = query.where('q.resolved_at', 'is', null);
  return (await query.execute()).map((q): QuarantineListRow => ({
    id: q.id,
    receivedAt: q.received_at,
    reason: q.reason,
    detail: q.detail,
    posId: q.pos_id,
    keyFingerprint: q.key_fingerprint,
    bodySha256: q.body_sha256,
    bodyBytes: q.body_bytes === null ? null : Number(q.body_bytes),
    deliveries: Number(q.deliveries ?? 0) + Number(q.repeats ?? 0),
    resolvedAt: q.resolved_at,
    resolution: q.resolution,
  }));
}

/** One quarantined notification, whole: the console's page of it. */
export interface QuarantinedNotification extends QuarantineRow {
  keyFingerprint: string;
  bodySha256: string;
  /** null once purged (BODY_RETENTION). */
  body: Buffer | null;
  resolvedAt: Date | null;
  resolution: string | null;
}

export async function quarantinedNotification(db: Db, id: string): Promise<QuarantinedNotification | null> {
  const row = await db.selectFrom('quarantined_notifications').selectAll().where('id', '=', id).executeTakeFirst();
  return row
    ? {
        id: row.id,
        receivedAt: row.received_at,
        reason: row.reason,
        detail: row.detail,
        posId: row.pos_id,
        keyFingerprint: row.key_fingerprint,
        bodySha256: row.body_sha256.toString('hex'),
        body: row.body,
        resolvedAt: row.resolved_at,
        resolution: row.resolution,
      }
    : null;
}

/** When the oldest notification still set aside arrived (quarantined_notifications_open, by id); null: none. */
export async function oldestOpenQuarantined(db: Db): Promise<Date | null> {
  const row = await db
    .selectFrom('quarantined_notifications')
    .select('received_at')
    .where('resolved_at', 'is', null)
    .orderBy('id')
    .limit(1)
    .executeTakeFirst();
  return row?.received_at ?? null;
}
