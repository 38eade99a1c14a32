import type { Notification } from '../parsing/notification';
import { notificationSubject } from '../parsing/notification';
import { OUTBOX_CHANNEL } from '../outbox/notifyChannel';
import { applyNotifications, type NewNotification, type ProjectionState } from './projection';
import { orderFromRow, orderToRow, refundFromRow, refundToRow, type OrderRow, type RefundRow } from './projectionRows';
import type { KnownRecord } from './knownNotifications';
import type { Delivery, RecordingContext, RecordResult } from './recordNotification';
import type { DeliveriesTable, DeliveryOutcome } from './schema';
import { fragment, statement, type Fragment, type SqlSession, type Statement } from './sqlSession';
import type { TransitionOutcome } from './statusRules';

export interface BatchItem {
  delivery: Delivery;
  notification: Notification;
}

const DELIVERY_OUTCOME: Record<TransitionOutcome, DeliveryOutcome> = {
  applied: 'accepted',
  stale: 'stale',
  conflict: 'conflict',
};

/** kind, subject and status joined by U+001F, which identifiers never contain (the parser refuses control characters). */
export const meaningOf = (n: Notification): string => `${n.kind}\u001f${notificationSubject(n)}\u001f${n.status}`;

const duplicateOf = (notificationId: string): RecordResult => ({
  outcome: 'duplicate',
  newVariant: false,
  notificationId,
  quarantineId: null,
  eventsWritten: 0,
  currentStatus: null,
});

/** What a batch recorded, and the records it wrote or read (for KnownNotifications, once committed). */
export interface RecordedBatch {
  results: RecordResult[];
  records: KnownRecord[];
}

/** The seed of the order locks' keys (hashtextextended): the other advisory locks use keys of their own. */
export const ORDER_LOCK_SEED = 7316;

/**
 * Serializes every writer of an order (its notifications, projection, refunds and event sequence)
 * for the rest of the transaction. Taken in one global order (sorted keys), so two transactions
 * holding several orders each can never deadlock. Rows that do not exist yet are covered too,
 * which row locks could not do.
 */
async function lockOrders(session: SqlSession, orderIds: string[]): Promise<void> {
  await session.run(statement('record_lock_orders')`
    SELECT pg_advisory_xact_lock(k)
      FROM (SELECT DISTINCT hashtextextended(o, ${ORDER_LOCK_SEED}) AS k FROM unnest(${orderIds}::text[]) AS o ORDER BY k) AS keys`);
}

interface InsertAndRead {
  inserted: Array<{ id: string; meaning: string }> | null;
  known: Array<{ id: string; meaning: string; body_sha256: string }> | null;
  orders: Array<Omit<OrderRow, 'status_rank'>> | null;
  refunds: Array<Omit<RefundRow, 'status_rank'>> | null;
  streams: Array<{ order_id: string; last_sequence: number }> | null;
}

/**
 * One statement: insert the first delivery of each meaning (the unique constraint decides which
 * are new), and read what the batch needs: ids and first-body digests of meanings recorded before,
 * and the current projections and event sequences of its orders and refunds. The reads see the
 * state as of the statement's start, after the order locks were granted.
 * Amounts are read as text: JSON numbers would round values beyond 2^53.
 */
