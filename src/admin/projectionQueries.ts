import type { Db } from '../database/pool';
import type { Disagreement, ObservedVia } from '../database/schema';
import type { OrderProjection, RefundProjection } from '../recording/projection';
import { orderFromRow, refundFromRow } from '../recording/projectionRows';

export interface StatusHistoryEntry {
  status: string;
  /** When the first delivery of this status arrived. */
  receivedAt: string;
  /** Whether this notification moved the projection. */
  applied: boolean;
  outcome: 'applied' | 'stale' | 'conflict';
  /** Every delivery of it, those counted without a row of their own (delivery_repeats) included. */
  deliveries: number;
  /** Facts it stated otherwise than the projection keeps (the projection kept its own values). */
  disagreements: Disagreement[];
  /** How it was first learned: a notification, or reconciliation against the payment API. */
  observedVia: ObservedVia;
}

/** A refund as the admin API shows it: the projection, its last change and its status history. */
export interface RefundView extends Omit<RefundProjection, 'status'> {
  status: string;
  updatedAt: string;
  history: StatusHistoryEntry[];
}

/** An order as the admin API shows it, with its refunds. */
export interface OrderView extends Omit<OrderProjection, 'status'> {
  status: string;
  updatedAt: string;
  history: StatusHistoryEntry[];
  refunds: RefundView[];
}

async function historyOf(
  db: Db,
  kind: 'order' | 'refund',
  subjectIds: string[],
): Promise<Map<string, StatusHistoryEntry[]>> {
  const result = new Map<string, StatusHistoryEntry[]>();
  if (subjectIds.length === 0) return result;
  const rows = await db
    .selectFrom('notifications as n')
    .select((eb) => [
      'n.subject_id',
      'n.status',
      'n.received_at',
      'n.outcome',
      'n.disagreements',
      'n.observed_via',
      eb
        .selectFrom('deliveries as d')
        .select((d) => d.fn.countAll<string>().as('c'))
        .whereRef('d.notification_id', '=', 'n.id')
        .as('deliveries'),
      eb
        .selectFrom('delivery_repeats as r')
        .select('r.deliveries')
        .whereRef('r.notification_id', '=', 'n.id')
        .as('repeats'),
    ])
    .where('n.kind', '=', kind)
    .where('n.subject_id', 'in', subjectIds)
    .orderBy('n.id')
    .execute();
  for (const row of rows) {
    const list = result.get(row.subject_id) ?? [];
    list.push({
      status: row.status,
      receivedAt: new Date(row.received_at).toISOString(),
      applied: row.outcome === 'applied',
      outcome: row.outcome,
      deliveries: Number(row.deliveries ?? 0) + Number(row.repeats ?? 0),
      disagreements: row.disagreements ?? [],
      observedVia: row.observed_via,
    });
    result.set(row.subject_id, list);
  }
  return result;
}

async function refundsWhere(db: Db, column: 'refund_id' | 'order_id', value: string): Promise<RefundView[]> {
  const rows = await db
    .selectFrom('refunds')
    .selectAll()
    .where(column, '=', value)
    .orderBy('created_at')
    .orderBy('refund_id')
    .execute();
  const histories = await historyOf(
    db,
    'refund',
    rows.map((r) => r.refund_id),
  );
  return rows.map((r) => ({
    ...refundFromRow(r),
    updatedAt: new Date(r.updated_at).toISOString(),
    history: histories.get(r.refund_id) ?? [],
  }));
}

export async function findOrder(db: Db, orderId: string): Promise<OrderView | null> {
  const order = await db.selectFrom('orders').selectAll().where('order_id', '=', orderId).executeTakeFirst();
  if (!order) return null;
  const [histories, refunds] = await Promise.all([
    historyOf(db, 'order', [orderId]),
    refundsWhere(db, 'order_id', orderId),
  ]);
  return {
    ...orderFromRow(order),
    updatedAt: new Date(order.updated_at).toISOString(),
    history: histories.get(orderId) ?? [],
    refunds,
  };
}

export async function findRefund(db: Db, refundId: string): Promise<RefundView | null> {
  const [refund] = await refundsWhere(db, 'refund_id', refundId);
  return refund ?? null;
}
