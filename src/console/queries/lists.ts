import { sql } from 'kysely';
import { columnsOf } from '../../database/columns';
import type { Db } from '../../database/pool';
import type { DeliveryOutcome } from '../../domain/outcomes';
import { DELIVERY_COLUMNS, deliveryFromRow, type DeliveryRow } from '../../orderStory/orderStoryQueries';
import { DELIVERY_AFTER_FIRST_MS, PAGE_SIZE } from './rows';

/** The recent deliveries list (the audit trail and the quarantine are read by their own query modules). */

export interface DeliveryFilter {
  outcome: DeliveryOutcome | null;
  posId: string | null;
  from: Date;
  to: Date;
  /** A delivery id: the page starts below it. */
  before: string | null;
}

/** Recent deliveries, newest first, within a bounded window (its days' partitions only). */
export async function deliveriesPage(db: Db, filter: DeliveryFilter): Promise<DeliveryRow[]> {
  let query = db
    .selectFrom('deliveries as d')
    .select(DELIVERY_COLUMNS)
    .where('d.notification_received_at', '>=', new Date(filter.from.getTime() - DELIVERY_AFTER_FIRST_MS))
    .where('d.notification_received_at', '<', filter.to)
    .where('d.received_at', '>=', filter.from)
    .where('d.received_at', '<', filter.to)
    .orderBy('d.id', 'desc')
    .limit(PAGE_SIZE + 1);
  if (filter.outcome !== null) query = query.where('d.outcome', '=', filter.outcome);
  if (filter.posId !== null) query = query.where('d.pos_id', '=', filter.posId);
  if (filter.before !== null) query = query.where('d.id', '<', filter.before);
  return (await query.execute()).map(deliveryFromRow);
}

const n = columnsOf('notifications');

/** The order a delivery concerns, for links from lists: through its notification, in its day. */
export async function ordersOfNotifications(
  db: Db,
  refs: ReadonlyArray<{ id: string; at: Date }>,
): Promise<Map<string, string>> {
  if (refs.length === 0) return new Map();
  const rows = await db
    .selectFrom('notifications')
    .select(['id', 'order_id'])
    .where(sql<boolean>`${n('received_at')} = ANY(${refs.map((r) => r.at.toISOString())}::timestamptz[])`)
    .where(sql<boolean>`${n('id')} = ANY(${refs.map((r) => r.id)}::bigint[])`)
    .execute();
  return new Map(rows.map((r) => [r.id, r.order_id]));
}
