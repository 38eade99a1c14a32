import type { Notification, OrderNotification, RefundNotification } from '../parsing/notification';
import {
  buildEvent,
  statusEventType,
  type CloudEvent,
  type OrderEventData,
  type RefundEventData,
} from '../outbox/events';
import {
  decideOrderTransition,
  decideRefundTransition,
  ORDER_STATUS_RANK,
  REFUND_STATUS_RANK,
  type TransitionOutcome,
} from './statusRules';

/**
 * Applying notifications to the order and refund projections, as pure functions: current state and
 * new notifications in, outcomes, changed projections and events out. The recorder (recordBatch.ts)
 * reads the state under per-order locks, calls this, and writes the result in the same transaction.
 */

/** An order as projected: the fields of its latest applied notification (absent ones keep their value). */
export type OrderProjection = Omit<OrderNotification, 'kind'>;

/** A refund as projected, likewise. */
export type RefundProjection = Omit<RefundNotification, 'kind'>;

export interface ProjectionState {
  orders: Map<string, OrderProjection>;
  refunds: Map<string, RefundProjection>;
  /** Last event sequence per order (refund events count in their order's sequence). */
  sequences: Map<string, number>;
}

export interface NewNotification {
  notificationId: string;
  notification: Notification;
}

export type DomainEvent = CloudEvent<OrderEventData> | CloudEvent<RefundEventData>;

export interface AppliedNotification {
  outcome: TransitionOutcome;
  /** Status before (applied), or the status kept (stale, conflict). */
  previousStatus: string | null;
  event: DomainEvent | null;
}

export interface ApplyResult {
  /** One per input notification, in input order. */
  applied: AppliedNotification[];
  /** Projections that changed, in their final state. */
  orders: OrderProjection[];
  refunds: RefundProjection[];
  /** Orders whose last sequence changed, with the new value. */
  sequences: Map<string, number>;
}

/** A later notification wins field by field, but one lacking a field (CANCELED has no buyer) keeps the old value. */
function merge<T extends object>(previous: T | undefined, next: T): T {
  if (!previous) return next;
  const merged = { ...next };
  for (const key of Object.keys(next) as Array<keyof T>) {
    if (merged[key] === null) merged[key] = previous[key];
  }
  return merged;
}

export function orderProjectionOf(n: OrderNotification): OrderProjection {
  return {
    orderId: n.orderId,
    extOrderId: n.extOrderId,
    merchantPosId: n.merchantPosId,
    status: n.status,
    totalAmount: n.totalAmount,
    currencyCode: n.currencyCode,
    paymentId: n.paymentId,
    payMethodType: n.payMethodType,
    localReceiptDateTime: n.localReceiptDateTime,
  };
}

export function refundProjectionOf(n: RefundNotification): RefundProjection {
  return {
    refundId: n.refundId,
    orderId: n.orderId,
    extOrderId: n.extOrderId,
    extRefundId: n.extRefundId,
    status: n.status,
    amount: n.amount,
    currencyCode: n.currencyCode,
    statusDateTime: n.statusDateTime,
    refundDate: n.refundDate,
    reason: n.reason,
    reasonDescription: n.reasonDescription,
  };
}

export const orderRank = (p: OrderProjection): number => ORDER_STATUS_RANK[p.status];
export const refundRank = (p: RefundProjection): number => REFUND_STATUS_RANK[p.status];

export interface Transition<P> {
  outcome: TransitionOutcome;
  /** Status before (applied), or the status kept (stale, conflict); null for the first notification. */
  previousStatus: string | null;
  /** The projection after the notification: merged when applied, unchanged otherwise. */
  projection: P | undefined;
}

/** One order notification applied to its projection: the status rules decide, merge() fills the fields. */
export function applyOrder(current: OrderProjection | undefined, n: OrderNotification): Transition<OrderProjection> {
  const outcome = decideOrderTransition(current?.status ?? null, n.status);
  const projection = outcome === 'applied' ? merge(current, orderProjectionOf(n)) : current;
  return { outcome, previousStatus: current?.status ?? null, projection };
}

/** One refund notification applied to its projection. */
export function applyRefund(
  current: RefundProjection | undefined,
  n: RefundNotification,
): Transition<RefundProjection> {
  const outcome = decideRefundTransition(current?.status ?? null, n.status);
  const projection = outcome === 'applied' ? merge(current, refundProjectionOf(n)) : current;
  return { outcome, previousStatus: current?.status ?? null, projection };
}

