import { DELIVERY_OUTCOME_OF, type DeliveryOutcome, type StatusConflict } from '../domain/outcomes';
import { buildEvent, statusEventType, type DomainEvent } from '../outbox/events';
import type { Notification } from '../parsing/notification';
import { signerFor } from '../verification/posBinding';
import type { SignatureMatch } from '../verification/verifySignature';
import type { RecordedStatuses } from '../database/schema';
import {
  DELIVERY_ROWS_PER_NOTIFICATION,
  meaningOf,
  type BatchDecision,
  type BatchItem,
  type BatchState,
  type BatchWrites,
  type Stored,
  type StoredRecord,
} from './batch';
import type { KnownRecord } from './knownNotifications';
import type { Delivery, Recorded, RecordResult } from './notificationStore';
import {
  applyOrder,
  applyRefund,
  orderEventData,
  refundEventData,
  type OrderProjection,
  type RefundProjection,
  type Transition,
} from './projection';

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
 * batch writes (batchStatements.ts) and every delivery's answer.
 */
export function decideBatch(
  items: readonly BatchItem[],
  state: BatchState,
  eventSource: string,
  now: Date = new Date(),
): BatchDecision {
  const decider = new BatchDecider(state, eventSource, now);
  const results = items.map((item) => decider.decide(item));
  return { results, ...decider.finish() };
}

/** The orders a notification touches, whose POS must vouch for it: its order, and a refund's own order. */
export function ordersOf(n: Notification, refunds: Pick<ReadonlyMap<string, RefundProjection>, 'get'>): string[] {
  if (n.kind === 'order') return [n.orderId];
  const recordedUnder = refunds.get(n.refundId)?.orderId;
  return recordedUnder === undefined || recordedUnder === n.orderId ? [n.orderId] : [recordedUnder, n.orderId];
}

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

/** The order a notification concerns, and the key of its POS that vouches for it. */
interface Vouched {
  orderId: string;
  signer: SignatureMatch;
  ownerPosId: string;
}

/** A new status applied to its projection: the transition, and the event it publishes (none when stale). */
interface Applied<P> {
  transition: Transition<P>;
  event: DomainEvent | null;
}

/** An order's or a refund's projections as the batch leaves them, with their recorded statuses, and which changed. */
class Projections<P> {
  private readonly current: Map<string, Stored<P>>;
  private readonly changed = new Set<string>();

  constructor(stored: ReadonlyMap<string, Stored<P>>) {
    this.current = new Map(stored);
  }

  get(id: string): P | undefined {
    return this.current.get(id)?.projection;
  }

  /** Takes a transition's projection when it applied; answers the transition. */
  apply(id: string, transition: Transition<P>): Transition<P> {
    if (transition.outcome === 'applied') {
      this.current.set(id, { projection: transition.projection, recorded: this.current.get(id)?.recorded ?? {} });
      this.changed.add(id);
    }
    return transition;
  }

  /** Whether a status was recorded for a projection before (its history may be gone since). */
  hasRecorded(id: string, status: string): boolean {
    return this.current.get(id)?.recorded[status] !== undefined;
  }

  /** Notes a status recorded for a projection (which exists: a first status always applies). */
  record(id: string, status: string, entry: RecordedStatuses[string]): void {
    const stored = this.current.get(id);
    if (!stored) throw new Error('a status was recorded for a projection that does not exist');
    this.current.set(id, { ...stored, recorded: { ...stored.recorded, [status]: entry } });
    this.changed.add(id);
  }

  /** The projections that changed, or whose recorded statuses did, in their final state. */
  changedOnes(): Array<Stored<P>> {
    return [...this.changed].map((id) => this.current.get(id) as Stored<P>);
  }
}

/** The batch's working state: the database's, as the batch's earlier notifications leave it. */
class BatchDecider {
  private readonly records: Map<string, StoredRecord>;
  private readonly orders: Projections<OrderProjection>;
  private readonly refunds: Projections<RefundProjection>;
  private readonly owners: Map<string, string>;
  private readonly sequences = new Map<string, number>();
  private readonly writes: Omit<BatchWrites, 'orders' | 'refunds' | 'sequences'> = {
    records: [],
    owners: [],
    events: [],
    variants: [],
    deliveries: [],
  };
  private readonly known = new Map<string, KnownRecord>();
  private readonly conflicts: StatusConflict[] = [];
  /** Delivery rows per notification id, as the batch's write will leave them. */
  private readonly deliveryRows = new Map<string, number>();
  private readonly variantsAdded = new Set<string>();
  private nextId = 0;

  constructor(
    private readonly state: BatchState,
    private readonly eventSource: string,
    private readonly now: Date,
  ) {
    this.records = new Map(state.records);
    this.orders = new Projections(state.orders);
    this.refunds = new Projections(state.refunds);
    this.owners = new Map(state.owners);
  }

