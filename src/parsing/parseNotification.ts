import { hasFormatCharacter, idProblem, MAX_ID_LENGTH } from './identifiers';
import {
  ORDER_STATUSES,
  REFUND_STATUSES,
  type Notification,
  type OrderNotification,
  type RefundNotification,
} from './notification';

/** Why an authentic (signature-verified) body could not be read; it is quarantined, never dropped. */
export type QuarantineReason = 'invalid_utf8' | 'not_json' | 'too_deep' | 'unknown_shape' | 'invalid_field';

export type ParseResult =
  { ok: true; notification: Notification } | { ok: false; reason: QuarantineReason; detail: string };

/** Deeper than any real notification; guards Postgres and our own walkers against hostile nesting. */
export const MAX_JSON_DEPTH = 32;
const MAX_SHORT_TEXT_LENGTH = 256;
const MAX_TEXT_LENGTH = 4096;

export class FieldError extends Error {}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

export type JsonObject = { [key: string]: unknown };

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Own properties only: a body key named `__proto__` or `constructor` is just data. */
export function field(object: JsonObject, name: string): unknown {
  return Object.prototype.hasOwnProperty.call(object, name) ? object[name] : undefined;
}

export function depthExceeds(root: unknown, limit: number): boolean {
  const stack: Array<{ value: unknown; depth: number }> = [{ value: root, depth: 0 }];
  while (stack.length > 0) {
    const { value, depth } = stack.pop() as { value: unknown; depth: number };
    if (typeof value !== 'object' || value === null) continue;
    if (depth >= limit) return true;
    for (const child of Array.isArray(value) ? value : Object.values(value))
      stack.push({ value: child, depth: depth + 1 });
  }
  return false;
}

export function text(object: JsonObject, path: string, name: string, maxLength: number): string | null {
  const value = field(object, name);
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string') throw new FieldError(`${path}${name} must be a string`);
  // Postgres text cannot hold NUL; a control character in an identifier is never legitimate.
  if (value.includes('\u0000')) throw new FieldError(`${path}${name} contains a NUL character`);
  // A lone surrogate (\ud800 without its pair) cannot be stored as UTF-8 or in jsonb.
  if (LONE_SURROGATE.test(value)) throw new FieldError(`${path}${name} contains an unpaired surrogate`);
  if (value.length > maxLength) throw new FieldError(`${path}${name} is longer than ${maxLength} characters`);
  return value;
}

/** Identifiers and codes never hold control characters (the recorder relies on it to join them). */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL = /[\u0000-\u001f\u007f]/;

export function id(object: JsonObject, path: string, name: string): string | null {
  const value = field(object, name);
  // Identifiers occasionally arrive as JSON numbers; their decimal text is the identifier.
  if (typeof value === 'number' && Number.isSafeInteger(value)) return String(value);
  // The admin API, the command line and the payment-API client take ids up to this long: a longer one could be
  // recorded but never looked up or reconciled, so it is quarantined (answered 200, body kept) instead.
  const identifier = text(object, path, name, MAX_ID_LENGTH);
  if (identifier !== null && CONTROL.test(identifier))
    throw new FieldError(`${path}${name} contains a control character`);
  return identifier;
}

/**
 * An id that a person reads as it is (extOrderId, extRefundId, merchantPosId, PAYMENT_ID): as `id`, and without
 * an invisible or bidirectional format character, which would make it look like another id or reorder the text
 * around it (hasFormatCharacter); one that has one is quarantined, like an order id the admin API refuses.
 */
export function visibleId(object: JsonObject, path: string, name: string): string | null {
  const value = id(object, path, name);
  if (value !== null && hasFormatCharacter(value))
    throw new FieldError(`${path}${name} contains an invisible or bidirectional format character`);
  return value;
}

export function requiredId(object: JsonObject, path: string, name: string): string {
  const value = id(object, path, name);
  if (value === null || value.trim() === '') throw new FieldError(`${path}${name} is required`);
  return value;
}

/**
 * An order or refund id: one the admin API, the command line and the payment-API client take too (idProblem,
 * the one rule), so every order recorded can be looked up and reconciled; any other is quarantined.
 */
