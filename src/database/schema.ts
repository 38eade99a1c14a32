import type { ColumnType, Generated } from 'kysely';

/** Typed views of the tables in sql/. bigint columns come back from pg as strings. */

type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;
type BigintId = ColumnType<string, never, never>;
type Amount = ColumnType<string | null, string | null, string | null>;

export interface NotificationsTable {
  id: BigintId;
  kind: 'order' | 'refund';
  subject_id: string;
  status: string;
  order_id: string;
  outcome: 'applied' | 'stale' | 'conflict';
  pos_id: string;
  key_fingerprint: string;
  body: Buffer | null;
  body_sha256: Buffer;
  parsed: ColumnType<unknown, string, string>;
  disagreements: ColumnType<Disagreement[] | null, string | null, string | null>;
  received_at: Timestamp;
  observed_via: Generated<ObservedVia>;
}

/** A fact a notification stated differently from the one the projection keeps (sql/004). */
export interface Disagreement {
  field: string;
  kept: string;
  received: string;
}

export interface NotificationVariantsTable {
  notification_id: string;
  body_sha256: Buffer;
  body: Buffer | null;
  first_received_at: Timestamp;
}

export interface QuarantinedNotificationsTable {
  id: BigintId;
  reason: string;
  detail: string;
  pos_id: string;
  key_fingerprint: string;
  body: Buffer | null;
  body_sha256: Buffer;
  received_at: Timestamp;
  resolved_at: Date | null;
  resolution: string | null;
}

export type DeliveryOutcome = 'accepted' | 'duplicate' | 'stale' | 'conflict' | 'quarantined';

/** How a status was learned: delivered by the sender, or read from the payment API (sql/005). */
export type ObservedVia = 'notification' | 'reconciliation';

export interface DeliveriesTable {
  id: BigintId;
  received_at: Timestamp;
  source_address: string | null;
  processing_time_ms: number | null;
  pos_id: string;
  key_fingerprint: string;
  body_sha256: Buffer;
  outcome: DeliveryOutcome;
  notification_id: string | null;
  quarantine_id: string | null;
  observed_via: Generated<ObservedVia>;
}

export interface OrdersTable {
  order_id: string;
  ext_order_id: string | null;
  merchant_pos_id: string | null;
  status: string;
  status_rank: number;
  total_amount: Amount;
  currency_code: string | null;
  payment_id: string | null;
  pay_method_type: string | null;
  local_receipt_date_time: string | null;
  created_at: Generated<Date>;
  updated_at: Timestamp;
}

export interface RefundsTable {
  refund_id: string;
  order_id: string;
  ext_order_id: string | null;
  ext_refund_id: string | null;
  status: string;
  status_rank: number;
  amount: Amount;
  currency_code: string | null;
  status_date_time: string | null;
  refund_date: string | null;
  reason: string | null;
  reason_description: string | null;
  created_at: Generated<Date>;
  updated_at: Timestamp;
}

/** An open order's place in the reconciliation schedule since its last observation (sql/005, sql/006). */
export interface ReconciliationChecksTable {
  order_id: string;
  observed_at: Date;
  /** Bumped when a newer observation replaces observed_at; bigint, as text. */
  observation: ColumnType<string, never, never>;
  attempts: Generated<number>;
  next_check_at: Date | null;
  last_checked_at: Date | null;
  last_result: string | null;
  given_up_at: Date | null;
}

/** How far the reconciler has taken new observations into its schedule (sql/006): one row. */
export interface ReconciliationProgressTable {
  singleton: Generated<boolean>;
  observed_through: Date;
}

/** The POS each order belongs to, bound by its first authentic notification (sql/004). */
export interface OrderOwnersTable {
  order_id: string;
  pos_id: string;
  bound_at: Timestamp;
}

/** Deliveries past the first 100 of one notification or quarantined body, counted (sql/004). */
export interface DeliveryRepeatsTable {
  notification_id: string | null;
  quarantine_id: string | null;
  deliveries: ColumnType<string, number, number>;
  first_at: Timestamp;
  last_at: Timestamp;
}

export interface EventStreamsTable {
  order_id: string;
  last_sequence: ColumnType<string, number, number>;
}

export interface OutboxEventsTable {
  id: string;
  order_id: string;
  sequence: ColumnType<string, number | string, never>;
  type: string;
  message: string;
  created_at: Timestamp;
  published_at: Date | null;
  attempts: Generated<number>;
  next_attempt_at: Timestamp;
  last_error: string | null;
}

export interface Database {
  notifications: NotificationsTable;
  notification_variants: NotificationVariantsTable;
  quarantined_notifications: QuarantinedNotificationsTable;
  deliveries: DeliveriesTable;
  delivery_repeats: DeliveryRepeatsTable;
  orders: OrdersTable;
  order_owners: OrderOwnersTable;
  refunds: RefundsTable;
  event_streams: EventStreamsTable;
  outbox_events: OutboxEventsTable;
  reconciliation_checks: ReconciliationChecksTable;
  reconciliation_progress: ReconciliationProgressTable;
}
