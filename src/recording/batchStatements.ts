import { sql } from 'kysely';
import type { Disagreement } from '../database/schema';
import { prepared, type Statement } from '../database/transaction';
import { OUTBOX_CHANNEL } from '../outbox/notifyChannel';
import { notificationSubject } from '../parsing/notification';
import {
  DELIVERY_ROWS_PER_NOTIFICATION,
  meaningKey,
  type BatchState,
  type BatchWrites,
  type DeliveryEntry,
  type StoredRecord,
} from './decideBatch';
import type { Delivery } from './notificationStore';
import { orderFromRow, orderToRow, refundFromRow, refundToRow, type OrderRow, type RefundRow } from './projectionRows';

/**
 * The SQL of a recording transaction: lock, read, write. Three statements whatever the batch's size, each
 * with a constant text (rows travel as one JSON parameter per table, read back by json_populate_recordset),
 * so each connection prepares them once. Amounts travel as text: JSON numbers would round beyond 2^53.
 */

/** The seed of the order locks' keys (hashtextextended): the other advisory locks use keys of their own. */
export const ORDER_LOCK_SEED = 7316;

/** Rows as one JSON parameter: keys are column names, values given to each column's type as text. */
const rowsJson = (rows: readonly object[]): string => JSON.stringify(rows);

/** A bytea value as its text input (hex), for a JSON field. */
const byteaText = (bytes: Buffer): string => `\\x${bytes.toString('hex')}`;

/**
 * Serializes every writer of an order (its notifications, projection, owner, refunds and event sequence)
 * for the rest of the transaction: the orders named, and the orders the named refunds were recorded under
 * (a refund's order never changes once recorded, so reading it before the lock is safe). Taken in one
 * global order (sorted keys), so two transactions holding several orders each never deadlock. Rows that
 * do not exist yet are covered too, which row locks could not do. Answers the orders it locked.
 */
export function lockOrders(orderIds: readonly string[], refundIds: readonly string[]): Statement<{ orders: string[] }> {
  return prepared(
    'record_lock',
    sql<{ orders: string[] }>`
      WITH involved AS (
        SELECT unnest(${orderIds}::text[]) AS order_id
        UNION
        SELECT order_id FROM refunds WHERE refund_id = ANY(${refundIds}::text[])
      )
      SELECT (SELECT array_agg(order_id) FROM involved) AS orders,
             (SELECT count(*) FROM (
                SELECT pg_advisory_xact_lock(k)
                  FROM (SELECT DISTINCT hashtextextended(order_id, ${ORDER_LOCK_SEED}) AS k FROM involved ORDER BY k) AS keys
              ) AS locks) AS locked`,
  );
}

interface StateRow {
  records: Array<{
    id: string;
    kind: string;
    subject_id: string;
    status: string;
    body_sha256: string;
    delivery_rows: number;
  }> | null;
  orders: Array<Omit<OrderRow, 'status_rank'>> | null;
  refunds: Array<Omit<RefundRow, 'status_rank'>> | null;
  streams: Array<{ order_id: string; last_sequence: number }> | null;
  owners: Array<{ order_id: string; pos_id: string }> | null;
  new_ids: string[] | null;
}

/**
 * What the batch needs, as of after its locks were granted: the notifications recorded with its meanings,
 * the projections, owners and event sequences of its orders and refunds, and ids for the new ones.
 */