export function subjectId(object: JsonObject, path: string, name: string): string {
  const value = requiredId(object, path, name);
  const problem = idProblem(value);
  if (problem !== null) throw new FieldError(`${path}${name} is not an id the admin API takes: ${problem}`);
  return value;
}

/**
 * Amounts are whole numbers of minor units (spec, "Conventions for field values"), sent as strings;
 * a JSON integer is accepted when it is exactly representable. Never a float, never negative.
 */
export function readAmount(value: unknown, fieldName: string): string | null {
  if (value === undefined || value === null) return null;
  let digits: string;
  if (typeof value === 'string') digits = value.trim();
  else if (typeof value === 'number' && Number.isSafeInteger(value)) digits = String(value);
  else throw new FieldError(`${fieldName} must be a whole number of minor units`);
  if (!/^\d{1,18}$/.test(digits)) throw new FieldError(`${fieldName} must be a whole number of minor units`);
  return digits.replace(/^0+(?=\d)/, '');
}

const ISO_8601 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})?$/;
const EPOCH_MS = /^\d{1,15}$/;

/**
 * Timestamps arrive as ISO 8601 with or without an offset, or epoch milliseconds as a string or a
 * number (spec, "Conventions"). ISO text is kept as received (without an offset it is the payment
 * service's local time, which we must not guess); epoch milliseconds become ISO 8601 in UTC.
 */
/** Epoch milliseconds within the range a Date can hold (ECMAScript: ±8.64e15). */
const MAX_EPOCH_MS = 8_640_000_000_000_000;

function epochToIso(ms: number, fieldName: string): string {
  if (ms > MAX_EPOCH_MS) throw new FieldError(`${fieldName} is beyond the representable date range`);
  return new Date(ms).toISOString();
}

export function readTimestamp(value: unknown, fieldName: string): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return epochToIso(value, fieldName);
  if (typeof value === 'string') {
    const trimmed = value.trim();
    if (EPOCH_MS.test(trimmed)) return epochToIso(Number(trimmed), fieldName);
    if (ISO_8601.test(trimmed) && !Number.isNaN(Date.parse(trimmed.replace(/([+-]\d{2})(\d{2})$/, '$1:$2')))) {
      return trimmed;
    }
  }
  throw new FieldError(`${fieldName} must be an ISO 8601 timestamp or epoch milliseconds`);
}

export function currency(object: JsonObject, path: string): string | null {
  const value = text(object, path, 'currencyCode', 3);
  if (value !== null && !/^[A-Z]{3}$/.test(value)) throw new FieldError(`${path}currencyCode must be an ISO 4217 code`);
  return value;
}

export function oneOf<T extends string>(allowed: readonly T[], value: string, fieldName: string): T {
  if (!(allowed as readonly string[]).includes(value)) {
    // The detail is logged and shown: it names the field, never a byte of what the body holds.
    throw new FieldError(`${fieldName} is not one of ${allowed.join(', ')}`);
  }
  return value as T;
}

export function paymentIdOf(properties: unknown): string | null {
  if (properties === undefined || properties === null) return null;
  if (!Array.isArray(properties)) throw new FieldError('properties must be an array');
  for (const property of properties) {
    if (isObject(property) && field(property, 'name') === 'PAYMENT_ID')
      return visibleId(property, 'properties[].', 'value');
  }
  return null;
}

function readOrder(body: JsonObject, order: JsonObject): OrderNotification {
  const payMethod = field(order, 'payMethod');
  if (payMethod !== undefined && payMethod !== null && !isObject(payMethod)) {
    throw new FieldError('order.payMethod must be an object');
  }
  return {
    kind: 'order',
    orderId: subjectId(order, 'order.', 'orderId'),
    extOrderId: visibleId(order, 'order.', 'extOrderId'),
    merchantPosId: visibleId(order, 'order.', 'merchantPosId'),
    status: oneOf(ORDER_STATUSES, requiredId(order, 'order.', 'status'), 'order.status'),
    totalAmount: readAmount(field(order, 'totalAmount'), 'order.totalAmount'),
    currencyCode: currency(order, 'order.'),
    paymentId: paymentIdOf(field(body, 'properties')),
    payMethodType: isObject(payMethod) ? text(payMethod, 'order.payMethod.', 'type', MAX_SHORT_TEXT_LENGTH) : null,
    localReceiptDateTime: readTimestamp(field(body, 'localReceiptDateTime'), 'localReceiptDateTime'),
  };
}

