import { sql, type Transaction } from 'kysely';
import type { Notification } from '../parsing/notification';
import { notificationSubject } from '../parsing/notification';
import { OUTBOX_CHANNEL } from '../outbox/notifyChannel';
import {
  applyNotifications,
  orderRank,
  refundRank,
  type NewNotification,
  type OrderProjection,
  type ProjectionState,
  type RefundProjection,
} from './projection';
import type { Delivery, RecordingContext, RecordResult } from './recordNotification';
import type { Database, DeliveryOutcome } from './schema';
import type { TransitionOutcome } from './statusRules';

type Trx = Transaction<Database>;

export interface BatchItem {
  delivery: Delivery;
  notification: Notification;
}

const DELIVERY_OUTCOME: Record<TransitionOutcome, DeliveryOutcome> = { applied: 'accepted', stale: 'stale', conflict: 'conflict' };

const meaningOf = (n: Notification): string => `${n.kind}\u0000${notificationSubject(n)}\u0000${n.status}`;

/**
 * Serializes every writer of an order (its notifications, projection, refunds and event sequence)
 * for the rest of the transaction. Taken in one global order (sorted keys), so two transactions
 * holding several orders each can never deadlock. Rows that do not exist yet are covered too,
 * which row locks could not do.
 */
async function lockOrders(trx: Trx, orderIds: string[]): Promise<void> {
  await sql`SELECT pg_advisory_xact_lock(k)
              FROM (SELECT DISTINCT hashtextextended(o, 7316) AS k FROM unnest(${orderIds}::text[]) AS o ORDER BY k) AS keys`.execute(trx);
}

async function readState(trx: Trx, items: readonly BatchItem[]): Promise<ProjectionState> {
  const orderIds = [...new Set(items.map((i) => i.notification.orderId))];
  const refundIds = [...new Set(items.flatMap((i) => (i.notification.kind === 'refund' ? [i.notification.refundId] : [])))];
  const orders = items.some((i) => i.notification.kind === 'order')
    ? await trx.selectFrom('orders').selectAll().where('order_id', 'in', orderIds).execute()
    : [];
  const refunds = refundIds.length > 0 ? await trx.selectFrom('refunds').selectAll().where('refund_id', 'in', refundIds).execute() : [];
  const sequences = await trx.selectFrom('event_streams').selectAll().where('order_id', 'in', orderIds).execute();
  return {
    orders: new Map(
      orders.map((r): [string, OrderProjection] => [
        r.order_id,
        {
          orderId: r.order_id,
          extOrderId: r.ext_order_id,
          merchantPosId: r.merchant_pos_id,
          status: r.status as OrderProjection['status'],
          totalAmount: r.total_amount,
          currencyCode: r.currency_code,
          paymentId: r.payment_id,
          payMethodType: r.pay_method_type,
          localReceiptDateTime: r.local_receipt_date_time,
        },
      ]),
    ),
    refunds: new Map(
      refunds.map((r): [string, RefundProjection] => [
        r.refund_id,
        {
          refundId: r.refund_id,
          orderId: r.order_id,
          extOrderId: r.ext_order_id,
          extRefundId: r.ext_refund_id,
          status: r.status as RefundProjection['status'],
          amount: r.amount,
          currencyCode: r.currency_code,
          statusDateTime: r.status_date_time,
          refundDate: r.refund_date,
          reason: r.reason,
          reasonDescription: r.reason_description,
        },
      ]),
    ),
    sequences: new Map(sequences.map((s) => [s.order_id, Number(s.last_sequence)])),
  };
}

/**
 * Records notifications that arrived together, in the caller's transaction, with a fixed number
 * of statements whatever their count:
 *   lock the orders; insert the notifications (deduplicated by the unique constraint on their
 *   meaning); read the projections; apply (pure, projection.ts); write projections, sequences,
 *   outbox events, outcomes, variants and deliveries; notify the relay.
 * Items are processed in the order given (their arrival order).
 */