export function readState(
  meanings: ReadonlyArray<{ kind: string; subjectId: string; status: string }>,
  orderIds: readonly string[],
  refundIds: readonly string[],
): Statement<StateRow> {
  const wanted = rowsJson(meanings.map((m) => ({ kind: m.kind, subject_id: m.subjectId, status: m.status })));
  return prepared(
    'record_read',
    sql<StateRow>`
      WITH wanted AS (
        SELECT kind, subject_id, status FROM json_populate_recordset(NULL::notifications, ${wanted}::json)
      ), involved AS (
        SELECT unnest(${orderIds}::text[]) AS order_id
        UNION
        SELECT order_id FROM refunds WHERE refund_id = ANY(${refundIds}::text[])
      )
      SELECT
        (SELECT json_agg(json_build_object('id', n.id::text, 'kind', n.kind, 'subject_id', n.subject_id,
                                           'status', n.status, 'body_sha256', encode(n.body_sha256, 'hex'),
                                           'delivery_rows', (SELECT count(*) FROM (
                                              SELECT 1 FROM deliveries d WHERE d.notification_id = n.id
                                               LIMIT ${DELIVERY_ROWS_PER_NOTIFICATION}::int) AS kept)))
           FROM notifications n JOIN wanted w USING (kind, subject_id, status)) AS records,
        (SELECT json_agg(json_build_object(
                  'order_id', o.order_id, 'ext_order_id', o.ext_order_id, 'merchant_pos_id', o.merchant_pos_id,
                  'status', o.status, 'total_amount', o.total_amount::text, 'currency_code', o.currency_code,
                  'payment_id', o.payment_id, 'pay_method_type', o.pay_method_type,
                  'local_receipt_date_time', o.local_receipt_date_time))
           FROM orders o WHERE o.order_id IN (SELECT order_id FROM involved)) AS orders,
        (SELECT json_agg(json_build_object(
                  'refund_id', r.refund_id, 'order_id', r.order_id, 'ext_order_id', r.ext_order_id,
                  'ext_refund_id', r.ext_refund_id, 'status', r.status, 'amount', r.amount::text,
                  'currency_code', r.currency_code, 'status_date_time', r.status_date_time,
                  'refund_date', r.refund_date, 'reason', r.reason, 'reason_description', r.reason_description))
           FROM refunds r WHERE r.refund_id = ANY(${refundIds}::text[])) AS refunds,
        (SELECT json_agg(json_build_object('order_id', s.order_id, 'last_sequence', s.last_sequence))
           FROM event_streams s WHERE s.order_id IN (SELECT order_id FROM involved)) AS streams,
        (SELECT json_agg(json_build_object('order_id', w.order_id, 'pos_id', w.pos_id))
           FROM order_owners w WHERE w.order_id IN (SELECT order_id FROM involved)) AS owners,
        (SELECT array_agg(nextval(pg_get_serial_sequence('notifications', 'id'))::text)
           FROM generate_series(1, ${meanings.length}::int)) AS new_ids`,
  );
}

/** The state read, as the decision takes it. */
export function stateOf(row: StateRow | undefined): BatchState {
  return {
    records: new Map(
      (row?.records ?? []).map((r): [string, StoredRecord] => [
        meaningKey(r.kind, r.subject_id, r.status),
        { id: r.id, bodySha256: Buffer.from(r.body_sha256, 'hex'), deliveryRows: Number(r.delivery_rows) },
      ]),
    ),
    orders: new Map((row?.orders ?? []).map((r) => [r.order_id, orderFromRow(r)])),
    refunds: new Map((row?.refunds ?? []).map((r) => [r.refund_id, refundFromRow(r)])),
    owners: new Map((row?.owners ?? []).map((o) => [o.order_id, o.pos_id])),
    sequences: new Map((row?.streams ?? []).map((s) => [s.order_id, Number(s.last_sequence)])),
    newIds: row?.new_ids ?? [],
  };
}

/** A delivery's audit row as the insert reads it. */
function deliveryRow(entry: DeliveryEntry) {
  const { delivery, signer, outcome, notificationId } = entry;
  return {
    source_address: delivery.sourceAddress,
    processing_time_ms: delivery.processingTimeMs,
    pos_id: signer.posId,
    key_fingerprint: signer.keyFingerprint,
    body_sha256: byteaText(delivery.bodySha256),
    outcome,
    notification_id: notificationId,
    observed_via: delivery.observedVia,
  };
}

/**
 * The deliveries' audit rows, and the repeats counted instead of a row (DeliveryEntry.countedOnly, decided
 * in decideBatch). Part of the batch's write, or a statement of its own.
 */
function insertDeliveries(entries: readonly DeliveryEntry[]) {
  const repeats = new Map<string, number>();
  for (const entry of entries)
    if (entry.countedOnly) repeats.set(entry.notificationId, (repeats.get(entry.notificationId) ?? 0) + 1);
  const rows = entries.filter((entry) => !entry.countedOnly).map(deliveryRow);
  const counted = [...repeats].map(([notification_id, deliveries]) => ({ notification_id, deliveries }));
  return sql`
    deliveries_added AS (
      INSERT INTO deliveries (source_address, processing_time_ms, pos_id, key_fingerprint, body_sha256, outcome,
                              notification_id, observed_via)
      SELECT source_address, processing_time_ms, pos_id, key_fingerprint, body_sha256, outcome, notification_id,
             observed_via
        FROM json_populate_recordset(NULL::deliveries, ${rowsJson(rows)}::json)
    ), repeats_counted AS (
      INSERT INTO delivery_repeats (notification_id, deliveries)
      SELECT notification_id, deliveries FROM json_populate_recordset(NULL::delivery_repeats, ${rowsJson(counted)}::json)
      ON CONFLICT (notification_id) WHERE notification_id IS NOT NULL
      DO UPDATE SET deliveries = delivery_repeats.deliveries + excluded.deliveries, last_at = now()
    )`;
}

