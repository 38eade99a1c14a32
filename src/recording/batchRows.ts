import type { InsertType } from 'kysely';
import type {
  DeliveriesTable,
  DeliveryRepeatsTable,
  EventStreamsTable,
  NotificationsTable,
  NotificationVariantsTable,
  OrderOwnersTable,
  OutboxEventsTable,
} from '../database/schema';
import type { DomainEvent } from '../outbox/events';
import { notificationSubject } from '../parsing/notification';
import {
  meaningKey,
  variantKey,
  type BatchState,
  type BatchWrites,
  type DeliveryEntry,
  type NewRecord,
  type StoredRecord,
} from './batch';
import { orderFromRow, orderToRow, refundFromRow, refundToRow, type OrderRow, type RefundRow } from './projectionRows';

/**
 * The rows a recording transaction writes and reads, typed from the tables (src/database/schema.ts): each
 * row type lists its columns once, the statements take their column lists from here (batchStatements.ts), so
 * renaming a column fails `tsc`. Rows travel as one JSON parameter per table, read by
 * json_populate_recordset: each value in its column's JSON form (bytea as its hex text input, amounts as
 * text: JSON numbers would round beyond 2^53).
 */

/** A value as the JSON parameter carries it to its column. */
type JsonCell<V> = V extends Buffer ? string : V;

/** A table's row as json_populate_recordset reads it: the named columns, each value in its JSON form. */
export type JsonRow<Table, Column extends keyof Table = keyof Table> = {
  [C in Column]: JsonCell<Exclude<InsertType<Table[C]>, undefined>>;
};

/** The columns of a row type, each named once: one missing from the list, or not in the row, fails tsc. */
function columnsOf<Row>(listed: { readonly [C in keyof Row]-?: true }): ReadonlyArray<keyof Row & string> {
  return Object.keys(listed) as Array<keyof Row & string>;
}

export type NotificationRow = JsonRow<NotificationsTable, Exclude<keyof NotificationsTable, 'received_at'>>;
export const NOTIFICATION_COLUMNS = columnsOf<NotificationRow>({
  id: true,
  kind: true,
  subject_id: true,
  status: true,
  order_id: true,
  outcome: true,
  pos_id: true,
  key_fingerprint: true,
  body: true,
  body_sha256: true,
  parsed: true,
  disagreements: true,
  observed_via: true,
});

export type DeliveryRow = JsonRow<DeliveriesTable, Exclude<keyof DeliveriesTable, 'id' | 'received_at'>>;
export const DELIVERY_COLUMNS = columnsOf<DeliveryRow>({
  source_address: true,
  processing_time_ms: true,
  pos_id: true,
  key_fingerprint: true,
  body_sha256: true,
  outcome: true,
  notification_id: true,
  quarantine_id: true,
  observed_via: true,
});

export type DeliveryRepeatRow = JsonRow<DeliveryRepeatsTable, 'notification_id' | 'deliveries'>;
export const DELIVERY_REPEAT_COLUMNS = columnsOf<DeliveryRepeatRow>({ notification_id: true, deliveries: true });

export type OwnerRow = JsonRow<OrderOwnersTable, 'order_id' | 'pos_id'>;
export const OWNER_COLUMNS = columnsOf<OwnerRow>({ order_id: true, pos_id: true });

export const ORDER_COLUMNS = columnsOf<OrderRow>({
  order_id: true,
  ext_order_id: true,
  merchant_pos_id: true,
  status: true,
  status_rank: true,
  total_amount: true,
  currency_code: true,
  payment_id: true,
  pay_method_type: true,
  local_receipt_date_time: true,
});

export const REFUND_COLUMNS = columnsOf<RefundRow>({
  refund_id: true,
  order_id: true,
  ext_order_id: true,
  ext_refund_id: true,
  status: true,
  status_rank: true,
  amount: true,
  currency_code: true,
  status_date_time: true,
  refund_date: true,
  reason: true,
  reason_description: true,
});

export type StreamRow = JsonRow<EventStreamsTable>;
export const STREAM_COLUMNS = columnsOf<StreamRow>({ order_id: true, last_sequence: true });

/**
 * An outbox row. The message travels as the event's JSON object: read into the text column, it keeps its
 * text exactly, so the column holds the event as published.
 */
export type OutboxRow = JsonRow<OutboxEventsTable, 'id' | 'order_id' | 'sequence' | 'type'> & {
  message: DomainEvent;
};
export const OUTBOX_COLUMNS = columnsOf<OutboxRow>({
  id: true,
  order_id: true,
  sequence: true,
  type: true,
  message: true,
});

