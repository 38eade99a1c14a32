import type { Disagreement, ObservedVia } from '../database/schema';
import type { StatusTransition } from '../domain/outcomes';
import { bookingInstant } from '../domain/paymentServiceTime';
import { provenance, type OrderEventData, type RefundEventData } from '../outbox/cloudEvents';
import type { OrderNotification, RefundNotification } from '../parsing/notification';
import { decideOrderTransition, decideRefundTransition, ORDER_STATUS_RANK, REFUND_STATUS_RANK } from './statusRules';

/**
 * One notification applied to its projection, as pure functions. The status rules (statusRules.ts) decide
 * whether it moves; the facts that never change once known (an order's POS, amount, currency and
 * extOrderId; a refund's order, amount and currency) keep their first value, and a notification that states
 * them otherwise is a disagreement: recorded, counted, but never taken.
 */

/** An order as projected: the fields of its applied notifications (absent ones keep their value). */
export type OrderProjection = Omit<OrderNotification, 'kind'>;

/** A refund as projected, likewise; its orderId is the order it was first recorded under. */
export type RefundProjection = Omit<RefundNotification, 'kind'>;

export interface Transition<P> {
  outcome: StatusTransition;
  /** Status before (applied), or the status kept (stale, conflict); null for the first notification. */
  previousStatus: string | null;
  /** The projection after the notification: merged when applied, unchanged otherwise. */
  projection: P;
  /** Facts the notification stated otherwise than the projection keeps. */
  disagreements: Disagreement[];
}

const ORDER_FACTS = ['extOrderId', 'totalAmount', 'currencyCode'] as const;
const REFUND_FACTS = ['amount', 'currencyCode'] as const;

/** Facts of `incoming` that differ from known (non-null) facts of `kept`. */
function disagreementsOf<T>(kept: T | undefined, incoming: T, facts: ReadonlyArray<keyof T & string>): Disagreement[] {
  if (!kept) return [];
  return facts.flatMap((field) => {
    const was = kept[field];
    const now = incoming[field];
    return typeof was === 'string' && typeof now === 'string' && was !== now
      ? [{ field, kept: was, received: now }]
      : [];
  });
}

/**
 * A later notification wins field by field, except that a field it lacks (CANCELED has no buyer) keeps its
 * value, and a fact once known is never replaced.
 */
function merge<T extends object>(previous: T | undefined, next: T, facts: ReadonlyArray<keyof T>): T {
  if (!previous) return next;
  const merged = { ...next };
  for (const key of Object.keys(next) as Array<keyof T>) {
    if (merged[key] === null || (facts.includes(key) && previous[key] !== null)) merged[key] = previous[key];
  }
  return merged;
}

/**
 * An order notification applied to the order's projection. `ownerPosId` is the POS the order belongs to
 * (order_owners): the projection's merchantPosId is always it.
 */
export function applyOrder(
  current: OrderProjection | undefined,
  n: OrderNotification,
  ownerPosId: string,
): Transition<OrderProjection> {
  const outcome = decideOrderTransition(current?.status ?? null, n.status);
  const { kind: _kind, ...incoming } = n;
  const disagreements = [
    ...(n.merchantPosId !== null && n.merchantPosId !== ownerPosId
      ? [{ field: 'merchantPosId', kept: ownerPosId, received: n.merchantPosId }]
      : []),
    ...disagreementsOf(current, incoming, ORDER_FACTS),
  ];
  const projection =
    outcome === 'applied' || !current
      ? merge(current, { ...incoming, merchantPosId: ownerPosId }, ORDER_FACTS)
      : current;
  return { outcome, previousStatus: current?.status ?? null, projection, disagreements };
}

/** A refund notification applied to the refund's projection; the refund stays under the order it was first recorded for. */
export function applyRefund(
  current: RefundProjection | undefined,
  n: RefundNotification,
): Transition<RefundProjection> {
  const outcome = decideRefundTransition(current?.status ?? null, n.status);
  const { kind: _kind, ...incoming } = n;
  const disagreements = [
    ...(current && current.orderId !== n.orderId
      ? [{ field: 'orderId', kept: current.orderId, received: n.orderId }]
      : []),
    ...disagreementsOf(current, incoming, REFUND_FACTS),
  ];
  const projection =
    outcome === 'applied' || !current
      ? merge(current, { ...incoming, orderId: current?.orderId ?? n.orderId }, REFUND_FACTS)
      : current;
  return { outcome, previousStatus: current?.status ?? null, projection, disagreements };
}

export const orderRank = (p: OrderProjection): number => ORDER_STATUS_RANK[p.status];
export const refundRank = (p: RefundProjection): number => REFUND_STATUS_RANK[p.status];

/** What an event's booking time is read from besides the payment service's own time: when it was recorded, the zone. */
export interface Booking {
  recordedAt: Date;
  timeZone: string;
}

/** An order event's data: the projection's fields and the notification's status, numbered in the order's stream. */
export function orderEventData(
  n: OrderNotification,
  projection: OrderProjection,
  previousStatus: string | null,
  sequence: number,
  notificationId: string,
  observedVia: ObservedVia,
  booking: Booking,
  disagreements: readonly Disagreement[] = [],
): OrderEventData {
  return {
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
    bookingTime: bookingInstant([projection.localReceiptDateTime], booking.recordedAt, booking.timeZone),
    sequence,
    notificationId,
    ...provenance(observedVia),
    ...(disagreements.length > 0 ? { disagreements: [...disagreements] } : {}),
  };
}

/** A refund event's data, numbered in its order's stream. */
export function refundEventData(
  n: RefundNotification,
  projection: RefundProjection,
  order: { merchantPosId: string; currencyCode: string | null },
  previousStatus: string | null,
  sequence: number,
  notificationId: string,
  observedVia: ObservedVia,
  booking: Booking,
  disagreements: readonly Disagreement[] = [],
): RefundEventData {
  return {
    orderId: projection.orderId,
    extOrderId: projection.extOrderId,
    merchantPosId: order.merchantPosId,
    refundId: projection.refundId,
    ...(projection.extRefundId !== null ? { extRefundId: projection.extRefundId } : {}),
    amount: projection.amount,
    currencyCode: projection.currencyCode,
    orderCurrencyCode: order.currencyCode,
    status: n.status,
    previousStatus,
    statusDateTime: projection.statusDateTime,
    refundDate: projection.refundDate,
    bookingTime: bookingInstant(
      [projection.refundDate, projection.statusDateTime],
      booking.recordedAt,
      booking.timeZone,
    ),
    reason: projection.reason,
    reasonDescription: projection.reasonDescription,
    sequence,
    notificationId,
    ...provenance(observedVia),
    ...(disagreements.length > 0 ? { disagreements: [...disagreements] } : {}),
  };
}