/** A batch of known duplicates writes only their deliveries: one statement, its own transaction. */
export function writeDeliveries(entries: readonly DeliveryEntry[]): Statement<unknown> {
  return prepared('record_deliveries', sql`WITH ${insertDeliveries(entries)} SELECT 1`);
}

/** What the batch's write answers: the variants it added (the others were known). */
export interface WrittenRow {
  variants: Array<{ notification_id: string; body_sha256: string }> | null;
}

const disagreementsJson = (d: readonly Disagreement[]): Disagreement[] | null => (d.length === 0 ? null : [...d]);

/** Everything the decision wrote, as one statement (sent with COMMIT), and the relay's wake-up hint. */
export function writeBatch(writes: BatchWrites): Statement<WrittenRow> {
  const notifications = writes.records.map((r) => ({
    id: r.id,
    kind: r.notification.kind,
    subject_id: notificationSubject(r.notification),
    status: r.notification.status,
    order_id: r.orderId,
    outcome: r.outcome,
    pos_id: r.signer.posId,
    key_fingerprint: r.signer.keyFingerprint,
    body: byteaText(r.body),
    body_sha256: byteaText(r.bodySha256),
    parsed: r.notification,
    disagreements: disagreementsJson(r.disagreements),
    observed_via: r.observedVia,
  }));
  const events = writes.events.map((e) => ({
    id: e.id,
    order_id: e.subject,
    sequence: e.data.sequence,
    type: e.type,
    message: e,
  }));
  const variants = writes.variants.map((v) => ({
    notification_id: v.notificationId,
    body_sha256: byteaText(v.bodySha256),
    body: byteaText(v.body),
  }));
  return prepared(
    'record_write',
    sql<WrittenRow>`
      WITH notifications_added AS (
        INSERT INTO notifications (id, kind, subject_id, status, order_id, outcome, pos_id, key_fingerprint, body,
                                   body_sha256, parsed, disagreements, observed_via)
        OVERRIDING SYSTEM VALUE
        SELECT id, kind, subject_id, status, order_id, outcome, pos_id, key_fingerprint, body, body_sha256, parsed,
               disagreements, observed_via
          FROM json_populate_recordset(NULL::notifications, ${rowsJson(notifications)}::json)
      ), owners_added AS (
        INSERT INTO order_owners (order_id, pos_id)
        SELECT order_id, pos_id
          FROM json_populate_recordset(NULL::order_owners,
                 ${rowsJson(writes.owners.map((o) => ({ order_id: o.orderId, pos_id: o.posId })))}::json)
      ), orders_upserted AS (
        INSERT INTO orders (order_id, ext_order_id, merchant_pos_id, status, status_rank, total_amount, currency_code,
                            payment_id, pay_method_type, local_receipt_date_time)
        SELECT order_id, ext_order_id, merchant_pos_id, status, status_rank, total_amount, currency_code,
               payment_id, pay_method_type, local_receipt_date_time
          FROM json_populate_recordset(NULL::orders, ${rowsJson(writes.orders.map(orderToRow))}::json)
        ON CONFLICT (order_id) DO UPDATE SET
          ext_order_id = excluded.ext_order_id, merchant_pos_id = excluded.merchant_pos_id, status = excluded.status,
          status_rank = excluded.status_rank, total_amount = excluded.total_amount,
          currency_code = excluded.currency_code, payment_id = excluded.payment_id,
          pay_method_type = excluded.pay_method_type, local_receipt_date_time = excluded.local_receipt_date_time,
          updated_at = now()
      ), refunds_upserted AS (
        INSERT INTO refunds (refund_id, order_id, ext_order_id, ext_refund_id, status, status_rank, amount,
                             currency_code, status_date_time, refund_date, reason, reason_description)
        SELECT refund_id, order_id, ext_order_id, ext_refund_id, status, status_rank, amount, currency_code,
               status_date_time, refund_date, reason, reason_description
          FROM json_populate_recordset(NULL::refunds, ${rowsJson(writes.refunds.map(refundToRow))}::json)
        ON CONFLICT (refund_id) DO UPDATE SET
          ext_order_id = excluded.ext_order_id, ext_refund_id = excluded.ext_refund_id, status = excluded.status,
          status_rank = excluded.status_rank, amount = excluded.amount, currency_code = excluded.currency_code,
          status_date_time = excluded.status_date_time, refund_date = excluded.refund_date,
          reason = excluded.reason, reason_description = excluded.reason_description, updated_at = now()
      ), sequences_updated AS (
        INSERT INTO event_streams (order_id, last_sequence)
        SELECT order_id, last_sequence
          FROM json_populate_recordset(NULL::event_streams,
                 ${rowsJson(writes.sequences.map((s) => ({ order_id: s.orderId, last_sequence: s.lastSequence })))}::json)
        ON CONFLICT (order_id) DO UPDATE SET last_sequence = excluded.last_sequence
      ), events_added AS (
        -- A JSON object read into a text column keeps its text exactly: the message is the event as published.
        INSERT INTO outbox_events (id, order_id, sequence, type, message)
        SELECT id, order_id, sequence, type, message
          FROM json_populate_recordset(NULL::outbox_events, ${rowsJson(events)}::json)
      ), variants_added AS (
        INSERT INTO notification_variants (notification_id, body_sha256, body)
        SELECT notification_id, body_sha256, body
          FROM json_populate_recordset(NULL::notification_variants, ${rowsJson(variants)}::json)
        ON CONFLICT (notification_id, body_sha256) DO NOTHING
        RETURNING notification_id, body_sha256
      ), ${insertDeliveries(writes.deliveries)}
      SELECT (SELECT json_agg(json_build_object('notification_id', notification_id::text,
                                                'body_sha256', encode(body_sha256, 'hex')))
                FROM variants_added) AS variants,
             -- The relay's wake-up hint, delivered at commit; it also polls, so a lost hint costs a poll interval.
             CASE WHEN ${events.length}::int > 0 THEN pg_notify(${OUTBOX_CHANNEL}, '') END AS notified`,
  );
}

