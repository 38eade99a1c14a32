import type { Selectable } from 'kysely';
import type { Column } from '../database/columns';
import { rowColumns, type JsonRow } from '../database/jsonRows';
import type {
  DeliveriesTable,
  DeliveryRepeatsTable,
  EventStreamsTable,
  NotificationsTable,
  NotificationVariantsTable,
  OrderOwnersTable,
  OrdersTable,
  RefundsTable,
} from '../database/schema';
import { outboxRow, type OutboxRow } from '../outbox/outboxRows';
import { notificationSubject, type Notification } from '../parsing/notification';
import {
  meaningOf,
  type BatchState,
  type BatchWrites,
  type DeliveryEntry,
  type NewNotification,
  type StoredNotification,
} from './batch';
import { orderFromRow, orderToRow, refundFromRow, refundToRow, type OrderRow, type RefundRow } from './projectionRows';
import type { OrderProjection, RefundProjection } from './projection';
import type { StoredProjection } from './projectionFold';

/**
 * The rows a recording transaction writes and reads, typed from the tables (src/database/schema.ts): each
 * row type lists its columns once, the statements take their column lists from here (batchQueries.ts), so
 * renaming a column fails `tsc`. Rows travel as one JSON parameter per table, read by
 * json_populate_recordset: each value in its column's JSON form (bytea as its hex text input, amounts as
 * text: JSON numbers would round beyond 2^53).
 */

