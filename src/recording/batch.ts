import type { Disagreement, ObservedVia } from '../database/schema';
import type { DeliveryOutcome, StatusConflict, StatusTransition } from '../domain/outcomes';
import type { DomainEvent } from '../outbox/cloudEvents';
import { notificationSubject, type Notification } from '../parsing/notification';
import type { SignatureMatch } from '../verification/verifySignature';
import type { KnownNotification, KnownRepeat } from './knownNotifications';
import type { Delivery, DeliveryAnswer } from './notificationStore';
import type { OrderProjection, RefundProjection } from './projection';
import type { StoredProjection } from './projectionFold';

/**
 * A recording batch as data: what goes in (items), what the database holds for it (state), and what comes
 * out (the decision: every row to write and every answer). The decision (decideBatch.ts), the rows
 * (batchRows.ts), the SQL (batchQueries.ts) and the transaction (recordBatch.ts) all speak these types.
 */

/** A notification of the batch, with what the known-duplicates cache knows of it. */
export interface BatchItem {
  delivery: Delivery;
  notification: Notification;
  /** An exact repeat of a record known committed, vouched for by its order's POS: nothing to read or decide. */
  known?: KnownRepeat;
}

/**
 * Deliveries of one notification past this many are counted (delivery_repeats) instead of a row each: a
 * captured body verifies forever, and replays must not grow the audit without bound.
 */
export const DELIVERY_ROWS_PER_NOTIFICATION = 100;

/**
 * A notification recorded before, found in its day's partition: its id and receive time, the digest of the body
 * stored with it and of its variants, and its delivery rows (counted up to DELIVERY_ROWS_PER_NOTIFICATION). A
 * status whose history retention removed is not one: it is recorded again.
 */
export interface StoredNotification {
  id: string;
  /** As the database wrote it (text, microseconds kept): the day partition it is in. */
  receivedAt: string;
  bodySha256: Buffer;
  /** Digests (hex) of the variants stored for it. */
  variants: ReadonlySet<string>;
  deliveryRows: number;
}

/** What the database holds for a batch, read under the locks of its orders. */
export interface BatchState {
  /** By meaning (meaningOf), within history retention. */
  storedNotifications: ReadonlyMap<string, StoredNotification>;
  orders: ReadonlyMap<string, StoredProjection<OrderProjection>>;
  refunds: ReadonlyMap<string, StoredProjection<RefundProjection>>;
  /** The POS each order belongs to. */
  owners: ReadonlyMap<string, string>;
  /** Last event sequence per order (refund events count in their order's sequence). */
  sequences: ReadonlyMap<string, number>;
  /** Ids reserved for the notifications the batch records for the first time (one per meaning, at least). */
  newIds: readonly string[];
  /** The transaction's time as the database gives it (text): what a new notification is received at. */
  now: string;
  /**
   * The revision of each order and refund row the state was read or kept from (docs/decisions/0024): the write
   * changes only rows still at it, and fails whole otherwise. A row absent here was absent.
   */
  revisions: Revisions;
}

/** Row revisions by order id and by refund id. */
export interface Revisions {
  orders: ReadonlyMap<string, string>;
  refunds: ReadonlyMap<string, string>;
}

export const NO_REVISIONS: Revisions = { orders: new Map(), refunds: new Map() };

/** The state of a batch that needs none: every item a known repeat. */
export const NOTHING_READ: BatchState = {
  storedNotifications: new Map(),
  orders: new Map(),
  refunds: new Map(),
  owners: new Map(),
  sequences: new Map(),
  newIds: [],
  now: '',
  revisions: NO_REVISIONS,
};

/**
 * What a later batch's read finds of the orders a batch wrote: their projections, owners and event sequences,
 * as the write leaves them (not its notifications: a later repeat finds those in history). For a caller that
 * decides batches one after another with no database between them (the history seeder).
 */
export function stateAfter(state: BatchState, { orders, refunds, owners, sequences }: BatchWrites): BatchState {
  return {
    ...state,
    storedNotifications: new Map(),
    orders: new Map([...state.orders, ...orders.map((o) => [o.projection.orderId, o] as const)]),
    refunds: new Map([...state.refunds, ...refunds.map((r) => [r.projection.refundId, r] as const)]),
    owners: new Map([...state.owners, ...owners.map((o) => [o.orderId, o.posId] as const)]),
    sequences: new Map([...state.sequences, ...sequences.map((s) => [s.orderId, s.lastSequence] as const)]),
  };
}

/** A notification recorded for the first time. */
export interface NewNotification {
  id: string;
  notification: Notification;
  /** The order it concerns (for a refund, the order the refund belongs to). */
  orderId: string;
  signer: SignatureMatch;
  transition: StatusTransition;
  /** The transaction's time (BatchState.now). */
  receivedAt: string;
  body: Buffer;
  bodySha256: Buffer;
  disagreements: Disagreement[];
  observedVia: ObservedVia;
}

/** A delivery's audit row, or only a count when its notification has rows enough (countedOnly). */
export interface DeliveryEntry {
  delivery: Delivery;
  signer: SignatureMatch;
  outcome: DeliveryOutcome;
  notificationId: string;
  /** Its notification's receive time: the day the delivery lives in, with it. */
  notificationReceivedAt: string;
  countedOnly: boolean;
}

/** Everything a batch writes. */
export interface BatchWrites {
  newNotifications: NewNotification[];
  owners: Array<{ orderId: string; posId: string }>;
  /** Projections that changed, or whose recorded statuses did, in their final state. */
  orders: Array<StoredProjection<OrderProjection>>;
  refunds: Array<StoredProjection<RefundProjection>>;
  /** Orders whose last sequence changed, with the new value. */
  sequences: Array<{ orderId: string; lastSequence: number }>;
  events: DomainEvent[];
  /** Bodies with a known meaning but bytes not stored before. */
  variants: Array<{ notificationId: string; notificationReceivedAt: string; bodySha256: Buffer; body: Buffer }>;
  deliveries: DeliveryEntry[];
}

export interface BatchDecision {
  /** One per item, in input order. */
  results: DeliveryAnswer[];
  writes: BatchWrites;
  /** Records to remember as committed once the transaction is (KnownNotifications). */
  known: KnownNotification[];
  /** The status conflicts the batch records, whoever observed them: counted once it commits. */
  conflicts: StatusConflict[];
}

/**
 * What a notification means: kind, subject (orderId or refundId) and status, joined by U+001F, which
 * identifiers never contain (the parser refuses control characters). Two deliveries with the same meaning
 * are the same notification.
 */
export const meaningKey = (kind: string, subject: string, status: string): string =>
  `${kind}\u001f${subject}\u001f${status}`;

export const meaningOf = (n: Notification): string => meaningKey(n.kind, notificationSubject(n), n.status);