async function insertAndRead(
  session: SqlSession,
  candidates: readonly BatchItem[],
  items: readonly BatchItem[],
): Promise<InsertAndRead> {
  const rows = candidates.map(({ delivery, notification }) => ({
    kind: notification.kind,
    subject_id: notificationSubject(notification),
    status: notification.status,
    order_id: notification.orderId,
    pos_id: delivery.posId,
    key_fingerprint: delivery.keyFingerprint,
    body: byteaText(delivery.body),
    body_sha256: byteaText(delivery.bodySha256),
    parsed: notification,
  }));
  const orderIds = [...new Set(items.map((i) => i.notification.orderId))];
  const refundIds = [
    ...new Set(items.flatMap((i) => (i.notification.kind === 'refund' ? [i.notification.refundId] : []))),
  ];
  const [row] = await session.run<InsertAndRead>(statement('record_insert_and_read')`
    WITH candidate AS (
      SELECT kind, subject_id, status, order_id, pos_id, key_fingerprint, body, body_sha256, parsed
        FROM json_populate_recordset(NULL::notifications, ${rowsJson(rows)}::json)
    ), inserted AS (
      INSERT INTO notifications (kind, subject_id, status, order_id, outcome, pos_id, key_fingerprint, body, body_sha256, parsed)
      SELECT kind, subject_id, status, order_id, 'applied', pos_id, key_fingerprint, body, body_sha256, parsed FROM candidate
      ON CONFLICT ON CONSTRAINT notifications_meaning DO NOTHING
      RETURNING id, kind || chr(31) || subject_id || chr(31) || status AS meaning
    )
    SELECT
      (SELECT json_agg(json_build_object('id', id::text, 'meaning', meaning)) FROM inserted) AS inserted,
      (SELECT json_agg(json_build_object('id', x.id::text, 'meaning', x.kind || chr(31) || x.subject_id || chr(31) || x.status,
                                         'body_sha256', encode(x.body_sha256, 'hex')))
         FROM notifications x JOIN candidate c USING (kind, subject_id, status)) AS known,
      (SELECT json_agg(json_build_object(
                'order_id', o.order_id, 'ext_order_id', o.ext_order_id, 'merchant_pos_id', o.merchant_pos_id, 'status', o.status,
                'total_amount', o.total_amount::text, 'currency_code', o.currency_code, 'payment_id', o.payment_id,
                'pay_method_type', o.pay_method_type, 'local_receipt_date_time', o.local_receipt_date_time))
         FROM orders o WHERE o.order_id = ANY(${orderIds}::text[])) AS orders,
      (SELECT json_agg(json_build_object(
                'refund_id', r.refund_id, 'order_id', r.order_id, 'ext_order_id', r.ext_order_id, 'ext_refund_id', r.ext_refund_id,
                'status', r.status, 'amount', r.amount::text, 'currency_code', r.currency_code,
                'status_date_time', r.status_date_time, 'refund_date', r.refund_date, 'reason', r.reason,
                'reason_description', r.reason_description))
         FROM refunds r WHERE r.refund_id = ANY(${refundIds}::text[])) AS refunds,
      (SELECT json_agg(json_build_object('order_id', s.order_id, 'last_sequence', s.last_sequence))
         FROM event_streams s WHERE s.order_id = ANY(${orderIds}::text[])) AS streams`);
  return row as InsertAndRead;
}

function stateOf(read: InsertAndRead): ProjectionState {
  return {
    orders: new Map((read.orders ?? []).map((r) => [r.order_id, orderFromRow(r)])),
    refunds: new Map((read.refunds ?? []).map((r) => [r.refund_id, refundFromRow(r)])),
    sequences: new Map((read.streams ?? []).map((s) => [s.order_id, Number(s.last_sequence)])),
  };
}

/**
 * Rows as one JSON parameter, read in SQL by json_populate_recordset(NULL::table, ...): one value
 * to serialize and parse per table, not one array per column. Keys are column names; values are
 * given to each column's type as text (JSON numbers would round bigints beyond 2^53).
 */
const rowsJson = (rows: readonly object[]): string => JSON.stringify(rows);

/** A bytea value as its text input (hex), for a JSON field. */
const byteaText = (bytes: Buffer): string => `\\x${bytes.toString('hex')}`;

/** A delivery's audit row as the insert reads it: its columns, the digest as bytea text. */
type DeliveryRow = Pick<
  DeliveriesTable,
  'source_address' | 'processing_time_ms' | 'pos_id' | 'key_fingerprint' | 'outcome' | 'notification_id'
> & {
  body_sha256: string;
};

/** One row per item, with the result recorded for it (results[i] belongs to items[i]). */
function deliveryRows(items: readonly BatchItem[], results: readonly RecordResult[]): DeliveryRow[] {
  return items.map(({ delivery }, index): DeliveryRow => {
    const { outcome, notificationId } = results[index] as RecordResult;
    return {
      source_address: delivery.sourceAddress,
      processing_time_ms: delivery.processingTimeMs,
      pos_id: delivery.posId,
      key_fingerprint: delivery.keyFingerprint,
      body_sha256: byteaText(delivery.bodySha256),
      outcome,
      notification_id: notificationId,
    };
  });
}

/** The insert of the deliveries' audit rows: a statement of its own, or a part of the batch's write. */
function insertDeliveries(items: readonly BatchItem[], results: readonly RecordResult[]): Fragment {
  return fragment`
    INSERT INTO deliveries (source_address, processing_time_ms, pos_id, key_fingerprint, body_sha256, outcome, notification_id)
    SELECT source_address, processing_time_ms, pos_id, key_fingerprint, body_sha256, outcome, notification_id
      FROM json_populate_recordset(NULL::deliveries, ${rowsJson(deliveryRows(items, results))}::json)`;
}

/** What the batch's write statement returns: the variants it added (the others were known). */
export interface WrittenRow {
  variants: Array<{ notification_id: string; body_sha256: string }> | null;
}

/**
 * A batch whose reads are done and whose writes are decided: one statement is left to send, so a
 * transaction can send it together with its COMMIT.
 */
export interface PreparedBatch {
  write: Statement;
  /** The results, once `write` ran (given its one row). */
  finish(written: WrittenRow | undefined): RecordedBatch;
}

/**
 * Records notifications that arrived together, in the caller's transaction (the session): reads
 * and decides (prepareBatch), then writes.
 */