/** Keeps an authentic body that could not be read (or recorded), with the reason, and its delivery. */
export function writeQuarantine(delivery: Delivery, reason: string, detail: string): Statement<{ id: string }> {
  const [signer] = delivery.signers;
  return prepared(
    'record_quarantine',
    sql<{ id: string }>`
      WITH quarantined AS (
        INSERT INTO quarantined_notifications (reason, detail, pos_id, key_fingerprint, body, body_sha256)
        VALUES (${reason}, ${detail}, ${signer?.posId ?? ''}, ${signer?.keyFingerprint ?? ''}, ${delivery.body},
                ${delivery.bodySha256})
        -- The same bytes again: one quarantine row, one more delivery (a no-op update returns the id).
        ON CONFLICT (body_sha256) DO UPDATE SET body_sha256 = excluded.body_sha256
        RETURNING id
      ), delivery AS (
        SELECT q.id,
               (SELECT count(*) FROM (SELECT 1 FROM deliveries e WHERE e.quarantine_id = q.id
                                       LIMIT ${DELIVERY_ROWS_PER_NOTIFICATION}::int) AS kept
               ) >= ${DELIVERY_ROWS_PER_NOTIFICATION}::int AS counted_only
          FROM quarantined q
      ), delivery_added AS (
        INSERT INTO deliveries (source_address, processing_time_ms, pos_id, key_fingerprint, body_sha256, outcome,
                                quarantine_id)
        SELECT ${delivery.sourceAddress}::inet, ${delivery.processingTimeMs}::int, ${signer?.posId ?? ''},
               ${signer?.keyFingerprint ?? ''}, ${delivery.bodySha256}, 'quarantined', id
          FROM delivery WHERE NOT counted_only
      ), repeat_counted AS (
        INSERT INTO delivery_repeats (quarantine_id, deliveries)
        SELECT id, 1 FROM delivery WHERE counted_only
        ON CONFLICT (quarantine_id) WHERE quarantine_id IS NOT NULL
        DO UPDATE SET deliveries = delivery_repeats.deliveries + 1, last_at = now()
      )
      SELECT id::text FROM quarantined`,
  );
}
