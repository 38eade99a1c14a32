import type { Disagreement, ObservedVia, RecordedStatuses } from '../database/schema';
import type { StatusTransition } from '../domain/outcomes';
import { buildEvent, statusEventType, type DomainEvent } from '../outbox/cloudEvents';
import type { Notification } from '../parsing/notification';
import {
  applyOrder,
  applyRefund,
  orderEventData,
  refundEventData,
  type Booking,
  type OrderProjection,
  type RefundProjection,
  type Transition,
} from './projection';

/**
 * The one way from notifications to projections: each notification applied to its order's or refund's
 * projection by the state rules (projection.ts), and its status recorded for it (the `recorded` map dedup
 * reads). The recorder folds a batch into what it read (decideBatch.ts), the history seeder an order's
 * simulated life into nothing (through the recorder's decision), and `reproject` each order's stored history
 * into nothing; so a rule changed here or in projection.ts changes all three. Pure.
 */

/** What the events the recorder builds take from the settings. */
export interface RecordingContext {
  /** EVENT_SOURCE: every event's `source`. */
  eventSource: string;
  /** PAYMENT_SERVICE_TIME_ZONE: the zone an event's booking time is read in when the payment service wrote no offset. */
  paymentServiceTimeZone: string;
}

/** A projection as stored, with the statuses recorded for it (where dedup finds them). */
export interface StoredProjection<P> {
  projection: P;
  recorded: RecordedStatuses;
}

/** Where a status's notification is in history: its id and receive time (the day partition it is in). */
export type HistoryPlace = RecordedStatuses[string];

/** What applying one notification did: the transition, and its event's data should it publish one. */
export interface Folded {
  outcome: StatusTransition;
  /** Status before (applied), or the status kept (stale, conflict); null for the first notification. */
  previousStatus: string | null;
  disagreements: Disagreement[];
  /** The status was recorded for this projection before: its history is gone past retention (a replay). */
  recordedBefore: boolean;
  /** The data of the event it publishes (none is, when stale), numbered `sequence` in its order's stream. */
  eventData(sequence: number, observedVia: ObservedVia, booking: Booking): DomainEvent['data'];
}

/** An order's or a refund's projections as the fold leaves them, with their recorded statuses, and which changed. */
class Projections<P> {
  private readonly current: Map<string, StoredProjection<P>>;
  private readonly changed = new Set<string>();

  constructor(stored: ReadonlyMap<string, StoredProjection<P>>) {
    this.current = new Map(stored);
  }

  get(id: string): P | undefined {
    return this.current.get(id)?.projection;
  }

  /**
   * Takes the transition's projection when it applied (a first status always does); records the status.
   * Answers whether the status was recorded for it before.
   */
  fold(id: string, transition: Transition<P>, status: string, place: HistoryPlace): boolean {
    const before = this.current.get(id);
    const projection = transition.outcome === 'applied' || !before ? transition.projection : before.projection;
    this.current.set(id, { projection, recorded: { ...before?.recorded, [status]: place } });
    this.changed.add(id);
    return before?.recorded[status] !== undefined;
  }

  /** The projections that changed, or whose recorded statuses did, in their final state. */
  changedOnes(): Array<StoredProjection<P>> {
    return [...this.changed].map((id) => this.current.get(id) as StoredProjection<P>);
  }
}

/**
 * The event a folded status publishes, none when it was stale: its type (the status, or a conflict), its data
 * numbered `nextSequence()` in its order's stream (asked only when there is an event), its time the time its
 * notification was recorded. The recorder's decision and `events rebuild` both build events here.
 */
export function statusEvent(
  context: RecordingContext,
  n: Notification,
  folded: Folded,
  via: ObservedVia,
  time: Date,
  nextSequence: () => number,
): DomainEvent | null {
  if (folded.outcome === 'stale') return null;
  const type = statusEventType(n.kind, n.status, folded.outcome === 'conflict');
  const booking = { recordedAt: time, timeZone: context.paymentServiceTimeZone };
  return buildEvent(context.eventSource, type, folded.eventData(nextSequence(), via, booking), time);
}

export class ProjectionFold {
  private readonly orders: Projections<OrderProjection>;
  private readonly refunds: Projections<RefundProjection>;

  constructor(
    orders: ReadonlyMap<string, StoredProjection<OrderProjection>> = new Map(),
    refunds: ReadonlyMap<string, StoredProjection<RefundProjection>> = new Map(),
  ) {
    this.orders = new Projections(orders);
    this.refunds = new Projections(refunds);
  }

  /** The order a refund was first recorded under, when it was. */
  refundOrder(refundId: string): string | undefined {
    return this.refunds.get(refundId)?.orderId;
  }

  /**
   * Applies a notification to its projection and records its status there (`place`: where its notification is).
   * `ownerPosId` is the POS its order belongs to: an order's merchantPosId is always it.
   */
  fold(n: Notification, ownerPosId: string, place: HistoryPlace): Folded {
    if (n.kind === 'order') {
      const t = applyOrder(this.orders.get(n.orderId), n, ownerPosId);
      const recordedBefore = this.orders.fold(n.orderId, t, n.status, place);
      return {
        ...t,
        recordedBefore,
        eventData: (seq, via, booking) =>
          orderEventData(n, t.projection, t.previousStatus, seq, place.id, via, booking, t.disagreements),
      };
    }
    const t = applyRefund(this.refunds.get(n.refundId), n);
    const recordedBefore = this.refunds.fold(n.refundId, t, n.status, place);
    // The order under which the refund was first recorded: its own notifications are read with the refund's.
    const order = {
      merchantPosId: ownerPosId,
      currencyCode: this.orders.get(t.projection.orderId)?.currencyCode ?? null,
    };
    return {
      ...t,
      recordedBefore,
      eventData: (seq, via, booking) =>
        refundEventData(n, t.projection, order, t.previousStatus, seq, place.id, via, booking, t.disagreements),
    };
  }

  /** The orders and refunds folded into, or whose recorded statuses changed, in their final state. */
  changed(): { orders: Array<StoredProjection<OrderProjection>>; refunds: Array<StoredProjection<RefundProjection>> } {
    return { orders: this.orders.changedOnes(), refunds: this.refunds.changedOnes() };
  }
}
