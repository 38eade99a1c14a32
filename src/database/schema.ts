import type { ColumnType, Generated } from 'kysely';
import type { DeliveryOutcome, StatusTransition } from '../domain/outcomes';
import type { Notification } from '../parsing/notification';

/** Typed views of the tables in sql/. bigint columns come back from pg as strings. */

type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;
type BigintId = ColumnType<string, never, never>;
type Amount = ColumnType<string | null, string | null, string | null>;

/**
 * History tables are partitioned by the day a notification was first received (UTC): notifications by their
 * received_at, their variants and deliveries by their notification's (sql/007, src/partitions/). They reference
 * each other by value, without foreign keys.
 */
export interface NotificationsTable {
  /** Reserved from notification_ids by the recorder's read, then inserted (src/recording/batchQueries.ts). */
  id: ColumnType<string, string, never>;
  kind: 'order' | 'refund';
  subject_id: string;
  status: string;
  order_id: string;
  outcome: StatusTransition;
  pos_id: string;
  key_fingerprint: string;
  body: Buffer | null;
  body_sha256: Buffer;
  /** The typed notification read from the body (jsonb); read back as unknown: rows may predate its fields. */
  parsed: ColumnType<unknown, Notification, never>;
  disagreements: ColumnType<Disagreement[] | null, Disagreement[] | null, never>;
  /** The partition key. The recorder writes its transaction's time, as text (microseconds kept). */
  received_at: ColumnType<Date, string, never>;
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
  /** Its notification's received_at: the partition key (the day it lives and goes with). */
  notification_received_at: ColumnType<Date, string, never>;
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

/**
 * How a status was learned: delivered by the sender, read from the payment API (sql/005), or restored from the
 * journal of recorded notifications after a failover lost it (sql/018).
 */
export type ObservedVia = 'notification' | 'reconciliation' | 'restoration';

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
  /** When what it delivered was first received (the notification or quarantined body): the partition key. */
  notification_received_at: ColumnType<Date, string, never>;
}

/**
 * Each status recorded for an order or a refund: its notification's id and receive time (the day partition it is
 * in). What dedup needs, kept with the projection, which retention never removes (sql/007).
 */
export type RecordedStatuses = Readonly<Record<string, { id: string; at: string }>>;

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
  recorded: ColumnType<RecordedStatuses, RecordedStatuses | undefined, RecordedStatuses>;
  /** A random token, new at every write of the row (sql/025, docs/decisions/0024); bigint, read as text. */
  revision: Generated<string>;
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
  recorded: ColumnType<RecordedStatuses, RecordedStatuses | undefined, RecordedStatuses>;
  /** A random token, new at every write of the row (sql/025, docs/decisions/0024); bigint, read as text. */
  revision: Generated<string>;
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
  /** The POS to ask with when order_owners has none (an expected order's, or a forced check's; sql/016). */
  pos_id: string | null;
}

/** Orders the shop said it created, until heard of or RECONCILE_GIVE_UP old (sql/016). */
export interface ExpectedOrdersTable {
  order_id: string;
  pos_id: string;
  /** When the shop created it. */
  created_at: Date;
  /** When the reconciler took it into its schedule, no notification having named it; null while it waits. */
  taken_at: Date | null;
}

/** An order to check once whatever its state here, for a cause, and how that check ended (sql/017). */
export interface ForcedChecksTable {
  cause: string;
  order_id: string;
  requested_at: Generated<Date>;
  /** Null while pending. */
  checked_at: Date | null;
  /** A check's result, `no_pos` or `given_up`; null while pending. */
  result: string | null;
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
  /** Published, but the broker returned it: no queue was bound for its routing key (sql/010). */
  unrouted_at: ColumnType<Date | null, never, Date | null>;
  /**
   * The writer's top-level transaction id (xid8, read as text), by default: the relay reads events by it (sql/024,
   * docs/decisions/0023). Null for rows from before it and for those `events rebuild` restores, published per row.
   */
  xid: ColumnType<string | null, null | undefined, never>;
}

/** How far the relay has published (sql/024): one row. */
export interface OutboxCursorTable {
  singleton: ColumnType<boolean, never, never>;
  /** Every event of every transaction up to this id is published or held. */
  xid: ColumnType<string, never, string>;
  advanced_at: ColumnType<Date, never, Date | string>;
  /** The broker failing whole batches: the relay's back-off, as an event's was (EVENT_RETRY). */
  attempts: ColumnType<number, never, number>;
  next_attempt_at: ColumnType<Date, never, Date | string>;
  last_error: ColumnType<string | null, never, string | null>;
}

/** Where the cursor was, from `since` to `reached_at` (a second at most): when an event below it was published (sql/024). */
export interface OutboxCursorHistoryTable {
  opened_at: ColumnType<Date, Date | string, never>;
  xid: ColumnType<string, string, string>;
  reached_at: ColumnType<Date, Date | string, Date | string>;
}

/** Events published one by one (refused by the broker, re-published, or waiting at sql/024), in sequence per order. */
export interface OutboxHeldTable {
  event_id: ColumnType<string, string, never>;
  order_id: ColumnType<string, string, never>;
  sequence: ColumnType<string, number | string, never>;
  attempts: ColumnType<number, number | undefined, number>;
  next_attempt_at: Timestamp;
  last_error: string | null;
  held_at: ColumnType<Date, Date | string | undefined, never>;
}