export type NotificationRow = JsonRow<NotificationsTable>;
export const NOTIFICATION_COLUMNS = rowColumns<NotificationRow>({
  id: true,
  received_at: true,
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
export const DELIVERY_COLUMNS = rowColumns<DeliveryRow>({
  notification_received_at: true,
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
export const DELIVERY_REPEAT_COLUMNS = rowColumns<DeliveryRepeatRow>({ notification_id: true, deliveries: true });

export type OwnerRow = JsonRow<OrderOwnersTable, 'order_id' | 'pos_id'>;
export const OWNER_COLUMNS = rowColumns<OwnerRow>({ order_id: true, pos_id: true });

/** An order's row as the recorder writes it: the projection and its recorded statuses. */
export type OrderWriteRow = JsonRow<OrdersTable, keyof OrderRow | 'recorded'>;
export const ORDER_COLUMNS = rowColumns<OrderWriteRow>({
  recorded: true,
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

export type RefundWriteRow = JsonRow<RefundsTable, keyof RefundRow | 'recorded'>;
export const REFUND_COLUMNS = rowColumns<RefundWriteRow>({
  recorded: true,
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
export const STREAM_COLUMNS = rowColumns<StreamRow>({ order_id: true, last_sequence: true });

export type VariantRow = JsonRow<
  NotificationVariantsTable,
  'notification_id' | 'notification_received_at' | 'body_sha256' | 'body'
>;
export const VARIANT_COLUMNS = rowColumns<VariantRow>({
  notification_id: true,
  notification_received_at: true,
  body_sha256: true,
  body: true,
});

/** A bytea value as its text input (hex), for a JSON field. */
export const byteaText = (bytes: Buffer): string => `\\x${bytes.toString('hex')}`;

function notificationRow(r: NewNotification): NotificationRow {
  return {
    id: r.id,
    received_at: r.receivedAt,
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

function deliveryRow({
  delivery,
  signer,
  outcome,
  notificationId,
  notificationReceivedAt,
}: DeliveryEntry): DeliveryRow {
  return {
    notification_received_at: notificationReceivedAt,
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
  orders: OrderWriteRow[];
  refunds: RefundWriteRow[];
  streams: StreamRow[];
  events: OutboxRow[];
  variants: VariantRow[];
  deliveries: DeliveryRow[];
  repeats: DeliveryRepeatRow[];
}

export const orderWriteRow = ({ projection, recorded }: StoredProjection<OrderProjection>): OrderWriteRow => ({
  ...orderToRow(projection),
  recorded,
});

export const refundWriteRow = ({ projection, recorded }: StoredProjection<RefundProjection>): RefundWriteRow => ({
  ...refundToRow(projection),
  recorded,
});

export function batchRows(writes: BatchWrites): BatchRows {
  return {
    notifications: writes.newNotifications.map(notificationRow),
    owners: writes.owners.map((o) => ({ order_id: o.orderId, pos_id: o.posId })),
    orders: writes.orders.map(orderWriteRow),
    refunds: writes.refunds.map(refundWriteRow),
    streams: writes.sequences.map((s) => ({ order_id: s.orderId, last_sequence: s.lastSequence })),
    events: writes.events.map(outboxRow),
    variants: writes.variants.map((v) => ({
      notification_id: v.notificationId,
      notification_received_at: v.notificationReceivedAt,
      body_sha256: byteaText(v.bodySha256),
      body: byteaText(v.body),
    })),
    ...deliveryRows(writes.deliveries),
  };
}

/**
 * What the read answers (one row): the projections of the batch's orders and refunds with their recorded
 * statuses (bigint as text), their owners and event sequences, the ids reserved for its new notifications, and
 * the transaction's time (text: a JavaScript Date would cut its microseconds).
 */
export interface StateRow {
  orders: Array<Selected<OrdersTable, Exclude<keyof OrderWriteRow, 'status_rank'> | 'revision'>> | null;
  refunds: Array<Selected<RefundsTable, Exclude<keyof RefundWriteRow, 'status_rank'> | 'revision'>> | null;
  streams: Array<Selected<EventStreamsTable, keyof StreamRow>> | null;
  owners: Array<Selected<OrderOwnersTable, keyof OwnerRow>> | null;
  new_ids: string[] | null;
  now: string;
}

/** The named columns of a table as a query selects them (json_build_object's: bigint and amounts as text). */
type Selected<Table, Column extends keyof Selectable<Table>> = Pick<Selectable<Table>, Column>;

/** The state read, as the decision takes it; the stored notifications come from history (withStoredNotifications). */
export function stateOf(row: StateRow | undefined): BatchState {
  const orders = row?.orders ?? [];
  const refunds = row?.refunds ?? [];
  return {
    storedNotifications: new Map(),
    orders: new Map(
      orders.map(({ recorded, revision: _, ...r }) => [r.order_id, { projection: orderFromRow(r), recorded }]),
    ),
    refunds: new Map(
      refunds.map(({ recorded, revision: _, ...r }) => [r.refund_id, { projection: refundFromRow(r), recorded }]),
    ),
    owners: new Map((row?.owners ?? []).map((o) => [o.order_id, o.pos_id])),
    sequences: new Map((row?.streams ?? []).map((s) => [s.order_id, Number(s.last_sequence)])),
    newIds: row?.new_ids ?? [],
    now: row?.now ?? '',
    revisions: {
      orders: new Map(orders.map((o) => [o.order_id, o.revision])),
      refunds: new Map(refunds.map((r) => [r.refund_id, r.revision])),
    },
  };
}

/**
 * What the write expects of a row: the revision (or, for an event stream, the last sequence) the decision was made
 * from, or null where it found no row (the write then inserts it, and fails if one is there).
 */
export interface GuardRow {
  subject: string;
  expected: string | null;
}

/** Every assumption a batch's decision made of the rows it writes and of those it read only (docs/decisions/0024). */
export interface BatchGuards {
  /** The orders, refunds and event streams it writes, by key, each with what it expects there. */
  orders: GuardRow[];
  refunds: GuardRow[];
  streams: GuardRow[];
  /** The orders and refunds it read and does not write: still at the revision read. */
  orderReads: GuardRow[];
  refundReads: GuardRow[];
}

/** The guards of a batch decided from `state` whose write is `writes`. */
export function guardsOf(state: BatchState, writes: BatchWrites): BatchGuards {
  const expect = (stored: ReadonlyMap<string, string | number>, subject: string): GuardRow => {
    const value = stored.get(subject);
    return { subject, expected: value === undefined ? null : String(value) };
  };
  const orders = writes.orders.map((o) => o.projection.orderId);
  const refunds = writes.refunds.map((r) => r.projection.refundId);
  const unwritten = (revisions: ReadonlyMap<string, string>, written: readonly string[]): GuardRow[] => {
    const writing = new Set(written);
    return [...revisions].filter(([id]) => !writing.has(id)).map(([subject, expected]) => ({ subject, expected }));
  };
  return {
    orders: orders.map((id) => expect(state.revisions.orders, id)),
    refunds: refunds.map((id) => expect(state.revisions.refunds, id)),
    streams: writes.sequences.map((s) => expect(state.sequences, s.orderId)),
    orderReads: unwritten(state.revisions.orders, orders),
    refundReads: unwritten(state.revisions.refunds, refunds),
  };
}

/** A status its projection says was recorded: where its notification is (id, and receive time: its day). */
export interface HistoryLookup {
  meaning: string;
  id: string;
  at: string;
}

/** The batch's notifications whose statuses their projections say were recorded before. */
export function historyLookups(notifications: readonly Notification[], state: BatchState): HistoryLookup[] {
  const refs = new Map<string, HistoryLookup>();
  for (const n of notifications) {
    const stored: StoredProjection<unknown> | undefined =
      n.kind === 'order' ? state.orders.get(n.orderId) : state.refunds.get(n.refundId);
    const entry = stored?.recorded[n.status];
    if (entry) refs.set(meaningOf(n), { meaning: meaningOf(n), ...entry });
  }
  return [...refs.values()];
}

/** What the history read answers of a recorded notification (readHistory): its first body, variants, delivery rows. */
export type HistoryRow = Selected<NotificationsTable, 'id'> & {
  /** Hex, as are the variants' digests (encode(body_sha256, 'hex')). */
  [C in Column<'notifications'> & 'body_sha256']: string;
} & {
  variants: string[];
  delivery_rows: number;
};

/**
 * The state with the notifications history still holds; a status whose day retention removed is not among them (it is
 * recorded again).
 */
export function withStoredNotifications(
  state: BatchState,
  refs: readonly HistoryLookup[],
  rows: readonly HistoryRow[],
): BatchState {
  const byId = new Map(rows.map((r) => [r.id, r]));
  const storedNotifications = new Map<string, StoredNotification>();
  for (const ref of refs) {
    const row = byId.get(ref.id);
    if (!row) continue;
    storedNotifications.set(ref.meaning, {
      id: ref.id,
      receivedAt: ref.at,
      bodySha256: Buffer.from(row.body_sha256, 'hex'),
      variants: new Set(row.variants),
      deliveryRows: Number(row.delivery_rows),
    });
  }
  return { ...state, storedNotifications };
}
