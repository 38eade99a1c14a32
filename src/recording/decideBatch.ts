import { DELIVERY_OUTCOME_OF, type DeliveryOutcome, type StatusConflict } from '../domain/outcomes';
import type { DomainEvent } from '../outbox/cloudEvents';
import type { Notification } from '../parsing/notification';
import { signerFor } from '../verification/posBinding';
import type { SignatureMatch } from '../verification/verifySignature';
import type { ObservedVia } from '../database/schema';
import {
  DELIVERY_ROWS_PER_NOTIFICATION,
  meaningOf,
  type BatchDecision,
  type BatchItem,
  type BatchState,
  type BatchWrites,
  type StoredNotification,
} from './batch';
import type { KnownNotification } from './knownNotifications';
import type { Delivery, DeliveryKept, DeliveryAnswer } from './notificationStore';
import { ProjectionFold, statusEvent, type Folded, type RecordingContext } from './projectionFold';

/**
 * What a batch of notifications is, decided from the batch and what the database holds for it: a pure
 * function, so the whole decision can be tested without a database. For each notification, in arrival
 * order (BatchDecider.decide):
 *
 *   1. vouch: the orders it concerns (its own, and for a refund the order the refund was first recorded
 *      under), and the POS that vouches for it: the key of the POS its orders belong to, or the refusal
 *      (pos_mismatch) when no key that verified it is one; an order not bound yet is bound to it here;
 *   2. repeat: a meaning (order or refund, and status) recorded before is a duplicate, and a variant when
 *      its bytes differ from the first body's;
 *   3. recordNew: the state rules (applied, stale or conflict), the facts it disagrees with, and the event
 *      it publishes, numbered in its order's stream.
 *
 * A known repeat (the cache's) skips all three: only its delivery is recorded. The result is every row the
 * batch writes (batchQueries.ts) and every delivery's answer.
 */
export function decideBatch(items: readonly BatchItem[], state: BatchState, context: RecordingContext): BatchDecision {
  const decider = new BatchDecider(state, context);
  const results = items.map((item) => decider.decide(item));
  return { results, ...decider.finish() };
}

/** The orders a notification touches, whose POS must vouch for it: its order, and a refund's own order. */
function ordersOf(n: Notification, projections: ProjectionFold): string[] {
  if (n.kind === 'order') return [n.orderId];
  const recordedUnder = projections.refundOrder(n.refundId);
  return recordedUnder === undefined || recordedUnder === n.orderId ? [n.orderId] : [recordedUnder, n.orderId];
}

const REFUSED: DeliveryAnswer = { outcome: 'refused', reason: 'pos_mismatch' };

const duplicate = (notificationId: string, posId: string): DeliveryKept => ({
  outcome: 'duplicate',
  newVariant: false,
  notificationId,
  quarantineId: null,
  eventsWritten: 0,
  currentStatus: null,
  posId,
  disagreements: [],
});

/** The order a notification concerns, and the key of its POS that vouches for it. */
interface Vouched {
  orderId: string;
  signer: SignatureMatch;
  ownerPosId: string;
}

/** The batch's working state: the database's, as the batch's earlier notifications leave it. */
class BatchDecider {
  private readonly storedNotifications: Map<string, StoredNotification>;
  private readonly projections: ProjectionFold;
  private readonly owners: Map<string, string>;
  private readonly sequences = new Map<string, number>();
  private readonly writes: Omit<BatchWrites, 'orders' | 'refunds' | 'sequences'> = {
    newNotifications: [],
    owners: [],
    events: [],
    variants: [],
    deliveries: [],
  };
  private readonly known = new Map<string, KnownNotification>();
  private readonly conflicts: StatusConflict[] = [];
  /** Delivery rows per notification id, as the batch's write will leave them. */
  private readonly deliveryRows = new Map<string, number>();
  private readonly variantsAdded = new Set<string>();
  private nextId = 0;
  /** The transaction's time: its notifications' received_at, its events' `time` (and so part of their ids). */
  private readonly now: Date;

  constructor(
    private readonly state: BatchState,
    private readonly context: RecordingContext,
  ) {
    this.now = new Date(state.now);
    this.storedNotifications = new Map(state.storedNotifications);
    this.projections = new ProjectionFold(state.orders, state.refunds);
    this.owners = new Map(state.owners);
  }

  decide(item: BatchItem): DeliveryAnswer {
    if (item.known) {
      const { record, signer } = item.known;
      this.deliver(item.delivery, signer, 'duplicate', record, record.deliveryRows);
      return duplicate(record.id, signer.posId);
    }
    const vouched = this.vouch(item);
    if (!vouched) return REFUSED;
    const meaning = meaningOf(item.notification);
    const record = this.storedNotifications.get(meaning);
    return record ? this.repeat(item.delivery, meaning, record, vouched) : this.recordNew(item, meaning, vouched);
  }

  finish(): Omit<BatchDecision, 'results'> {
    const writes: BatchWrites = {
      ...this.writes,
      ...this.projections.changed(),
      sequences: [...this.sequences].map(([orderId, lastSequence]) => ({ orderId, lastSequence })),
    };
    return { writes, known: [...this.known.values()], conflicts: this.conflicts };
  }