/** Ids and times of events written before ids were derived (sql/011): what `events rebuild` gives them again. */
export interface LegacyEventIdsTable {
  notification_id: ColumnType<string, string, never>;
  event_id: string;
  event_time: Date;
  created_at: Date;
}

/** One row: the first notification whose event id is derived (sql/011). */
export interface EventIdDerivationTable {
  derived_from: ColumnType<string, string, never>;
}

/** The migrations applied (src/database/migrations.ts), by file name, with the digest of the file as applied. */
export interface SchemaMigrationsTable {
  name: string;
  sha256: string;
  applied_at: Generated<Date>;
}

/** Days whose bodies were purged (sql/007): a purge reads only the days not purged yet. */
export interface HistoryBodiesPurgedTable {
  day: ColumnType<string, string, never>;
  purged_at: Generated<Date>;
}

/** Where an audited action came from (sql/012). */
export type AuditVia = 'console' | 'api' | 'command line';
/** As what the actor acted: a console role, a downstream team (EVENT_TEAM_TOKENS), or unknown (a refused token). */
export type AuditRole = 'viewer' | 'operator' | 'team' | null;

/**
 * Every sign-in and action (sql/009, sql/012): who, as what, through which door, did what to what, and how it
 * ended; a row that coalesces repeats (coalesce_key) counts them, from `at` to `last_at`.
 */
export interface ConsoleAuditTable {
  id: BigintId;
  at: Generated<Date>;
  actor: string;
  role: AuditRole;
  action: string;
  target: string | null;
  order_id: string | null;
  result: string;
  detail: Generated<string>;
  via: Generated<AuditVia>;
  source_address: string | null;
  count: Generated<number>;
  last_at: Date | null;
  coalesce_key: string | null;
}

/** A signed-in person (sql/012), found by the SHA-256 of their cookie's random id. */
export interface ConsoleSessionsTable {
  id_hash: Buffer;
  name: string;
  role: 'viewer' | 'operator';
  token_fingerprint: string;
  source_address: string | null;
  created_at: Generated<Date>;
  last_seen_at: Generated<Date>;
  expires_at: Date;
}

/** Failed sign-ins per source and minute (sql/012), for every replica's throttle. */
export interface ConsoleSignInFailuresTable {
  minute: Date;
  source: string;
  failures: number;
}

/** Whether the payment API answers each POS's checks (sql/014), written when that changes. */
export interface PaymentApiReachabilityTable {
  pos_id: string;
  state: PaymentApiState;
  /** The first check that found it in this state. */
  entered_at: Date;
  detail: string;
  confirmed_at: Date;
}

/** The payment API for a POS: it answers, it cannot be reached, or it refuses the POS's credentials. */
export type PaymentApiState = 'answering' | 'unreachable' | 'refused';

/** The beat every replica moves forward, and the database server's identity as the service last knew it (sql/018). */
export interface DatabaseWatchTable {
  singleton: Generated<boolean>;
  beat: ColumnType<string, never, string>;
  beat_at: Timestamp;
  server: string | null;
  timeline: number | null;
}

/** Why a failover was noticed: the timeline or the server changed, or the beat went back. */
export type FailoverCause = 'timeline' | 'server' | 'beat';

/** Where a failover's recovery is: restoring from the journal, reconciling the window before it, or done. */
export type RecoveryState = 'restoring' | 'reconciling' | 'done';

/** Each failover noticed, and its recovery (sql/018). */
export interface FailoversTable {
  id: BigintId;
  noticed_at: Generated<Date>;
  noticed_by: string;
  cause: FailoverCause;
  previous_identity: string;
  current_identity: string;
  last_point: Date;
  state: Generated<RecoveryState>;
  journal_read: Generated<number>;
  restored: Generated<number>;
  already_recorded: Generated<number>;
  set_aside: Generated<number>;
  journal_problem: string | null;
  window_orders: number | null;
  uncovered: number | null;
  restored_at: Date | null;
  done_at: Date | null;
}

/** Each recorder lane's last commit: the token its next statement expects (sql/025, docs/decisions/0024). */
export interface RecorderLanesTable {
  lane: string;
  /** bigint, read as text. */
  token: string;
  written_at: Generated<Date>;
}

export interface Database {
  recorder_lanes: RecorderLanesTable;
  database_watch: DatabaseWatchTable;
  failovers: FailoversTable;
  console_audit: ConsoleAuditTable;
  console_sessions: ConsoleSessionsTable;
  console_sign_in_failures: ConsoleSignInFailuresTable;
  payment_api_reachability: PaymentApiReachabilityTable;
  history_bodies_purged: HistoryBodiesPurgedTable;
  schema_migrations: SchemaMigrationsTable;
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
  outbox_cursor: OutboxCursorTable;
  outbox_cursor_history: OutboxCursorHistoryTable;
  outbox_held: OutboxHeldTable;
  legacy_event_ids: LegacyEventIdsTable;
  event_id_derivation: EventIdDerivationTable;
  reconciliation_checks: ReconciliationChecksTable;
  reconciliation_progress: ReconciliationProgressTable;
  expected_orders: ExpectedOrdersTable;
  forced_checks: ForcedChecksTable;
}