export async function recordBatchIn(trx: Trx, context: RecordingContext, items: readonly BatchItem[]): Promise<RecordResult[]> {
  if (items.length === 0) return [];
  await lockOrders(trx, items.map((i) => i.notification.orderId));

  // First occurrence of each meaning in this batch is the candidate; later ones are repeats of it.
  const firstOfMeaning = new Map<string, number>();
  items.forEach((item, index) => {
    const meaning = meaningOf(item.notification);
    if (!firstOfMeaning.has(meaning)) firstOfMeaning.set(meaning, index);
  });
  const candidates = [...firstOfMeaning.values()].map((index) => items[index] as BatchItem);
  const inserted = await trx
    .insertInto('notifications')
    .values(
      candidates.map(({ delivery, notification: n }) => ({
        kind: n.kind,
        subject_id: notificationSubject(n),
        status: n.status,
        order_id: n.orderId,
        outcome: 'applied' as const,
        pos_id: delivery.posId,
        key_fingerprint: delivery.keyFingerprint,
        body: delivery.body,
        body_sha256: delivery.bodySha256,
        parsed: JSON.stringify(n),
      })),
    )
    .onConflict((oc) => oc.constraint('notifications_meaning').doNothing())
    .returning(['id', 'kind', 'subject_id', 'status'])
    .execute();
  const newIds = new Map(inserted.map((r) => [`${r.kind}\u0000${r.subject_id}\u0000${r.status}`, r.id]));

  // Meanings recorded before this batch: their ids and first bodies, for deliveries and variants.
  const known = new Map<string, { id: string; bodySha256: Buffer }>();
  const repeatedMeanings = candidates.filter((c) => !newIds.has(meaningOf(c.notification)));
  if (repeatedMeanings.length > 0) {
    const rows = await trx
      .selectFrom('notifications')
      .select(['id', 'kind', 'subject_id', 'status', 'body_sha256'])
      .where((eb) =>
        eb.or(
          repeatedMeanings.map(({ notification: n }) =>
            eb.and([eb('kind', '=', n.kind), eb('subject_id', '=', notificationSubject(n)), eb('status', '=', n.status)]),
          ),
        ),
      )
      .execute();
    for (const r of rows) known.set(`${r.kind}\u0000${r.subject_id}\u0000${r.status}`, { id: r.id, bodySha256: r.body_sha256 });
  }
  for (const c of candidates) {
    const id = newIds.get(meaningOf(c.notification));
    if (id !== undefined) known.set(meaningOf(c.notification), { id, bodySha256: c.delivery.bodySha256 });
  }

  const fresh: NewNotification[] = candidates
    .filter((c) => newIds.has(meaningOf(c.notification)))
    .map((c) => ({ notificationId: newIds.get(meaningOf(c.notification)) as string, notification: c.notification }));
  const state = await readState(trx, items);
  const result = applyNotifications(state, fresh, context.eventSource);
  const outcomeOf = new Map(fresh.map((f, i) => [f.notificationId, result.applied[i]]));

  // Statements run one after another, each awaited: a statement still queued when an earlier one
  // failed would otherwise run after Kysely's ROLLBACK, outside the transaction.
  if (result.orders.length > 0) {
    await trx
      .insertInto('orders')
      .values(
        result.orders.map((p) => ({
          order_id: p.orderId,
          ext_order_id: p.extOrderId,
          merchant_pos_id: p.merchantPosId,
          status: p.status,
          status_rank: orderRank(p),
          total_amount: p.totalAmount,
          currency_code: p.currencyCode,
          payment_id: p.paymentId,
          pay_method_type: p.payMethodType,
          local_receipt_date_time: p.localReceiptDateTime,
        })),
      )
      .onConflict((oc) =>
        oc.column('order_id').doUpdateSet((eb) => ({
          ext_order_id: eb.ref('excluded.ext_order_id'),
          merchant_pos_id: eb.ref('excluded.merchant_pos_id'),
          status: eb.ref('excluded.status'),
          status_rank: eb.ref('excluded.status_rank'),
          total_amount: eb.ref('excluded.total_amount'),
          currency_code: eb.ref('excluded.currency_code'),
          payment_id: eb.ref('excluded.payment_id'),
          pay_method_type: eb.ref('excluded.pay_method_type'),
          local_receipt_date_time: eb.ref('excluded.local_receipt_date_time'),
          updated_at: sql<Date>`now()`,
        })),
      )
      .execute();
  }
  if (result.refunds.length > 0) {
    await trx
      .insertInto('refunds')
      .values(
        result.refunds.map((p) => ({
          refund_id: p.refundId,
          order_id: p.orderId,
          ext_order_id: p.extOrderId,
          ext_refund_id: p.extRefundId,
          status: p.status,
          status_rank: refundRank(p),
          amount: p.amount,
          currency_code: p.currencyCode,
          status_date_time: p.statusDateTime,
          refund_date: p.refundDate,
          reason: p.reason,
          reason_description: p.reasonDescription,
        })),
      )
      .onConflict((oc) =>
        oc.column('refund_id').doUpdateSet((eb) => ({
          ext_order_id: eb.ref('excluded.ext_order_id'),
          ext_refund_id: eb.ref('excluded.ext_refund_id'),
          status: eb.ref('excluded.status'),
          status_rank: eb.ref('excluded.status_rank'),
          amount: eb.ref('excluded.amount'),
          currency_code: eb.ref('excluded.currency_code'),
          status_date_time: eb.ref('excluded.status_date_time'),
          refund_date: eb.ref('excluded.refund_date'),
          reason: eb.ref('excluded.reason'),
          reason_description: eb.ref('excluded.reason_description'),
          updated_at: sql<Date>`now()`,
        })),
      )
      .execute();
  }
  if (result.sequences.size > 0) {
    await trx
      .insertInto('event_streams')
      .values([...result.sequences].map(([orderId, last]) => ({ order_id: orderId, last_sequence: last })))
      .onConflict((oc) => oc.column('order_id').doUpdateSet((eb) => ({ last_sequence: eb.ref('excluded.last_sequence') })))
      .execute();
  }
  const events = result.applied.flatMap((a) => (a.event ? [a.event] : []));
  if (events.length > 0) {
    await trx
      .insertInto('outbox_events')
      .values(events.map((e) => ({ id: e.id, order_id: e.subject, sequence: e.data.sequence, type: e.type, message: JSON.stringify(e) })))
      .execute();
    // Delivered at commit; a hint only, the relay also polls.
    await sql`SELECT pg_notify(${OUTBOX_CHANNEL}, '')`.execute(trx);
  }
  const notApplied = fresh.filter((_, i) => result.applied[i]?.outcome !== 'applied');
  if (notApplied.length > 0) {
    await sql`UPDATE notifications AS n SET outcome = u.outcome
          FROM unnest(${notApplied.map((f) => f.notificationId)}::bigint[], ${notApplied.map((f) => outcomeOf.get(f.notificationId)?.outcome)}::text[])
               AS u(id, outcome)
         WHERE n.id = u.id`.execute(trx);
  }

  // Per item: its outcome, and whether its bytes are a new variant of a recorded meaning.
  const results: RecordResult[] = [];
  const variants: Array<{ notification_id: string; body_sha256: Buffer; body: Buffer }> = [];
  const seenVariant = new Set<string>();
  items.forEach((item, index) => {
    const meaning = meaningOf(item.notification);
    const record = known.get(meaning) as { id: string; bodySha256: Buffer };
    const isNew = firstOfMeaning.get(meaning) === index && newIds.has(meaning);
    if (isNew) {
      const applied = outcomeOf.get(record.id);
      const outcome = applied?.outcome ?? 'applied';
      results.push({
        outcome: DELIVERY_OUTCOME[outcome],
        newVariant: false,
        notificationId: record.id,
        quarantineId: null,
        eventsWritten: applied?.event ? 1 : 0,
        currentStatus: outcome === 'applied' ? null : (applied?.previousStatus ?? null),
      });
      return;
    }
    const variantKey = `${record.id}\u0000${item.delivery.bodySha256.toString('hex')}`;
    if (!record.bodySha256.equals(item.delivery.bodySha256) && !seenVariant.has(variantKey)) {
      seenVariant.add(variantKey);
      variants.push({ notification_id: record.id, body_sha256: item.delivery.bodySha256, body: item.delivery.body });
    }
    results.push({ outcome: 'duplicate', newVariant: false, notificationId: record.id, quarantineId: null, eventsWritten: 0, currentStatus: null });
  });

  if (variants.length > 0) {
    const added = await trx
      .insertInto('notification_variants')
      .values(variants)
      .onConflict((oc) => oc.columns(['notification_id', 'body_sha256']).doNothing())
      .returning(['notification_id', 'body_sha256'])
      .execute();
    const addedKeys = new Set(added.map((a) => `${a.notification_id}\u0000${a.body_sha256.toString('hex')}`));
    items.forEach((item, index) => {
      const result = results[index] as RecordResult;
      const key = `${result.notificationId}\u0000${item.delivery.bodySha256.toString('hex')}`;
      if (result.outcome === 'duplicate' && addedKeys.delete(key)) result.newVariant = true;
    });
  }

  await trx
    .insertInto('deliveries')
    .values(
      items.map((item, index) => ({
        source_address: item.delivery.sourceAddress,
        processing_time_ms: item.delivery.processingTimeMs,
        pos_id: item.delivery.posId,
        key_fingerprint: item.delivery.keyFingerprint,
        body_sha256: item.delivery.bodySha256,
        outcome: (results[index] as RecordResult).outcome,
        notification_id: (results[index] as RecordResult).notificationId,
      })),
    )
    .execute();
  return results;
}