  decide(item: BatchItem): RecordResult {
    if (item.known) {
      const { record, signer } = item.known;
      this.deliver(item.delivery, signer, 'duplicate', record, record.deliveryRows);
      return duplicate(record.id, signer.posId);
    }
    const vouched = this.vouch(item);
    if (!vouched) return REFUSED;
    const meaning = meaningOf(item.notification);
    const record = this.records.get(meaning);
    return record ? this.repeat(item.delivery, meaning, record, vouched) : this.recordNew(item, meaning, vouched);
  }

  finish(): Omit<BatchDecision, 'results'> {
    const writes: BatchWrites = {
      ...this.writes,
      orders: this.orders.changedOnes(),
      refunds: this.refunds.changedOnes(),
      sequences: [...this.sequences].map(([orderId, lastSequence]) => ({ orderId, lastSequence })),
    };
    return { writes, known: [...this.known.values()], conflicts: this.conflicts };
  }

  /** Step 1: the orders it concerns and the POS that vouches for it; binds the orders not bound yet. */
  private vouch({ delivery, notification }: BatchItem): Vouched | null {
    const concerned = ordersOf(notification, this.refunds);
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
  private repeat(delivery: Delivery, meaning: string, record: StoredRecord, { signer }: Vouched): RecordResult {
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
  private recordNew({ delivery, notification: n }: BatchItem, meaning: string, vouched: Vouched): RecordResult {
    const id = this.state.newIds[this.nextId++];
    if (id === undefined) throw new Error('a batch recorded more new notifications than ids were reserved for it');
    const receivedAt = this.state.now;
    const stored = { id, receivedAt, bodySha256: delivery.bodySha256, variants: new Set<string>(), deliveryRows: 0 };
    this.records.set(meaning, stored);
    const { signer, orderId, ownerPosId } = vouched;
    const via = delivery.observedVia;
    const recordedBefore =
      n.kind === 'order' ? this.orders.hasRecorded(orderId, n.status) : this.refunds.hasRecorded(n.refundId, n.status);
    const { transition, event } =
      n.kind === 'order'
        ? this.applied(
            n,
            orderId,
            this.orders.apply(orderId, applyOrder(this.orders.get(orderId), n, ownerPosId)),
            (t, seq) => orderEventData(n, t.projection, t.previousStatus, seq, id, via, t.disagreements),
          )
        : this.applied(
            n,
            orderId,
            this.refunds.apply(n.refundId, applyRefund(this.refunds.get(n.refundId), n)),
            (t, seq) => refundEventData(n, t.projection, t.previousStatus, seq, id, via, t.disagreements),
          );
    if (n.kind === 'order') this.orders.record(orderId, n.status, { id, at: receivedAt });
    else this.refunds.record(n.refundId, n.status, { id, at: receivedAt });
    if (event) this.writes.events.push(event);
    if (transition.outcome === 'conflict' && transition.previousStatus !== null)
      this.conflicts.push({
        kind: n.kind,
        status: n.status,
        keptStatus: transition.previousStatus,
        source: recordedBefore ? 'replay' : via,
      });
    this.writes.records.push({
      id,
      notification: n,
      orderId,
      signer,
      transition: transition.outcome,
      receivedAt,
      body: delivery.body,
      bodySha256: delivery.bodySha256,
      disagreements: transition.disagreements,
      observedVia: delivery.observedVia,
    });
    const outcome = DELIVERY_OUTCOME_OF[transition.outcome];
    const known = { meaning, id, receivedAt, bodySha256: delivery.bodySha256, ownerPosId, deliveryRows: 0 };
    this.deliver(delivery, signer, outcome, known, 0);
    return {
      outcome,
      newVariant: false,
      notificationId: id,
      quarantineId: null,
      eventsWritten: event ? 1 : 0,
      currentStatus: transition.outcome === 'applied' ? null : transition.previousStatus,
      posId: signer.posId,
      disagreements: transition.disagreements.map((d) => d.field),
    };
  }

  /**
   * The status applied to its projection by the state rules, and the event it publishes (none when stale),
   * numbered in its order's stream.
   */
  private applied<P>(
    n: Notification,
    orderId: string,
    transition: Transition<P>,
    eventData: (transition: Transition<P>, sequence: number) => DomainEvent['data'],
  ): Applied<P> {
    if (transition.outcome === 'stale') return { transition, event: null };
    const type = statusEventType(n.kind, n.status, transition.outcome === 'conflict');
    const data = eventData(transition, this.nextSequence(orderId));
    return { transition, event: buildEvent(this.eventSource, type, data, this.now) };
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
    record: KnownRecord,
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