export async function recordBatchIn(
  session: SqlSession,
  context: RecordingContext,
  batch: readonly BatchItem[],
  knownIds: ReadonlyArray<string | undefined> = [],
): Promise<RecordedBatch> {
  const prepared = await prepareBatch(session, context, batch, knownIds);
  const [written] = await session.run<WrittenRow>(prepared.write);
  return prepared.finish(written);
}

/**
 * Reads what a batch needs and decides everything it writes, leaving the write as one statement.
 * Items with a `knownIds` entry are exact repeats of notifications known committed (the record
 * id, from KnownNotifications): they are duplicates at once, and a batch of only those reads
 * nothing and only appends deliveries. The others take two statements whatever their number, sent
 * together (one round trip on a pipelined connection):
 *   1. lock their orders;
 *   2. insert them, deduplicated by the unique constraint on their meaning, and read the state;
 * then the write carries everything the pure projection step (projection.ts) decided: projections,
 * sequences, outbox events, outcomes, variants, deliveries, and the NOTIFY hint for the relay.
 * Items are processed in the order given (their arrival order).
 */
export async function prepareBatch(
  session: SqlSession,
  context: RecordingContext,
  batch: readonly BatchItem[],
  knownIds: ReadonlyArray<string | undefined> = [],
): Promise<PreparedBatch> {
  const items = batch.filter((_, index) => knownIds[index] === undefined);
  if (items.length === 0) {
    const results = batch.map((_, index) => duplicateOf(knownIds[index] as string));
    // The whole batch is known duplicates: its deliveries are all it writes.
    return {
      write: statement('record_deliveries')`${insertDeliveries(batch, results)}`,
      finish: () => ({ results, records: [] }),
    };
  }
  const merge = (open: readonly RecordResult[]): RecordResult[] => {
    let next = 0;
    return batch.map((_, index) => {
      const id = knownIds[index];
      return id === undefined ? (open[next++] as RecordResult) : duplicateOf(id);
    });
  };

  // The first occurrence of each meaning in the batch is the candidate; later ones repeat it.
  const firstOfMeaning = new Map<string, number>();
  items.forEach((item, index) => {
    const meaning = meaningOf(item.notification);
    if (!firstOfMeaning.has(meaning)) firstOfMeaning.set(meaning, index);
  });
  const candidates = [...firstOfMeaning.values()].map((index) => items[index] as BatchItem);
  // The lock's statement completes (the locks granted) before the next one starts and takes its
  // snapshot; both leave at once.
  const [, read] = await Promise.all([
    lockOrders(
      session,
      items.map((i) => i.notification.orderId),
    ),
    insertAndRead(session, candidates, items),
  ]);

  const newIds = new Map((read.inserted ?? []).map((r) => [r.meaning, r.id]));
  // Every meaning of the batch: its record id and the digest of the body stored with it.
  const records = new Map<string, { id: string; bodySha256: Buffer }>(
    (read.known ?? []).map((k) => [k.meaning, { id: k.id, bodySha256: Buffer.from(k.body_sha256, 'hex') }]),
  );
  for (const c of candidates) {
    const id = newIds.get(meaningOf(c.notification));
    if (id !== undefined) records.set(meaningOf(c.notification), { id, bodySha256: c.delivery.bodySha256 });
  }

  const fresh: NewNotification[] = candidates.flatMap((c) => {
    const id = newIds.get(meaningOf(c.notification));
    return id === undefined ? [] : [{ notificationId: id, notification: c.notification }];
  });
  const result = applyNotifications(stateOf(read), fresh, context.eventSource);
  const appliedById = new Map(fresh.map((f, i) => [f.notificationId, result.applied[i]]));

  const results: RecordResult[] = [];
  const variants: Array<{ notificationId: string; bodySha256: Buffer; body: Buffer }> = [];
  const variantKeys = new Set<string>();
  items.forEach((item, index) => {
    const meaning = meaningOf(item.notification);
    const record = records.get(meaning) as { id: string; bodySha256: Buffer };
    if (firstOfMeaning.get(meaning) === index && newIds.has(meaning)) {
      const applied = appliedById.get(record.id);
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
    const key = `${record.id}:${item.delivery.bodySha256.toString('hex')}`;
    if (!record.bodySha256.equals(item.delivery.bodySha256) && !variantKeys.has(key)) {
      variantKeys.add(key);
      variants.push({ notificationId: record.id, bodySha256: item.delivery.bodySha256, body: item.delivery.body });
    }
    results.push(duplicateOf(record.id));
  });
  const all = merge(results);

  const events = result.applied.flatMap((a) => (a.event ? [a.event] : []));
  const notApplied = fresh.filter((f) => appliedById.get(f.notificationId)?.outcome !== 'applied');
  const write = statement('record_write')`
    WITH orders_upserted AS (
      INSERT INTO orders (order_id, ext_order_id, merchant_pos_id, status, status_rank, total_amount, currency_code,
                          payment_id, pay_method_type, local_receipt_date_time)
      SELECT order_id, ext_order_id, merchant_pos_id, status, status_rank, total_amount, currency_code,
             payment_id, pay_method_type, local_receipt_date_time
        FROM json_populate_recordset(NULL::orders, ${rowsJson(result.orders.map(orderToRow))}::json)
      ON CONFLICT (order_id) DO UPDATE SET
        ext_order_id = excluded.ext_order_id, merchant_pos_id = excluded.merchant_pos_id, status = excluded.status,
        status_rank = excluded.status_rank, total_amount = excluded.total_amount, currency_code = excluded.currency_code,
        payment_id = excluded.payment_id, pay_method_type = excluded.pay_method_type,
        local_receipt_date_time = excluded.local_receipt_date_time, updated_at = now()
    ), refunds_upserted AS (
      INSERT INTO refunds (refund_id, order_id, ext_order_id, ext_refund_id, status, status_rank, amount, currency_code,
                           status_date_time, refund_date, reason, reason_description)
      SELECT refund_id, order_id, ext_order_id, ext_refund_id, status, status_rank, amount, currency_code,
             status_date_time, refund_date, reason, reason_description
        FROM json_populate_recordset(NULL::refunds, ${rowsJson(result.refunds.map(refundToRow))}::json)
      ON CONFLICT (refund_id) DO UPDATE SET
        ext_order_id = excluded.ext_order_id, ext_refund_id = excluded.ext_refund_id, status = excluded.status,
        status_rank = excluded.status_rank, amount = excluded.amount, currency_code = excluded.currency_code,
        status_date_time = excluded.status_date_time, refund_date = excluded.refund_date, reason = excluded.reason,
        reason_description = excluded.reason_description, updated_at = now()
    ), sequences_updated AS (
      INSERT INTO event_streams (order_id, last_sequence)
      SELECT order_id, last_sequence
        FROM json_populate_recordset(NULL::event_streams,
               ${rowsJson([...result.sequences].map(([order_id, last_sequence]) => ({ order_id, last_sequence })))}::json)
      ON CONFLICT (order_id) DO UPDATE SET last_sequence = excluded.last_sequence
    ), events_added AS (
      -- A JSON object read into a text column keeps its text exactly: the message is the event as published.
      INSERT INTO outbox_events (id, order_id, sequence, type, message)
      SELECT id, order_id, sequence, type, message
        FROM json_populate_recordset(NULL::outbox_events,
               ${rowsJson(events.map((e) => ({ id: e.id, order_id: e.subject, sequence: e.data.sequence, type: e.type, message: e })))}::json)
    ), outcomes_set AS (
      UPDATE notifications AS n SET outcome = u.outcome
        FROM json_populate_recordset(NULL::notifications,
               ${rowsJson(notApplied.map((f) => ({ id: f.notificationId, outcome: appliedById.get(f.notificationId)?.outcome })))}::json) AS u
       WHERE n.id = u.id
    ), variants_added AS (
      INSERT INTO notification_variants (notification_id, body_sha256, body)
      SELECT notification_id, body_sha256, body
        FROM json_populate_recordset(NULL::notification_variants,
               ${rowsJson(variants.map((v) => ({ notification_id: v.notificationId, body_sha256: byteaText(v.bodySha256), body: byteaText(v.body) })))}::json)
      ON CONFLICT (notification_id, body_sha256) DO NOTHING
      RETURNING notification_id, body_sha256
    ), deliveries_added AS (${insertDeliveries(batch, all)}
    )
    SELECT (SELECT json_agg(json_build_object('notification_id', notification_id::text, 'body_sha256', encode(body_sha256, 'hex')))
              FROM variants_added) AS variants,
           -- The relay's wake-up hint, delivered at commit; it also polls, so a lost hint costs a poll interval.
           CASE WHEN ${events.length}::int > 0 THEN pg_notify(${OUTBOX_CHANNEL}, '') END AS notified`;

  const finish = (written: WrittenRow | undefined): RecordedBatch => {
    const added = new Set((written?.variants ?? []).map((v) => `${v.notification_id}:${v.body_sha256}`));
    items.forEach((item, index) => {
      const result = results[index] as RecordResult;
      if (
        result.outcome === 'duplicate' &&
        added.delete(`${result.notificationId}:${item.delivery.bodySha256.toString('hex')}`)
      ) {
        result.newVariant = true;
      }
    });
    return {
      results: all,
      records: [...records].map(([meaning, { id, bodySha256 }]) => ({ meaning, id, bodySha256 })),
    };
  };
  return { write, finish };
}
