import { createHash } from 'node:crypto';
import type { Disagreement, ObservedVia } from '../database/schema';

/**
 * How an event's status was learned, as the event says it: a notification, or reconciliation. A status restored
 * after a failover was learned from a notification (the journal kept it), and its event says it is a restoration
 * apart (restoredAfterFailover): the contract only grows within a major version, and a new value here would not.
 */
export type EventObservedVia = Exclude<ObservedVia, 'restoration'>;

/** The event data's fields of how its status was learned, from the notification's own record of it. */
export function provenance(via: ObservedVia): { observedVia: EventObservedVia; restoredAfterFailover?: true } {
  return via === 'restoration' ? { observedVia: 'notification', restoredAfterFailover: true } : { observedVia: via };
}

/**
 * Domain events as CloudEvents 1.0 in structured JSON mode (docs/EVENTS.md).
 * The routing key and the CloudEvents type are the same string.
 */
export const EVENT_TYPES = [
  'order.pending',
  'order.waiting_for_confirmation',
  'order.completed',
  'order.canceled',
  'order.status_conflict',
  'refund.pending',
  'refund.finalized',
  'refund.canceled',
  'refund.status_conflict',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

export const isEventType = (value: string): value is EventType => (EVENT_TYPES as readonly string[]).includes(value);

/** A binding pattern's words: `*` one word, `#` none or more, anything else that word exactly (AMQP's topic rules). */
function topicMatches(pattern: readonly string[], words: readonly string[]): boolean {
  const [first, ...rest] = pattern;
  if (first === undefined) return words.length === 0;
  if (first === '#') return topicMatches(rest, words) || (words.length > 0 && topicMatches(pattern, words.slice(1)));
  return words.length > 0 && (first === '*' || first === words[0]) && topicMatches(rest, words.slice(1));
}

/** A type or a binding pattern: dot-separated words of letters, digits, `_` and `-`, or `*` or `#`; 255 at most. */
const PATTERN = /^(?:[a-z0-9_-]+|\*|#)(?:\.(?:[a-z0-9_-]+|\*|#))*$/;

/**
 * The event types a binding pattern matches, as a queue bound with it would get them (`refund.#`, `order.*`,
 * `#.status_conflict`, or a type itself), in EVENT_TYPES's order; null when it is not a pattern at all. A pattern
 * may match none.
 */
export function typesMatching(pattern: string): EventType[] | null {
  if (pattern.length > 255 || !PATTERN.test(pattern)) return null;
  const words = pattern.split('.');
  return EVENT_TYPES.filter((type) => topicMatches(words, type.split('.')));
}

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
  /**
   * When to book this status, as an instant in UTC (`2026-11-28T06:07:38.123Z`): `localReceiptDateTime` read in
   * PAYMENT_SERVICE_TIME_ZONE when it has no offset; when the order has none, the event's `time`.
   */
  bookingTime: string;
  sequence: number;
  notificationId: string;
  /** How the status was learned: a notification, or reconciliation against the payment API. */
  observedVia: EventObservedVia;
  /**
   * Present only on an event published again after a database failover lost its status: the journal gave the
   * notification back, and the event is the one published before, under the same id (docs/EVENTS.md, "Around a
   * failover").
   */
  restoredAfterFailover?: true;
  /**
   * Facts this status's notification (or the payment API's answer) stated otherwise than the order keeps:
   * present only when there are some (docs/decisions/0011). The event's facts are the kept ones.
   */
  disagreements?: Disagreement[];
}

export interface RefundEventData {
  orderId: string;
  extOrderId: string | null;
  /** The POS the refund's order belongs to (its first authentic notification bound it): a ledger per POS needs no join. */
  merchantPosId: string | null;
  refundId: string;
  extRefundId?: string;
  /** Null for a refund made in the management panel: its notification carries no amount, and the service knows none. */
  amount: string | null;
  currencyCode: string | null;
  /** The currency of the refund's order, as the service keeps it; null while the service has no order notification. */
  orderCurrencyCode: string | null;
  status: string;
  previousStatus: string | null;
  statusDateTime: string | null;
  refundDate: string | null;
  /** As an order's: `refundDate`, else `statusDateTime`, as an instant; when it has neither, the event's `time`. */
  bookingTime: string;
  reason: string | null;
  reasonDescription: string | null;
  sequence: number;
  notificationId: string;
  /** How the status was learned: a notification, or reconciliation against the payment API. */
  observedVia: EventObservedVia;
  /** As for an order: present only on an event published again after a failover lost its status. */
  restoredAfterFailover?: true;
  /** As for an order: facts stated otherwise than the refund keeps, present only when there are some. */
  disagreements?: Disagreement[];
}

/**
 * The schema of an event's data and its major version (docs/asyncapi.yaml): within a major version the contract
 * only grows (docs/EVENTS.md, "Compatibility"); a breaking change is a new one, published beside it.
 */
export const DATA_SCHEMAS = {
  order: 'urn:payment-notification-receiver:events:v1:order',
  refund: 'urn:payment-notification-receiver:events:v1:refund',
} as const;

export interface CloudEvent<T> {
  specversion: '1.0';
  id: string;
  source: string;
  type: EventType;
  subject: string;
  time: string;
  datacontenttype: 'application/json';
  dataschema: (typeof DATA_SCHEMAS)[keyof typeof DATA_SCHEMAS];
  data: T;
}

/** Every event the recorder writes. */
export type DomainEvent = CloudEvent<OrderEventData | RefundEventData>;

export function statusEventType(kind: 'order' | 'refund', status: string, conflict: boolean): EventType {
  return (conflict ? `${kind}.status_conflict` : `${kind}.${status.toLowerCase()}`) as EventType;
}

/** Bits of the notification id an event id keeps, in order: ids stay unique and time-ordered until 2^42. */
const COUNTER_BITS = 2 ** 42;

/** The last 32 bits of a source's event ids: its SHA-256's first 4 bytes, made once per source. */
const sourceBits = new Map<string, Buffer>();

/**
 * An event's id, derived from what caused it, so that history can give it again (`events rebuild`): a UUIDv7
 * (RFC 9562) whose 48-bit time is the event's `time` in milliseconds, whose next 42 bits count the notification id
 * (RFC 9562 6.2, method 1: a fixed-length counter in rand_a and rand_b), and whose last 32 bits are from a SHA-256
 * of the source, so that two deployments (their EVENT_SOURCE) do not share ids. A notification publishes at most
 * one event, so time and notification id make it unique within a source; ids sort as the events were recorded (an
 * order's events in the order of its notifications), and the outbox's primary key grows at its end.
 */
export function eventId(source: string, notificationId: string, time: Date): string {
  const ms = time.getTime();
  const counter = Number(notificationId) % COUNTER_BITS;
  const high = Math.floor(counter / 2 ** 24); // 18 bits: 4 in byte 6, 8 in byte 7, 6 in byte 8
  const low = counter % 2 ** 24;
  const bytes = Buffer.alloc(16);
  bytes.writeUIntBE(ms, 0, 6);
  bytes[6] = 0x70 | (high >>> 14);
  bytes[7] = (high >>> 6) & 0xff;
  bytes[8] = 0x80 | (high & 0x3f);
  bytes.writeUIntBE(low, 9, 3);
  let bits = sourceBits.get(source);
  if (!bits) sourceBits.set(source, (bits = createHash('sha256').update(source).digest().subarray(0, 4)));
  bits.copy(bytes, 12);
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * An event as published. `time` is when its notification was recorded (the recording transaction's time, the
 * notification row's received_at), and its id is derived from it and the notification (eventId).
 */
export function buildEvent<T extends OrderEventData | RefundEventData>(
  source: string,
  type: EventType,
  data: T,
  time: Date,
  id: string = eventId(source, data.notificationId, time),
): CloudEvent<T> {
  return {
    specversion: '1.0',
    id,
    source,
    type,
    subject: data.orderId,
    time: time.toISOString(),
    datacontenttype: 'application/json',
    dataschema: 'refundId' in data ? DATA_SCHEMAS.refund : DATA_SCHEMAS.order,
    data,
  };
}