  /** Step 1: the orders it concerns and the POS that vouches for it; binds the orders not bound yet. */
  private vouch({ delivery, notification }: BatchItem): Vouched | null {
    const concerned = ordersOf(notification, this.projections);
    const signer = signerFor(
      delivery.signers,
      concerned.map((o) => this.owners.get(o)),
    );
    if (!signer) return null;
    for (const orderId of concerned) {
      if (this.owners.has(orderId)) continue;
      this.owners.set(orderId, signer.posId);
      this.writes.owners.push({ orderId, posId: signer.posId });
    }
    const orderId = concerned[0] as string;
    return { orderId, signer, ownerPosId: this.owners.get(orderId) as string };
  }

  /** Step 2: a repeat of a meaning recorded before; bytes not stored for it before are a new variant. */
  private repeat(delivery: Delivery, meaning: string, record: StoredNotification, { signer }: Vouched): DeliveryAnswer {
    let newVariant = false;
    // A variant is the sender's re-serialization; the API's answers are not the notification's bytes.
    if (delivery.observedVia === 'notification' && !record.bodySha256.equals(delivery.bodySha256)) {
      const digest = delivery.bodySha256.toString('hex');
      const key = `${record.id}:${digest}`;
      if (!record.variants.has(digest) && !this.variantsAdded.has(key)) {
        this.variantsAdded.add(key);
        this.writes.variants.push({
          notificationId: record.id,
          notificationReceivedAt: record.receivedAt,
          bodySha256: delivery.bodySha256,
          body: delivery.body,
        });
        newVariant = true;
      }
    }
    const { id, receivedAt, bodySha256, deliveryRows } = record;
    const stored = { meaning, id, receivedAt, bodySha256, ownerPosId: signer.posId, deliveryRows: 0 };
    this.deliver(delivery, signer, 'duplicate', stored, deliveryRows);
    return { ...duplicate(id, signer.posId), newVariant };
  }

  /**
   * Step 3: a status seen for the first time (or again, once retention removed its history): its transition,
   * its event, its record, its place in its projection's recorded statuses, and its delivery.
   */
  private recordNew({ delivery, notification: n }: BatchItem, meaning: string, vouched: Vouched): DeliveryAnswer {
    // A restoration takes again the id and receive time it was first recorded with, and so its event's id.
    const { id, at: receivedAt } = delivery.restores ?? { id: this.reservedId(), at: this.state.now };
    const stored = { id, receivedAt, bodySha256: delivery.bodySha256, variants: new Set<string>(), deliveryRows: 0 };
    this.storedNotifications.set(meaning, stored);
    const { signer, orderId, ownerPosId } = vouched;
    const folded = this.projections.fold(n, ownerPosId, { id, at: receivedAt });
    const event = this.event(
      n,
      orderId,
      folded,
      delivery.observedVia,
      delivery.restores ? new Date(receivedAt) : this.now,
    );
    if (event) this.writes.events.push(event);
    if (folded.outcome === 'conflict' && folded.previousStatus !== null)
      this.conflicts.push({
        kind: n.kind,
        status: n.status,
        keptStatus: folded.previousStatus,
        source: folded.recordedBefore ? 'replay' : delivery.observedVia,
      });
    this.writes.newNotifications.push({
      id,
      notification: n,
      orderId,
      signer,
      transition: folded.outcome,
      receivedAt,
      body: delivery.body,
      bodySha256: delivery.bodySha256,
      disagreements: folded.disagreements,
      observedVia: delivery.observedVia,
    });
    const outcome = DELIVERY_OUTCOME_OF[folded.outcome];
    const known = { meaning, id, receivedAt, bodySha256: delivery.bodySha256, ownerPosId, deliveryRows: 0 };
    this.deliver(delivery, signer, outcome, known, 0);
    return {
      outcome,
      newVariant: false,
      notificationId: id,
      quarantineId: null,
      eventsWritten: event ? 1 : 0,
      currentStatus: folded.outcome === 'applied' ? null : folded.previousStatus,
      posId: signer.posId,
      disagreements: folded.disagreements.map((d) => d.field),
    };
  }

  /** One of the ids the read reserved for the batch's new notifications. */
  private reservedId(): string {
    const id = this.state.newIds[this.nextId++];
    if (id === undefined) throw new Error('a batch recorded more new notifications than ids were reserved for it');
    return id;
  }

  /** The event a status publishes (none when stale), numbered in its order's stream, at its notification's time. */
  private event(n: Notification, orderId: string, folded: Folded, via: ObservedVia, time: Date): DomainEvent | null {
    return statusEvent(this.context, n, folded, via, time, () => this.nextSequence(orderId));
  }

  /** The next number in an order's event stream (refund events count in their order's). */
  private nextSequence(orderId: string): number {
    const next = (this.sequences.get(orderId) ?? this.state.sequences.get(orderId) ?? 0) + 1;
    this.sequences.set(orderId, next);
    return next;
  }

  /** The delivery's audit entry; remembers the record (with its rows so far) once the batch commits. */
  private deliver(
    delivery: Delivery,
    signer: SignatureMatch,
    outcome: DeliveryOutcome,
    record: KnownNotification,
    rowsBefore: number,
  ): void {
    const rows = this.deliveryRows.get(record.id) ?? rowsBefore;
    const countedOnly = rows >= DELIVERY_ROWS_PER_NOTIFICATION;
    if (!countedOnly) this.deliveryRows.set(record.id, rows + 1);
    this.writes.deliveries.push({
      delivery,
      signer,
      outcome,
      notificationId: record.id,
      notificationReceivedAt: record.receivedAt,
      countedOnly,
    });
    this.known.set(record.meaning, { ...record, deliveryRows: this.deliveryRows.get(record.id) ?? rows });
  }
}