/**
 * What applying a notification differs in between orders and refunds: which projection it moves,
 * by which rules, and the event data it yields. Everything else (stale ones change nothing, the
 * event numbering per order) is the same for both, in applyNotifications.
 */
interface Projector<N extends Notification, P, D extends OrderEventData | RefundEventData> {
  idOf(n: N): string;
  apply(current: P | undefined, n: N): Transition<P>;
  /** The event's data: the projection's fields, the notification's status, numbered. */
  eventData(n: N, projection: P, previousStatus: string | null, sequence: number, notificationId: string): D;
}

const ORDERS: Projector<OrderNotification, OrderProjection, OrderEventData> = {
  idOf: (n) => n.orderId,
  apply: applyOrder,
  eventData: (n, projection, previousStatus, sequence, notificationId) => ({
    orderId: n.orderId,
    extOrderId: projection.extOrderId,
    merchantPosId: projection.merchantPosId,
    status: n.status,
    previousStatus,
    totalAmount: projection.totalAmount,
    currencyCode: projection.currencyCode,
    paymentId: projection.paymentId,
    payMethodType: projection.payMethodType,
    localReceiptDateTime: projection.localReceiptDateTime,
    sequence,
    notificationId,
  }),
};

const REFUNDS: Projector<RefundNotification, RefundProjection, RefundEventData> = {
  idOf: (n) => n.refundId,
  apply: applyRefund,
  eventData: (n, projection, previousStatus, sequence, notificationId) => ({
    orderId: projection.orderId,
    extOrderId: projection.extOrderId,
    refundId: projection.refundId,
    ...(projection.extRefundId !== null ? { extRefundId: projection.extRefundId } : {}),
    amount: projection.amount,
    currencyCode: projection.currencyCode,
    status: n.status,
    previousStatus,
    statusDateTime: projection.statusDateTime,
    refundDate: projection.refundDate,
    reason: projection.reason,
    reasonDescription: projection.reasonDescription,
    sequence,
    notificationId,
  }),
};

/**
 * Applies new notifications in the given order (their arrival order) to the state. Duplicates must
 * already be filtered out: every input is a first delivery of its meaning.
 * Stale notifications change nothing and write no event; applied ones and conflicts write one event
 * each, numbered per order.
 */
export function applyNotifications(
  state: ProjectionState,
  items: readonly NewNotification[],
  eventSource: string,
  now: Date = new Date(),
): ApplyResult {
  const orders = new Map(state.orders);
  const refunds = new Map(state.refunds);
  const sequences = new Map<string, number>();
  const changedOrders = new Set<string>();
  const changedRefunds = new Set<string>();
  const nextSequence = (orderId: string): number => {
    const next = (sequences.get(orderId) ?? state.sequences.get(orderId) ?? 0) + 1;
    sequences.set(orderId, next);
    return next;
  };

  function step<N extends Notification, P, D extends OrderEventData | RefundEventData>(
    projector: Projector<N, P, D>,
    projections: Map<string, P>,
    changed: Set<string>,
    notificationId: string,
    n: N,
  ): Omit<AppliedNotification, 'event'> & { event: CloudEvent<D> | null } {
    const id = projector.idOf(n);
    const { outcome, previousStatus, projection } = projector.apply(projections.get(id), n);
    if (outcome === 'stale' || !projection) return { outcome, previousStatus, event: null };
    if (outcome === 'applied') {
      projections.set(id, projection);
      changed.add(id);
    }
    const data = projector.eventData(n, projection, previousStatus, nextSequence(n.orderId), notificationId);
    return {
      outcome,
      previousStatus,
      event: buildEvent(eventSource, statusEventType(n.kind, n.status, outcome === 'conflict'), data, now),
    };
  }

  const applied: AppliedNotification[] = items.map(({ notificationId, notification: n }) =>
    n.kind === 'order'
      ? step(ORDERS, orders, changedOrders, notificationId, n)
      : step(REFUNDS, refunds, changedRefunds, notificationId, n),
  );

  return {
    applied,
    orders: [...changedOrders].map((id) => orders.get(id) as OrderProjection),
    refunds: [...changedRefunds].map((id) => refunds.get(id) as RefundProjection),
    sequences,
  };
}
