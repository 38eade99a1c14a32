/* Generated from ../../docs/asyncapi.yaml by generate-event-types.mjs: do not edit by hand. */

export type PaymentEvent =
  | OrderPendingEvent
  | OrderWaitingForConfirmationEvent
  | OrderCompletedEvent
  | OrderCanceledEvent
  | OrderStatusConflictEvent
  | RefundPendingEvent
  | RefundFinalizedEvent
  | RefundCanceledEvent
  | RefundStatusConflictEvent;
/**
 * An order reached PENDING: the buyer started paying.
 */
export type OrderPendingEvent = EventEnvelope & {
  specversion: "1.0";
  id: string;
  source: string;
  type: "order.pending";
  subject: string;
  time: string;
  datacontenttype: "application/json";
  dataschema: "urn:payment-notification-receiver:events:v1:order";
  data: OrderEventData & {
    status: "PENDING";
  };
};
/**
 * Present only when the notification that brought this status (or, with observedVia reconciliation, the payment API's answer) stated facts otherwise than the order or refund keeps: the status is recorded and published all the same, the facts of the event are the ones kept (the first known), and each fact stated otherwise is listed here (docs/decisions/0011). Worth a look: the payment service should never change an order's amount or currency.
 *
 * @minItems 1
 */
export type Disagreements = [
  {
    /**
     * The fact (for a refund, orderId is the order it was first recorded under).
     */
    field: "merchantPosId" | "totalAmount" | "currencyCode" | "extOrderId" | "orderId" | "amount";
    /**
     * The value kept, and carried in this event.
     */
    kept: string;
    /**
     * The value stated otherwise.
     */
    received: string;
  },
  ...{
    /**
     * The fact (for a refund, orderId is the order it was first recorded under).
     */
    field: "merchantPosId" | "totalAmount" | "currencyCode" | "extOrderId" | "orderId" | "amount";
    /**
     * The value kept, and carried in this event.
     */
    kept: string;
    /**
     * The value stated otherwise.
     */
    received: string;
  }[]
];
/**
 * An order reached WAITING_FOR_CONFIRMATION: the payment waits for the shop to capture or cancel it.
 */
export type OrderWaitingForConfirmationEvent = EventEnvelope & {
  specversion: "1.0";
  id: string;
  source: string;
  type: "order.waiting_for_confirmation";
  subject: string;
  time: string;
  datacontenttype: "application/json";
  dataschema: "urn:payment-notification-receiver:events:v1:order";
  data: OrderEventData & {
    status: "WAITING_FOR_CONFIRMATION";
  };
};
/**
 * An order reached COMPLETED: the payment is done (final).
 */
export type OrderCompletedEvent = EventEnvelope & {
  specversion: "1.0";
  id: string;
  source: string;
  type: "order.completed";
  subject: string;
  time: string;
  datacontenttype: "application/json";
  dataschema: "urn:payment-notification-receiver:events:v1:order";
  data: OrderEventData & {
    status: "COMPLETED";
  };
};
/**
 * An order reached CANCELED (final).
 */
export type OrderCanceledEvent = EventEnvelope & {
  specversion: "1.0";
  id: string;
  source: string;
  type: "order.canceled";
  subject: string;
  time: string;
  datacontenttype: "application/json";
  dataschema: "urn:payment-notification-receiver:events:v1:order";
  data: OrderEventData & {
    status: "CANCELED";
  };
};
/**
 * A final status arrived for an order that already has the other final status (COMPLETED then CANCELED, or the reverse). `data.status` is the status that arrived, `data.previousStatus` the final status the order keeps.
 */
export type OrderStatusConflictEvent = EventEnvelope & {
  specversion: "1.0";
  id: string;
  source: string;
  type: "order.status_conflict";
  subject: string;
  time: string;
  datacontenttype: "application/json";
  dataschema: "urn:payment-notification-receiver:events:v1:order";
  data: OrderEventData;
};
/**
 * A refund reached PENDING (the payment service does not normally notify it).
 */
export type RefundPendingEvent = EventEnvelope & {
  specversion: "1.0";
  id: string;
  source: string;
  type: "refund.pending";
  subject: string;
  time: string;
  datacontenttype: "application/json";
  dataschema: "urn:payment-notification-receiver:events:v1:refund";
  data: RefundEventData & {
    status: "PENDING";
  };
};
/**
 * A refund reached FINALIZED: the money went back (final).
 */
export type RefundFinalizedEvent = EventEnvelope & {
  specversion: "1.0";
  id: string;
  source: string;
  type: "refund.finalized";
  subject: string;
  time: string;
  datacontenttype: "application/json";
  dataschema: "urn:payment-notification-receiver:events:v1:refund";
  data: RefundEventData & {
    status: "FINALIZED";
  };
};
/**
 * A refund reached CANCELED (final).
 */
export type RefundCanceledEvent = EventEnvelope & {
  specversion: "1.0";
  id: string;
  source: string;
  type: "refund.canceled";
  subject: string;
  time: string;
  datacontenttype: "application/json";
  dataschema: "urn:payment-notification-receiver:events:v1:refund";
  data: RefundEventData & {
    status: "CANCELED";
  };
};
/**
 * A final status arrived for a refund that already has the other final status. `data.status` is the status that arrived, `data.previousStatus` the final status the refund keeps.
 */
export type RefundStatusConflictEvent = EventEnvelope & {
  specversion: "1.0";
  id: string;
  source: string;
  type: "refund.status_conflict";
  subject: string;
  time: string;
  datacontenttype: "application/json";
  dataschema: "urn:payment-notification-receiver:events:v1:refund";
  data: RefundEventData;
};

