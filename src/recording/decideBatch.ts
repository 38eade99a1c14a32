import type { DeliveryOutcome, Disagreement, ObservedVia } from '../database/schema';
import { buildEvent, statusEventType, type DomainEvent } from '../outbox/events';
import { notificationSubject, type Notification } from '../parsing/notification';
import { signerFor } from '../verification/posBinding';
import type { SignatureMatch } from '../verification/verifySignature';
import type { KnownRecord, KnownRepeat } from './knownNotifications';
import type { Delivery, Recorded, RecordResult } from './notificationStore';
import {
  applyOrder,
  applyRefund,
  orderEventData,
  refundEventData,
  type OrderProjection,
  type RefundProjection,
} from './projection';
import type { TransitionOutcome } from './statusRules';

/**
 * What a batch of notifications is, decided from the batch and what the database holds for it: a pure
 * function, so the whole decision can be tested without a database. For each notification, in arrival
 * order:
 *
 *   1. the order it concerns: its own, or for a refund the order the refund was first recorded under;
 *   2. the POS that vouches for it: the key of the POS its orders belong to, or the refusal (pos_mismatch)
 *      when no key that verified it is one; an order not bound yet is bound to it here;
 *   3. new or repeat: a meaning (order or refund, and status) recorded before is a duplicate, and a variant
 *      when its bytes differ from the first body's;
 *   4. for a new one: the state rules (applied, stale or conflict), the facts it disagrees with, and the
 *      event it publishes, numbered in its order's stream.
 *
 * The result is every row the batch writes (batchStatements.ts sends them as one statement) and every
 * delivery's answer.
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
 * A notification recorded before: its id, the digest of the body stored with it, and its delivery rows
 * (counted up to DELIVERY_ROWS_PER_NOTIFICATION).
 */
export interface StoredRecord {
  id: string;
  bodySha256: Buffer;
  deliveryRows: number;
}

/** What the database holds for a batch, read under the locks of its orders. */
export interface BatchState {
  /** By meaning (meaningOf). */
  records: ReadonlyMap<string, StoredRecord>;
  orders: ReadonlyMap<string, OrderProjection>;
  refunds: ReadonlyMap<string, RefundProjection>;
  /** The POS each order belongs to. */
  owners: ReadonlyMap<string, string>;
  /** Last event sequence per order (refund events count in their order's sequence). */
  sequences: ReadonlyMap<string, number>;
  /** Ids reserved for the notifications the batch records for the first time (one per meaning, at least). */
  newIds: readonly string[];
}

/** A notification recorded for the first time. */
export interface NewRecord {
  id: string;
  notification: Notification;
  /** The order it concerns (for a refund, the order the refund belongs to). */
  orderId: string;
  signer: SignatureMatch;
  outcome: TransitionOutcome;
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
  countedOnly: boolean;
}

/** Everything a batch writes. */
export interface BatchWrites {
  records: NewRecord[];
  owners: Array<{ orderId: string; posId: string }>;
  /** Projections that changed, in their final state. */
  orders: OrderProjection[];
  refunds: RefundProjection[];
  /** Orders whose last sequence changed, with the new value. */
  sequences: Array<{ orderId: string; lastSequence: number }>;
  events: DomainEvent[];
  /** Bodies with a known meaning but new bytes (the write keeps those it has not seen). */
  variants: Array<{ notificationId: string; bodySha256: Buffer; body: Buffer }>;
  deliveries: DeliveryEntry[];
}

export interface BatchDecision {
  /** One per item, in input order; newVariant is settled once the write tells which variants were new. */
  results: RecordResult[];
  writes: BatchWrites;
  /** Records to remember as committed once the transaction is (KnownNotifications). */
  known: KnownRecord[];
  /**
   * Duplicates whose bytes differ from the first body's, by item index: the variant's key
   * (`notificationId:sha256 hex`), which the write answers when it added the variant.
   */
  variantKeys: ReadonlyMap<number, string>;
}

