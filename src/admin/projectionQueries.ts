import type { Db } from '../database/pool';
import { sql } from 'kysely';
import type { Disagreement, ObservedVia, RecordedStatuses } from '../database/schema';
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

/**
 * The status history of projections, through the statuses each recorded (its notification's id and day): only
 * those days' partitions are read, whatever the history's age. A status whose day retention removed is not shown.
 */
async function historyOf(
  db: Db,
  projections: ReadonlyArray<{ subjectId: string; recorded: RecordedStatuses }>,
): Promise<Map<string, StatusHistoryEntry[]>> {
  const result = new Map<string, StatusHistoryEntry[]>();
  const refs = projections.flatMap((p) => Object.values(p.recorded));
  if (refs.length === 0) return result;
  const ats = refs.map((r) => r.at);
  const ids = refs.map((r) => r.id);
  const inDays = (column: string) => sql<boolean>`${sql.ref(column)} = ANY(${ats}::timestamptz[])`;
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
        .where(inDays('d.notification_received_at'))
        .whereRef('d.notification_received_at', '=', 'n.received_at')
        .whereRef('d.notification_id', '=', 'n.id')
        .as('deliveries'),
      eb
        .selectFrom('delivery_repeats as r')
        .select('r.deliveries')
        .whereRef('r.notification_id', '=', 'n.id')
        .as('repeats'),
    ])
    .where(inDays('n.received_at'))
    .where(sql<boolean>`n.id = ANY(${ids}::bigint[])`)
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
    rows.map((r) => ({ subjectId: r.refund_id, recorded: r.recorded })),
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
    historyOf(db, [{ subjectId: orderId, recorded: order.recorded }]),
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
