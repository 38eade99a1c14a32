import { sql, type RawBuilder, type Selectable, type Transaction } from 'kysely';
import type { Notification, OrderNotification, RefundNotification } from '../parsing/notification';
import { notificationSubject } from '../parsing/notification';
import type { QuarantineReason } from '../parsing/parseNotification';
import { writeOrderEvent, writeRefundEvent } from '../outbox/writeEvent';
import type { Db } from './database';
import type { Database, DeliveryOutcome, OrdersTable, RefundsTable } from './schema';
import {
  decideOrderTransition,
  decideRefundTransition,
  ORDER_STATUS_RANK,
  REFUND_STATUS_RANK,
  type TransitionOutcome,
} from './statusRules';

type Trx = Transaction<Database>;

/** One delivery attempt that passed verification. */
export interface Delivery {
  body: Buffer;
  bodySha256: Buffer;
  posId: string;
  keyFingerprint: string;
  sourceAddress: string | null;
  /** Svc-Processing-Time header: milliseconds the sender spent before its first attempt. */
  processingTimeMs: number | null;
}

export interface RecordResult {
  outcome: DeliveryOutcome;
  /** A repeat with the same meaning but body bytes not seen before. */
  newVariant: boolean;
  notificationId: string | null;
  quarantineId: string | null;
  /** Events written to the outbox in this transaction. */
  eventsWritten: number;
  /** For stale and conflict outcomes: the status the projection keeps. */
  currentStatus: string | null;
}

export interface RecordingContext {
  eventSource: string;
}

const DELIVERY_OUTCOME: Record<TransitionOutcome, DeliveryOutcome> = {
  applied: 'accepted',
  stale: 'stale',
  conflict: 'conflict',
};

async function insertDelivery(
  trx: Trx,
  delivery: Delivery,
  outcome: DeliveryOutcome,
  refs: { notificationId?: string; quarantineId?: string },
): Promise<void> {
  await trx
    .insertInto('deliveries')
    .values({
      source_address: delivery.sourceAddress,
      processing_time_ms: delivery.processingTimeMs,
      pos_id: delivery.posId,
      key_fingerprint: delivery.keyFingerprint,
      body_sha256: delivery.bodySha256,
      outcome,
      notification_id: refs.notificationId ?? null,
      quarantine_id: refs.quarantineId ?? null,
    })
    .execute();
}

/** A repeat of a recorded meaning: count it, keep its bytes if they are new, change nothing else. */
async function recordRepeat(trx: Trx, delivery: Delivery, n: Notification): Promise<RecordResult> {
  const existing = await trx
    .selectFrom('notifications')
    .select(['id', 'body_sha256', 'status', 'outcome'])
    .where('kind', '=', n.kind)
    .where('subject_id', '=', notificationSubject(n))
    .where('status', '=', n.status)
    .executeTakeFirstOrThrow();
  let newVariant = false;
  if (!existing.body_sha256.equals(delivery.bodySha256)) {
    const variant = await trx
      .insertInto('notification_variants')
      .values({ notification_id: existing.id, body_sha256: delivery.bodySha256, body: delivery.body })
      .onConflict((oc) => oc.columns(['notification_id', 'body_sha256']).doNothing())
      .returning('notification_id')
      .executeTakeFirst();
    newVariant = variant !== undefined;
  }
  await insertDelivery(trx, delivery, 'duplicate', { notificationId: existing.id });
  return { outcome: 'duplicate', newVariant, notificationId: existing.id, quarantineId: null, eventsWritten: 0, currentStatus: null };
}

interface Applied<Row> {
  outcome: TransitionOutcome;
  previousStatus: string | null;
  /** The projection after this notification (unchanged unless applied). */
  projection: Row;
}

/** Later fields win, but a notification that lacks a field (CANCELED has no buyer) keeps the old one. */
const keep = (table: string, column: string): RawBuilder<string | null> =>
  sql.raw<string | null>(`coalesce(excluded.${column}, ${table}.${column})`);