/**
 * What a notification means: kind, subject (orderId or refundId) and status, joined by U+001F, which
 * identifiers never contain (the parser refuses control characters). Two deliveries with the same meaning
 * are the same notification.
 */
export const meaningKey = (kind: string, subject: string, status: string): string =>
  `${kind}\u001f${subject}\u001f${status}`;

export const meaningOf = (n: Notification): string => meaningKey(n.kind, notificationSubject(n), n.status);

const DELIVERY_OUTCOME: Record<TransitionOutcome, DeliveryOutcome> = {
  applied: 'accepted',
  stale: 'stale',
  conflict: 'conflict',
};

const REFUSED: RecordResult = { outcome: 'refused', reason: 'pos_mismatch' };

const duplicate = (notificationId: string, posId: string): Recorded => ({
  outcome: 'duplicate',
  newVariant: false,
  notificationId,
  quarantineId: null,
  eventsWritten: 0,
  currentStatus: null,
  posId,
  disagreements: [],
});

/** The orders a notification touches, whose POS must vouch for it: its order, and a refund's own order. */
export function ordersOf(n: Notification, refunds: ReadonlyMap<string, RefundProjection>): string[] {
  if (n.kind === 'order') return [n.orderId];
  const recordedUnder = refunds.get(n.refundId)?.orderId;
  return recordedUnder === undefined || recordedUnder === n.orderId ? [n.orderId] : [recordedUnder, n.orderId];
}