export type VariantRow = JsonRow<NotificationVariantsTable, 'notification_id' | 'body_sha256' | 'body'>;
export const VARIANT_COLUMNS = columnsOf<VariantRow>({ notification_id: true, body_sha256: true, body: true });

/** A bytea value as its text input (hex), for a JSON field. */
const byteaText = (bytes: Buffer): string => `\\x${bytes.toString('hex')}`;

function notificationRow(r: NewRecord): NotificationRow {
  return {
    id: r.id,
    kind: r.notification.kind,
    subject_id: notificationSubject(r.notification),
    status: r.notification.status,
    order_id: r.orderId,
    outcome: r.transition,
    pos_id: r.signer.posId,
    key_fingerprint: r.signer.keyFingerprint,
    body: byteaText(r.body),
    body_sha256: byteaText(r.bodySha256),
    parsed: r.notification,
    disagreements: r.disagreements.length === 0 ? null : [...r.disagreements],
    observed_via: r.observedVia,
  };
}

function deliveryRow({ delivery, signer, outcome, notificationId }: DeliveryEntry): DeliveryRow {
  return {
    source_address: delivery.sourceAddress,
    processing_time_ms: delivery.processingTimeMs,
    pos_id: signer.posId,
    key_fingerprint: signer.keyFingerprint,
    body_sha256: byteaText(delivery.bodySha256),
    outcome,
    notification_id: notificationId,
    quarantine_id: null,
    observed_via: delivery.observedVia,
  };
}

/** The deliveries' rows, and the repeats counted instead of a row (DeliveryEntry.countedOnly, decided in decideBatch). */
export function deliveryRows(entries: readonly DeliveryEntry[]): Pick<BatchRows, 'deliveries' | 'repeats'> {
  const repeats = new Map<string, number>();
  for (const entry of entries)
    if (entry.countedOnly) repeats.set(entry.notificationId, (repeats.get(entry.notificationId) ?? 0) + 1);
  return {
    deliveries: entries.filter((entry) => !entry.countedOnly).map(deliveryRow),
    repeats: [...repeats].map(([notification_id, deliveries]) => ({ notification_id, deliveries })),
  };
}

/** Every row a batch's decision writes, by table. */
export interface BatchRows {
  notifications: NotificationRow[];
  owners: OwnerRow[];
  orders: OrderRow[];
  refunds: RefundRow[];
  streams: StreamRow[];
  events: OutboxRow[];
  variants: VariantRow[];
  deliveries: DeliveryRow[];
  repeats: DeliveryRepeatRow[];
}

export function batchRows(writes: BatchWrites): BatchRows {
  return {
    notifications: writes.records.map(notificationRow),
    owners: writes.owners.map((o) => ({ order_id: o.orderId, pos_id: o.posId })),
    orders: writes.orders.map(orderToRow),
    refunds: writes.refunds.map(refundToRow),
    streams: writes.sequences.map((s) => ({ order_id: s.orderId, last_sequence: s.lastSequence })),
    events: writes.events.map((e) => ({
      id: e.id,
      order_id: e.subject,
      sequence: e.data.sequence,
      type: e.type,
      message: e,
    })),
    variants: writes.variants.map((v) => ({
      notification_id: v.notificationId,
      body_sha256: byteaText(v.bodySha256),
      body: byteaText(v.body),
    })),
    ...deliveryRows(writes.deliveries),
  };
}

/** The notifications a batch asks for, by meaning. */
export type MeaningRow = JsonRow<NotificationsTable, 'kind' | 'subject_id' | 'status'>;
export const MEANING_COLUMNS = columnsOf<MeaningRow>({ kind: true, subject_id: true, status: true });

/**
 * What the read answers (one row): the notifications recorded with the batch's meanings (id and digest as
 * text, with their delivery rows counted up to the cap), the projections, owners and event sequences of its
 * orders and refunds (bigint as text), and ids reserved for its new notifications.
 */
export interface StateRow {
  records: Array<MeaningRow & { id: string; body_sha256: string; delivery_rows: number }> | null;
  orders: Array<Omit<OrderRow, 'status_rank'>> | null;
  refunds: Array<Omit<RefundRow, 'status_rank'>> | null;
  streams: Array<{ order_id: string; last_sequence: string }> | null;
  owners: OwnerRow[] | null;
  new_ids: string[] | null;
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

/** What the write answers: the variants it added (the others were known). */
export interface WrittenRow {
  variants: Array<{ notification_id: string; body_sha256: string }> | null;
}

/** The keys (variantKey) of the variants the write added. */
export const addedVariants = (row: WrittenRow | undefined): Set<string> =>
  new Set((row?.variants ?? []).map((v) => variantKey(v.notification_id, v.body_sha256)));