async function applyOrder(trx: Trx, n: OrderNotification): Promise<Applied<Selectable<OrdersTable>>> {
  // The loop runs twice only when two first notifications of one order race: the loser re-reads
  // the row the winner created (now locked) and decides again.
  for (;;) {
    const current = await trx.selectFrom('orders').selectAll().where('order_id', '=', n.orderId).forUpdate().executeTakeFirst();
    const outcome = decideOrderTransition((current?.status as OrderNotification['status'] | undefined) ?? null, n.status);
    if (outcome !== 'applied') return { outcome, previousStatus: current?.status ?? null, projection: current as Selectable<OrdersTable> };
    const updated = await trx
      .insertInto('orders')
      .values({
        order_id: n.orderId,
        ext_order_id: n.extOrderId,
        merchant_pos_id: n.merchantPosId,
        status: n.status,
        status_rank: ORDER_STATUS_RANK[n.status],
        total_amount: n.totalAmount,
        currency_code: n.currencyCode,
        payment_id: n.paymentId,
        pay_method_type: n.payMethodType,
        local_receipt_date_time: n.localReceiptDateTime,
      })
      .onConflict((oc) =>
        oc
          .column('order_id')
          .doUpdateSet({
            status: sql.raw<string>('excluded.status'),
            status_rank: sql.raw<number>('excluded.status_rank'),
            ext_order_id: keep('orders', 'ext_order_id'),
            merchant_pos_id: keep('orders', 'merchant_pos_id'),
            total_amount: keep('orders', 'total_amount'),
            currency_code: keep('orders', 'currency_code'),
            payment_id: keep('orders', 'payment_id'),
            pay_method_type: keep('orders', 'pay_method_type'),
            local_receipt_date_time: keep('orders', 'local_receipt_date_time'),
            updated_at: sql`now()`,
          })
          // Forward only, checked atomically (statusRules.ts: final statuses hold the top rank).
          .where('orders.status_rank', '<', sql.raw<number>('excluded.status_rank')),
      )
      .returningAll()
      .executeTakeFirst();
    if (updated) return { outcome, previousStatus: current?.status ?? null, projection: updated };
  }
}

async function applyRefund(trx: Trx, n: RefundNotification): Promise<Applied<Selectable<RefundsTable>>> {
  for (;;) {
    const current = await trx.selectFrom('refunds').selectAll().where('refund_id', '=', n.refundId).forUpdate().executeTakeFirst();
    const outcome = decideRefundTransition((current?.status as RefundNotification['status'] | undefined) ?? null, n.status);
    if (outcome !== 'applied') return { outcome, previousStatus: current?.status ?? null, projection: current as Selectable<RefundsTable> };
    const updated = await trx
      .insertInto('refunds')
      .values({
        refund_id: n.refundId,
        order_id: n.orderId,
        ext_order_id: n.extOrderId,
        ext_refund_id: n.extRefundId,
        status: n.status,
        status_rank: REFUND_STATUS_RANK[n.status],
        amount: n.amount,
        currency_code: n.currencyCode,
        status_date_time: n.statusDateTime,
        refund_date: n.refundDate,
        reason: n.reason,
        reason_description: n.reasonDescription,
      })
      .onConflict((oc) =>
        oc
          .column('refund_id')
          .doUpdateSet({
            status: sql.raw<string>('excluded.status'),
            status_rank: sql.raw<number>('excluded.status_rank'),
            ext_order_id: keep('refunds', 'ext_order_id'),
            ext_refund_id: keep('refunds', 'ext_refund_id'),
            amount: keep('refunds', 'amount'),
            currency_code: keep('refunds', 'currency_code'),
            status_date_time: keep('refunds', 'status_date_time'),
            refund_date: keep('refunds', 'refund_date'),
            reason: keep('refunds', 'reason'),
            reason_description: keep('refunds', 'reason_description'),
            updated_at: sql`now()`,
          })
          .where('refunds.status_rank', '<', sql.raw<number>('excluded.status_rank')),
      )
      .returningAll()
      .executeTakeFirst();
    if (updated) return { outcome, previousStatus: current?.status ?? null, projection: updated };
  }
}