export function decideBatch(
  items: readonly BatchItem[],
  state: BatchState,
  eventSource: string,
  now: Date = new Date(),
): BatchDecision {
  const records = new Map(state.records);
  const orders = new Map(state.orders);
  const refunds = new Map(state.refunds);
  const owners = new Map(state.owners);
  const sequences = new Map<string, number>();
  const changedOrders = new Set<string>();
  const changedRefunds = new Set<string>();
  const writes: BatchWrites = {
    records: [],
    owners: [],
    orders: [],
    refunds: [],
    sequences: [],
    events: [],
    variants: [],
    deliveries: [],
  };
  const known = new Map<string, KnownRecord>();
  const variantKeys = new Map<number, string>();
  /** Delivery rows per notification id, as the batch's write will leave them. */
  const deliveryRows = new Map<string, number>();
  const variantsAdded = new Set<string>();
  let nextId = 0;

  const nextSequence = (orderId: string): number => {
    const next = (sequences.get(orderId) ?? state.sequences.get(orderId) ?? 0) + 1;
    sequences.set(orderId, next);
    return next;
  };

  /** The delivery's audit entry; remembers the record (with its rows so far) once the batch commits. */
  const deliver = (
    delivery: Delivery,
    signer: SignatureMatch,
    outcome: DeliveryOutcome,
    record: KnownRecord,
    rowsBefore: number,
  ): void => {
    const rows = deliveryRows.get(record.id) ?? rowsBefore;
    const countedOnly = rows >= DELIVERY_ROWS_PER_NOTIFICATION;
    if (!countedOnly) deliveryRows.set(record.id, rows + 1);
    writes.deliveries.push({ delivery, signer, outcome, notificationId: record.id, countedOnly });
    known.set(record.meaning, { ...record, deliveryRows: deliveryRows.get(record.id) ?? rows });
  };

  const decide = (item: BatchItem, index: number): RecordResult => {
    const { delivery, notification: n } = item;
    if (item.known) {
      const { record, signer } = item.known;
      deliver(delivery, signer, 'duplicate', record, record.deliveryRows);
      return duplicate(record.id, signer.posId);
    }

    // 1 and 2: the orders it concerns, and the POS that vouches for it.
    const concerned = ordersOf(n, refunds);
    const orderId = concerned[0] as string;
    const signer = signerFor(
      delivery.signers,
      concerned.map((o) => owners.get(o)),
    );
    if (!signer) return REFUSED;
    for (const o of concerned) {
      if (owners.has(o)) continue;
      owners.set(o, signer.posId);
      writes.owners.push({ orderId: o, posId: signer.posId });
    }

    // 3: a repeat of a meaning recorded before.
    const meaning = meaningOf(n);
    const record = records.get(meaning);
    if (record) {
      // A variant is the sender's re-serialization; the API's answers are not the notification's bytes.
      if (delivery.observedVia === 'notification' && !record.bodySha256.equals(delivery.bodySha256)) {
        const variantKey = `${record.id}:${delivery.bodySha256.toString('hex')}`;
        variantKeys.set(index, variantKey);
        if (!variantsAdded.has(variantKey)) {
          variantsAdded.add(variantKey);
          writes.variants.push({ notificationId: record.id, bodySha256: delivery.bodySha256, body: delivery.body });
        }
      }
      const stored = { meaning, id: record.id, bodySha256: record.bodySha256, ownerPosId: signer.posId };
      deliver(delivery, signer, 'duplicate', { ...stored, deliveryRows: 0 }, record.deliveryRows);
      return duplicate(record.id, signer.posId);
    }

    // 4: a new one.
    const id = state.newIds[nextId++];
    if (id === undefined) throw new Error('a batch recorded more new notifications than ids were reserved for it');
    records.set(meaning, { id, bodySha256: delivery.bodySha256, deliveryRows: 0 });
    const owner = owners.get(orderId) as string;
    let event: DomainEvent | null = null;
    let transition;
    if (n.kind === 'order') {
      transition = applyOrder(orders.get(orderId), n, owner);
      if (transition.outcome === 'applied') {
        orders.set(orderId, transition.projection);
        changedOrders.add(orderId);
      }
      if (transition.outcome !== 'stale') {
        const data = orderEventData(
          n,
          transition.projection,
          transition.previousStatus,
          nextSequence(orderId),
          id,
          delivery.observedVia,
          transition.disagreements,
        );
        event = buildEvent(
          eventSource,
          statusEventType('order', n.status, transition.outcome === 'conflict'),
          data,
          now,
        );
      }
    } else {
      transition = applyRefund(refunds.get(n.refundId), n);
      if (transition.outcome === 'applied') {
        refunds.set(n.refundId, transition.projection);
        changedRefunds.add(n.refundId);
      }
      if (transition.outcome !== 'stale') {
        const data = refundEventData(
          n,
          transition.projection,
          transition.previousStatus,
          nextSequence(orderId),
          id,
          delivery.observedVia,
          transition.disagreements,
        );
        event = buildEvent(
          eventSource,
          statusEventType('refund', n.status, transition.outcome === 'conflict'),
          data,
          now,
        );
      }
    }
    if (event) writes.events.push(event);
    const { outcome, previousStatus, disagreements } = transition;
    writes.records.push({
      id,
      notification: n,
      orderId,
      signer,
      outcome,
      body: delivery.body,
      bodySha256: delivery.bodySha256,
      disagreements,
      observedVia: delivery.observedVia,
    });
    const stored = { meaning, id, bodySha256: delivery.bodySha256, ownerPosId: owner, deliveryRows: 0 };
    deliver(delivery, signer, DELIVERY_OUTCOME[outcome], stored, 0);
    return {
      outcome: DELIVERY_OUTCOME[outcome],
      newVariant: false,
      notificationId: id,
      quarantineId: null,
      eventsWritten: event ? 1 : 0,
      currentStatus: outcome === 'applied' ? null : previousStatus,
      posId: signer.posId,
      disagreements: disagreements.map((d) => d.field),
    };
  };

  const results = items.map(decide);
  writes.orders = [...changedOrders].map((id) => orders.get(id) as OrderProjection);
  writes.refunds = [...changedRefunds].map((id) => refunds.get(id) as RefundProjection);
  writes.sequences = [...sequences].map(([orderId, lastSequence]) => ({ orderId, lastSequence }));
  return { results, writes, known: [...known.values()], variantKeys };
}
