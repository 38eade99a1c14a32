import { sql } from 'kysely';
import { columnsOf } from '../../database/columns';
import type { Db } from '../../database/pool';
import type { DeliveryOutcome } from '../../domain/outcomes';
import { DELIVERY_COLUMNS, deliveryFromRow, type DeliveryRow } from '../../orderStory/orderStoryQueries';
import { DELIVERY_AFTER_FIRST_MS, PAGE_SIZE } from '../frame/listBounds';

/** The recent deliveries list (the audit trail and the quarantine are read by their own query modules). */

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

const d = columnsOf('deliveries', 'd');
const n = columnsOf('notifications', 'n');

/**
 * Recent deliveries, newest first, within a bounded window (its days' partitions only), each with the order and
 * status it delivered: its notification, found by id in its own day, a second statement by primary key for the page.
 */
export async function deliveriesPage(db: Db, filter: DeliveryFilter): Promise<ListedDelivery[]> {
  let query = db
    .selectFrom('deliveries as d')
    .select(DELIVERY_COLUMNS)
    // As Postgres writes it, to the microsecond: a JavaScript Date would cut it, and never find its notification.
    .select(sql<string>`${d('notification_received_at')}::text`.as('notification_at'))
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
 * values, where a join would be planned over every day's), each row by its primary key.
 */
async function notificationsOf(
  db: Db,
  refs: ReadonlyArray<{ id: string; at: string }>,
): Promise<Map<string, NonNullable<ListedDelivery['delivered']>>> {
  if (refs.length === 0) return new Map();
  const rows = await db
    .selectFrom('notifications as n')
    .select(['n.id', 'n.order_id', 'n.kind', 'n.subject_id', 'n.status'])
    .where(sql<boolean>`${n('received_at')} = ANY(${[...new Set(refs.map((r) => r.at))]}::timestamptz[])`)
    .where(sql<boolean>`${n('id')} = ANY(${refs.map((r) => r.id)}::bigint[])`)
    .execute();
  return new Map(
    rows.map((row) => [
      row.id,
      { orderId: row.order_id, kind: row.kind, subjectId: row.subject_id, status: row.status },
    ]),
  );
}