/**
 * The CloudEvents 1.0 attributes every event carries (structured JSON mode).
 */
export interface EventEnvelope {
  specversion: "1.0";
  /**
   * Unique per event; a redelivery and a replay keep it. Equals the AMQP messageId. A UUIDv7 derived from the notification that caused the event, so an event rebuilt from history has it again.
   */
  id: string;
  /**
   * EVENT_SOURCE (default `urn:payment-notification-receiver`).
   */
  source: string;
  /**
   * The routing key.
   */
  type: string;
  /**
   * The order id (for refund events too).
   */
  subject: string;
  /**
   * When the notification was recorded (UTC, to the millisecond); a replay keeps it.
   */
  time: string;
  datacontenttype: "application/json";
  /**
   * The schema of `data` and its major version (`v1`): `...:v1:order` (OrderEventData) or `...:v1:refund` (RefundEventData). Within a major version, changes are additive only (docs/EVENTS.md, "Compatibility").
   */
  dataschema: string;
  data: {};
}
export interface OrderEventData {
  orderId: string;
  /**
   * The shop's own order id; null until a notification carries it.
   */
  extOrderId: string | null;
  /**
   * The POS the order belongs to.
   */
  merchantPosId: string | null;
  /**
   * The status applied; for order.status_conflict, the status the conflicting notification carried.
   */
  status: "PENDING" | "WAITING_FOR_CONFIRMATION" | "COMPLETED" | "CANCELED";
  /**
   * The status before (null for an order's first event); for order.status_conflict, the final status the order keeps.
   */
  previousStatus: ("PENDING" | "WAITING_FOR_CONFIRMATION" | "COMPLETED" | "CANCELED") | null;
  totalAmount: string | null;
  /**
   * ISO 4217 code, e.g. PLN.
   */
  currencyCode: string | null;
  paymentId: string | null;
  /**
   * null until a notification carries it.
   */
  payMethodType: string | null;
  /**
   * For COMPLETED - when the funds reached the shop balance; null until known.
   */
  localReceiptDateTime: string | null;
  /**
   * When to book this status, as an instant in UTC: localReceiptDateTime, read in the payment service's zone (PAYMENT_SERVICE_TIME_ZONE, Europe/Warsaw by default) when it has no offset; the event's time when the order has none. On every order event since 1.2.0.
   */
  bookingTime?: string;
  /**
   * Numbers the events of one order (its refunds' events included), from 1, in the order they were applied.
   */
  sequence: number;
  /**
   * The id of the recorded notification that caused the event.
   */
  notificationId: string;
  /**
   * How the status was learned - a status notification, or the reconciliation that asked the payment API.
   */
  observedVia: "notification" | "reconciliation";
  /**
   * Present only on an event published again after a database failover lost its status: the journal of recorded notifications gave the notification back, and this is the event published before the failover, with the same `id` (a consumer that has that id already ignores it; one that missed it applies it). Since 1.2.0 (docs/EVENTS.md, "Around a failover").
   */
  restoredAfterFailover?: true;
  disagreements?: Disagreements;
}
export interface RefundEventData {
  /**
   * The order the refund was first recorded under.
   */
  orderId: string;
  extOrderId: string | null;
  /**
   * The POS the refund's order belongs to (bound by the order's first authentic notification), so that a ledger per POS needs no join to the order. On every refund event since 1.2.0; an event recorded before (replayed, or in the feed) has none: join it to its order's events.
   */
  merchantPosId?: string | null;
  refundId: string;
  /**
   * The shop's own refund id; present only when known.
   */
  extRefundId?: string;
  /**
   * null for a refund made in the management panel: its notification carries no amount, and the service knows none. Book such a refund from the payment service's panel or its API (docs/EVENTS.md, "Finance's booking rules").
   */
  amount: string | null;
  /**
   * The refund's currency as its notification gave it; null for a refund made in the panel.
   */
  currencyCode: string | null;
  /**
   * The currency of the refund's order, as the service keeps it (a refund is in its order's currency); on every refund event since 1.2.0 (as merchantPosId). Null while the service has had no notification of the order itself.
   */
  orderCurrencyCode?: string | null;
  /**
   * The status applied; for refund.status_conflict, the status the conflicting notification carried.
   */
  status: "PENDING" | "FINALIZED" | "CANCELED";
  /**
   * The status before (null for a refund's first event); for refund.status_conflict, the final status the refund keeps.
   */
  previousStatus: ("PENDING" | "FINALIZED" | "CANCELED") | null;
  statusDateTime: string | null;
  refundDate: string | null;
  /**
   * When to book this status, as an instant in UTC: refundDate, else statusDateTime, read in the payment service's zone when it has no offset; the event's time when the refund has neither. On every refund event since 1.2.0.
   */
  bookingTime?: string;
  reason: string | null;
  reasonDescription: string | null;
  /**
   * Numbers the events of the refund's order (the order's own events included).
   */
  sequence: number;
  /**
   * The id of the recorded notification that caused the event.
   */
  notificationId: string;
  /**
   * How the status was learned - a status notification, or the reconciliation that asked the payment API.
   */
  observedVia: "notification" | "reconciliation";
  /**
   * Present only on an event published again after a database failover lost its status: the journal of recorded notifications gave the notification back, and this is the event published before the failover, with the same `id` (a consumer that has that id already ignores it; one that missed it applies it). Since 1.2.0 (docs/EVENTS.md, "Around a failover").
   */
  restoredAfterFailover?: true;
  disagreements?: Disagreements;
}
