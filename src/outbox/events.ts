import { randomUUID } from 'node:crypto';
import type { Disagreement, ObservedVia } from '../database/schema';

/**
 * Domain events as CloudEvents 1.0 in structured JSON mode (docs/EVENTS.md).
 * The routing key and the CloudEvents type are the same string.
 */
export type EventType =
  | 'order.pending'
  | 'order.waiting_for_confirmation'
  | 'order.completed'
  | 'order.canceled'
  | 'order.status_conflict'
  | 'refund.pending'
  | 'refund.finalized'
  | 'refund.canceled'
  | 'refund.status_conflict';

export const CLOUDEVENTS_CONTENT_TYPE = 'application/cloudevents+json';

export interface OrderEventData {
  orderId: string;
  extOrderId: string | null;
  merchantPosId: string | null;
  /** The status applied; for order.status_conflict, the status the conflicting notification carried. */
  status: string;
  /** The status before; for order.status_conflict, the final status the order keeps. */
  previousStatus: string | null;
  totalAmount: string | null;
  currencyCode: string | null;
  paymentId: string | null;
  payMethodType: string | null;
  localReceiptDateTime: string | null;
  sequence: number;
  notificationId: string;
  /** How the status was learned: a notification, or reconciliation against the payment API. */
  observedVia: ObservedVia;
  /**
   * Facts this status's notification (or the payment API's answer) stated otherwise than the order keeps:
   * present only when there are some (docs/decisions/0011). The event's facts are the kept ones.
   */
  disagreements?: Disagreement[];
}

export interface RefundEventData {
  orderId: string;
  extOrderId: string | null;
  refundId: string;
  extRefundId?: string;
  amount: string | null;
  currencyCode: string | null;
  status: string;
  previousStatus: string | null;
  statusDateTime: string | null;
  refundDate: string | null;
  reason: string | null;
  reasonDescription: string | null;
  sequence: number;
  notificationId: string;
  /** How the status was learned: a notification, or reconciliation against the payment API. */
  observedVia: ObservedVia;
  /** As for an order: facts stated otherwise than the refund keeps, present only when there are some. */
  disagreements?: Disagreement[];
}

export interface CloudEvent<T> {
  specversion: '1.0';
  id: string;
  source: string;
  type: EventType;
  subject: string;
  time: string;
  datacontenttype: 'application/json';
  data: T;
}

/** Every event the recorder writes. */
export type DomainEvent = CloudEvent<OrderEventData | RefundEventData>;

export function statusEventType(kind: 'order' | 'refund', status: string, conflict: boolean): EventType {
  return (conflict ? `${kind}.status_conflict` : `${kind}.${status.toLowerCase()}`) as EventType;
}

export function buildEvent<T extends OrderEventData | RefundEventData>(
  source: string,
  type: EventType,
  data: T,
  { time = new Date(), id = randomUUID() }: { time?: Date; id?: string } = {},
): CloudEvent<T> {
  return {
    specversion: '1.0',
    id,
    source,
    type,
    subject: data.orderId,
    time: time.toISOString(),
    datacontenttype: 'application/json',
    data,
  };
}
