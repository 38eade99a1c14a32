import { sql } from 'kysely';
import type { Db } from '../../database/pool';
import type { DeliveryOutcome } from '../../domain/outcomes';
import {
  auditFromRow,
  DELIVERY_AFTER_FIRST_MS,
  DELIVERY_COLUMNS,
  deliveryFromRow,
  PAGE_SIZE,
  type AuditRow,
  type DeliveryRow,
} from './rows';

/** The lists: the audit trail, recent deliveries, open quarantined notifications (and what a bulk retry takes). */

/** The audit trail, newest first, a page after the cursor (an audit id). */
export async function auditPage(db: Db, before: string | null): Promise<AuditRow[]> {
  let query = db
    .selectFrom('console_audit')
    .selectAll()
    .orderBy('id', 'desc')
    .limit(PAGE_SIZE + 1);
  if (before !== null) query = query.where('id', '<', before);
  return (await query.execute()).map(auditFromRow);
}

export interface DeliveryFilter {
  outcome: DeliveryOutcome | null;
  posId: string | null;
  from: Date;
  to: Date;
  /** A delivery id: the page starts below it. */
  before: string | null;
}
/** A delivery of the recent deliveries list, with what it delivered: its notification's order and status. */
export interface ListedDelivery extends DeliveryRow {
  /** Null for a quarantined body, or a notification whose day is gone (HISTORY_RETENTION). */
  delivered: { orderId: string; kind: 'order' | 'refund'; subjectId: string; status: string } | null;
}

/**
 * Recent deliveries, newest first, within a bounded window (its days' partitions only), each with the order and
 * status it delivered: its notification, found by id in its own day, a second statement by primary key for the page.
 */
export async function deliveriesPage(db: Db, filter: DeliveryFilter): Promise<ListedDelivery[]> {
  let query = db
    .selectFrom('deliveries as d')
    .select(DELIVERY_COLUMNS)
    // As Postgres writes it, to the microsecond: a JavaScript Date would cut it, and never find its notification.
    .select(sql<string>`${sql.ref('d.notification_received_at')}::text`.as('notification_at'))
    .where('d.notification_received_at', '>=', new Date(filter.from.getTime() - DELIVERY_AFTER_FIRST_MS))
    .where('d.notification_received_at', '<', filter.to)
    .where('d.received_at', '>=', filter.from)
    .where('d.received_at', '<', filter.to)
    .orderBy('d.id', 'desc')
    .limit(PAGE_SIZE + 1);
  if (filter.outcome !== null) query = query.where('d.outcome', '=', filter.outcome);
  if (filter.posId !== null) query = query.where('d.pos_id', '=', filter.posId);
  if (filter.before !== null) query = query.where('d.id', '<', filter.before);
  const rows = await query.execute();
  const delivered = await notificationsOf(
    db,
    rows.flatMap((r) => (r.notification_id === null ? [] : [{ id: r.notification_id, at: r.notification_at }])),
  );
  return rows.map((row) => ({
    ...deliveryFromRow(row),
    delivered: row.notification_id === null ? null : (delivered.get(row.notification_id) ?? null),
  }));
}

/**
 * The order and status of each notification, by id in its day: the days' partitions only (planned with the days as
 * values), each row by its primary key.
 */
async function notificationsOf(
  db: Db,
  refs: ReadonlyArray<{ id: string; at: string }>,
): Promise<Map<string, NonNullable<ListedDelivery['delivered']>>> {
  if (refs.length === 0) return new Map();
  const rows = await db
    .selectFrom('notifications as n')
    .select(['n.id', 'n.order_id', 'n.kind', 'n.subject_id', 'n.status'])
    .where(sql<boolean>`${sql.ref('n.received_at')} = ANY(${[...new Set(refs.map((r) => r.at))]}::timestamptz[])`)
    .where(sql<boolean>`${sql.ref('n.id')} = ANY(${refs.map((r) => r.id)}::bigint[])`)
    .execute();
  return new Map(
    rows.map((n) => [n.id, { orderId: n.order_id, kind: n.kind, subjectId: n.subject_id, status: n.status }]),
  );
}

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

/** Open quarantined notifications, newest first. */
export async function openQuarantined(db: Db, filter: QuarantineFilter, limit = PAGE_SIZE): Promise<QuarantineRow[]> {
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
  const { rows } = await sql<{ n: string }>`SELECT count(*) AS n FROM (${openQuarantine(db, filter)
    .select('id')
    .limit(bound + 1)}) AS matching`.execute(db);
  return Number(rows[0]?.n ?? 0);
}

/** The ids of the open quarantined notifications matching, oldest first, at most `bound`. */
export async function openQuarantinedIds(db: Db, filter: QuarantineFilter, bound: number): Promise<string[]> {
  const rows = await openQuarantine(db, filter).select('id').orderBy('id').limit(bound).execute();
  return rows.map((r) => r.id);
}

/** One quarantined notification, whole: its page. */
export interface QuarantinedNotification extends QuarantineRow {
  keyFingerprint: string;
  bodySha256: string;
  /** Null once purged (BODY_RETENTION). */
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