function readRefund(body: JsonObject, refund: JsonObject): RefundNotification {
  return {
    kind: 'refund',
    orderId: subjectId(body, '', 'orderId'),
    extOrderId: visibleId(body, '', 'extOrderId'),
    refundId: subjectId(refund, 'refund.', 'refundId'),
    extRefundId: visibleId(refund, 'refund.', 'extRefundId'),
    status: oneOf(REFUND_STATUSES, requiredId(refund, 'refund.', 'status'), 'refund.status'),
    amount: readAmount(field(refund, 'amount'), 'refund.amount'),
    currencyCode: currency(refund, 'refund.'),
    statusDateTime: readTimestamp(field(refund, 'statusDateTime'), 'refund.statusDateTime'),
    refundDate: readTimestamp(field(refund, 'refundDate'), 'refund.refundDate'),
    reason: text(refund, 'refund.', 'reason', MAX_SHORT_TEXT_LENGTH),
    reasonDescription: text(refund, 'refund.', 'reasonDescription', MAX_TEXT_LENGTH),
  };
}

/**
 * Reads a verified body into a typed notification. Pure: bytes in, result out.
 * Unknown fields are ignored here (they stay in the stored raw body); a body that is not UTF-8,
 * not JSON, or of no known shape is reported with a reason for the quarantine.
 */
export function parseNotification(body: Buffer): ParseResult {
  let decoded: string;
  try {
    decoded = utf8.decode(body);
  } catch {
    return { ok: false, reason: 'invalid_utf8', detail: 'body is not valid UTF-8' };
  }
  let json: unknown;
  try {
    json = JSON.parse(decoded);
  } catch {
    return { ok: false, reason: 'not_json', detail: 'body is not JSON' };
  }
  if (depthExceeds(json, MAX_JSON_DEPTH)) {
    return { ok: false, reason: 'too_deep', detail: `body nests deeper than ${MAX_JSON_DEPTH} levels` };
  }
  if (!isObject(json)) return { ok: false, reason: 'unknown_shape', detail: 'body is not a JSON object' };

  const order = field(json, 'order');
  const refund = field(json, 'refund');
  try {
    if (isObject(order) && refund === undefined) return { ok: true, notification: readOrder(json, order) };
    if (isObject(refund) && order === undefined) return { ok: true, notification: readRefund(json, refund) };
  } catch (error) {
    if (error instanceof FieldError) return { ok: false, reason: 'invalid_field', detail: error.message };
    // Authentic data must never earn a 5xx (the sender would retry it for 72 hours): anything the
    // readers above did not foresee is quarantined too, with the error's name for the operator.
    return { ok: false, reason: 'invalid_field', detail: `unreadable field (${(error as Error).name})` };
  }
  return { ok: false, reason: 'unknown_shape', detail: 'body has neither an "order" nor a "refund" object' };
}

/**
 * A notification as the recorder stored it (notifications.parsed: what readOrder or readRefund made), read back
 * by the same field readers, which take their own output unchanged; a field a row predates reads as null. Null
 * when it is not a notification.
 */
export function readStoredNotification(parsed: unknown): Notification | null {
  if (!isObject(parsed)) return null;
  const p = parsed;
  try {
    if (field(p, 'kind') === 'order')
      return {
        kind: 'order',
        orderId: requiredId(p, '', 'orderId'),
        extOrderId: id(p, '', 'extOrderId'),
        merchantPosId: id(p, '', 'merchantPosId'),
        status: oneOf(ORDER_STATUSES, requiredId(p, '', 'status'), 'status'),
        totalAmount: readAmount(field(p, 'totalAmount'), 'totalAmount'),
        currencyCode: currency(p, ''),
        paymentId: id(p, '', 'paymentId'),
        payMethodType: text(p, '', 'payMethodType', MAX_SHORT_TEXT_LENGTH),
        localReceiptDateTime: readTimestamp(field(p, 'localReceiptDateTime'), 'localReceiptDateTime'),
      };
    // A stored refund is flat: its body's fields and its refund object's are one object.
    if (field(p, 'kind') === 'refund') return readRefund(p, p);
  } catch (error) {
    if (error instanceof FieldError) return null;
    throw error;
  }
  return null;
}
