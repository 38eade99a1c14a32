import { sql, type Transaction } from 'kysely';
import type { OrderNotification, RefundNotification } from '../parsing/notification';
import type { Selectable } from 'kysely';
import type { Database, OrdersTable, RefundsTable } from '../recording/schema';
import type { TransitionOutcome } from '../recording/statusRules';
import { buildEvent, statusEventType, type CloudEvent, type OrderEventData, type RefundEventData } from './events';

type Trx = Transaction<Database>;

/** LISTEN/NOTIFY channel the relay wakes up on (a hint only: the relay also polls). */
export const OUTBOX_CHANNEL = 'outbox_events';

interface EventInput<N, Row> {
  notification: N;
  notificationId: string;
  outcome: Exclude<TransitionOutcome, 'stale'>;
  previousStatus: string | null;
  projection: Row;
}

/** The next per-order sequence. The row lock it takes orders concurrent writers of one order. */
async function nextSequence(trx: Trx, orderId: string): Promise<number> {
  const row = await trx
    .insertInto('event_streams')
    .values({ order_id: orderId, last_sequence: 1 })
    .onConflict((oc) => oc.column('order_id').doUpdateSet({ last_sequence: sql<number>`event_streams.last_sequence + 1` }))
    .returning('last_sequence')
    .executeTakeFirstOrThrow();
  return Number(row.last_sequence);
}

async function insertEvent(trx: Trx, event: CloudEvent<OrderEventData | RefundEventData>): Promise<void> {
  await trx
    .insertInto('outbox_events')
    .values({
      id: event.id,
      order_id: event.subject,
      sequence: event.data.sequence,
      type: event.type,
      message: JSON.stringify(event),
    })
    .execute();
  // Delivered at commit, at most once per transaction whatever the number of events.
  await sql`SELECT pg_notify(${OUTBOX_CHANNEL}, '')`.execute(trx);
}

export async function writeOrderEvent(trx: Trx, source: string, input: EventInput<OrderNotification, Selectable<OrdersTable>>): Promise<void> {
  const { notification: n, projection: p, outcome } = input;
  const conflict = outcome === 'conflict';
  const sequence = await nextSequence(trx, n.orderId);
  const data: OrderEventData = {
    orderId: n.orderId,
    extOrderId: p.ext_order_id,
    merchantPosId: p.merchant_pos_id,
    status: n.status,
    previousStatus: conflict ? p.status : input.previousStatus,
    totalAmount: p.total_amount,
    currencyCode: p.currency_code,
    paymentId: p.payment_id,
    payMethodType: p.pay_method_type,
    localReceiptDateTime: p.local_receipt_date_time,
    sequence,
    notificationId: input.notificationId,
  };
  await insertEvent(trx, buildEvent(source, statusEventType('order', n.status, conflict), data));
}

export async function writeRefundEvent(trx: Trx, source: string, input: EventInput<RefundNotification, Selectable<RefundsTable>>): Promise<void> {
  const { notification: n, projection: p, outcome } = input;
  const conflict = outcome === 'conflict';
  const sequence = await nextSequence(trx, n.orderId);
  const data: RefundEventData = {
    orderId: p.order_id,
    extOrderId: p.ext_order_id,
    refundId: p.refund_id,
    ...(p.ext_refund_id !== null ? { extRefundId: p.ext_refund_id } : {}),
    amount: p.amount,
    currencyCode: p.currency_code,
    status: n.status,
    previousStatus: conflict ? p.status : input.previousStatus,
    statusDateTime: p.status_date_time,
    refundDate: p.refund_date,
    reason: p.reason,
    reasonDescription: p.reason_description,
    sequence,
    notificationId: input.notificationId,
  };
  await insertEvent(trx, buildEvent(source, statusEventType('refund', n.status, conflict), data));
}