/**
 * Records one verified notification inside the caller's transaction: the notification (deduplicated
 * by meaning through a unique constraint, never by a prior read), the projection change, the
 * outbox event, and the delivery. Nothing here is visible until the caller commits.
 */
export async function recordNotificationIn(
  trx: Trx,
  context: RecordingContext,
  delivery: Delivery,
  n: Notification,
): Promise<RecordResult> {
  const inserted = await trx
    .insertInto('notifications')
    .values({
      kind: n.kind,
      subject_id: notificationSubject(n),
      status: n.status,
      order_id: n.orderId,
      outcome: 'applied',
      pos_id: delivery.posId,
      key_fingerprint: delivery.keyFingerprint,
      body: delivery.body,
      body_sha256: delivery.bodySha256,
      parsed: JSON.stringify(n),
    })
    .onConflict((oc) => oc.constraint('notifications_meaning').doNothing())
    .returning('id')
    .executeTakeFirst();
  if (!inserted) return recordRepeat(trx, delivery, n);
  const notificationId = inserted.id;

  let outcome: TransitionOutcome;
  let previousStatus: string | null;
  let eventsWritten = 0;
  if (n.kind === 'order') {
    const applied = await applyOrder(trx, n);
    ({ outcome, previousStatus } = applied);
    if (outcome !== 'stale') {
      await writeOrderEvent(trx, context.eventSource, { notification: n, notificationId, outcome, previousStatus, projection: applied.projection });
      eventsWritten = 1;
    }
  } else {
    const applied = await applyRefund(trx, n);
    ({ outcome, previousStatus } = applied);
    if (outcome !== 'stale') {
      await writeRefundEvent(trx, context.eventSource, { notification: n, notificationId, outcome, previousStatus, projection: applied.projection });
      eventsWritten = 1;
    }
  }
  if (outcome !== 'applied') {
    await trx.updateTable('notifications').set({ outcome }).where('id', '=', notificationId).execute();
  }
  await insertDelivery(trx, delivery, DELIVERY_OUTCOME[outcome], { notificationId });
  return {
    outcome: DELIVERY_OUTCOME[outcome],
    newVariant: false,
    notificationId,
    quarantineId: null,
    eventsWritten,
    currentStatus: outcome === 'applied' ? null : previousStatus,
  };
}

/** Keeps an authentic body that could not be read, with the reason, for `quarantine retry` later. */
export async function recordQuarantineIn(
  trx: Trx,
  delivery: Delivery,
  reason: QuarantineReason,
  detail: string,
): Promise<RecordResult> {
  const row = await trx
    .insertInto('quarantined_notifications')
    .values({
      reason,
      detail,
      pos_id: delivery.posId,
      key_fingerprint: delivery.keyFingerprint,
      body: delivery.body,
      body_sha256: delivery.bodySha256,
    })
    // The same bytes again: one quarantine row, one more delivery. (No-op update to get the id back.)
    .onConflict((oc) => oc.column('body_sha256').doUpdateSet({ body_sha256: sql.raw('excluded.body_sha256') }))
    .returning('id')
    .executeTakeFirstOrThrow();
  await insertDelivery(trx, delivery, 'quarantined', { quarantineId: row.id });
  return { outcome: 'quarantined', newVariant: false, notificationId: null, quarantineId: row.id, eventsWritten: 0, currentStatus: null };
}

export function recordNotification(db: Db, context: RecordingContext, delivery: Delivery, n: Notification): Promise<RecordResult> {
  return db.transaction().execute((trx) => recordNotificationIn(trx, context, delivery, n));
}

export function recordQuarantine(db: Db, delivery: Delivery, reason: QuarantineReason, detail: string): Promise<RecordResult> {
  return db.transaction().execute((trx) => recordQuarantineIn(trx, delivery, reason, detail));
}
