import { ORDER_STATUSES, REFUND_STATUSES, type OrderStatus, type RefundStatus } from '../parsing/notification';
import {
  currency,
  depthExceeds,
  field,
  FieldError,
  id,
  isObject,
  MAX_JSON_DEPTH,
  oneOf,
  paymentIdOf,
  readAmount,
  readTimestamp,
  requiredId,
  text,
  type JsonObject,
} from '../parsing/parseNotification';

/**
 * The payment API's answers (spec, "Endpoints" 1, 3 and 7), read into typed values. Pure: bytes in,
 * value or AnswerError out. Unknown fields are tolerated (spec, "Versioning" 3); buyer data is never
 * copied into a value, and an error's message names a field, never a byte of the answer.
 */

/** Order retrieval also shows NEW, a status notifications never carry (spec, "States and transitions"). */
export const RETRIEVED_ORDER_STATUSES = ['NEW', ...ORDER_STATUSES] as const;
export type RetrievedOrderStatus = (typeof RETRIEVED_ORDER_STATUSES)[number];

export interface RetrievedOrder {
  orderId: string;
  extOrderId: string | null;
  merchantPosId: string;
  status: RetrievedOrderStatus;
  /** Minor units as a string of digits, never a float. */
  totalAmount: string;
  currencyCode: string;
  /** properties[name=PAYMENT_ID].value; PENDING may have none yet. */
  paymentId: string | null;
  /** payMethod.type (PBL, CARD_TOKEN, INSTALLMENTS, ...), when the answer has it (a paid order). */
  payMethodType: string | null;
  orderCreateDate: string | null;
}

export interface RetrievedRefund {
  refundId: string;
  extRefundId: string | null;
  /** Minor units as a string of digits. */
  amount: string | null;
  currencyCode: string | null;
  status: RefundStatus;
  statusDateTime: string | null;
  creationDateTime: string | null;
  /** Present for a CANCELED refund (spec, "Refund processing errors"). */
  statusError: { code: string | null; description: string | null } | null;
}

export interface AccessToken {
  accessToken: string;
  expiresInSeconds: number;
}

/** The answer was not in the spec's shape; `message` names what was wrong, never a value. */
export class AnswerError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AnswerError';
  }
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

/** The answer as a JSON object, or AnswerError. */
function readObject(body: Buffer): JsonObject {
  let json: unknown;
  try {
    json = JSON.parse(utf8.decode(body));
  } catch {
    throw new AnswerError('answer is not JSON in UTF-8');
  }
  if (depthExceeds(json, MAX_JSON_DEPTH)) throw new AnswerError(`answer nests deeper than ${MAX_JSON_DEPTH} levels`);
  if (!isObject(json)) throw new AnswerError('answer is not a JSON object');
  return json;
}

/** Runs a reader, turning the field readers' FieldError (and anything unforeseen) into AnswerError. */
function reading<T>(read: () => T): T {
  try {
    return read();
  } catch (error) {
    if (error instanceof AnswerError) throw error;
    if (error instanceof FieldError) throw new AnswerError(error.message);
    throw new AnswerError(`unreadable field (${(error as Error).name})`);
  }
}

function required<T>(value: T | null, name: string): T {
  if (value === null) throw new FieldError(`${name} is required`);
  return value;
}

/** Endpoints 1: access_token, token_type bearer, expires_in (seconds). */
export function parseTokenAnswer(body: Buffer): AccessToken {
  const json = readObject(body);
  return reading(() => {
    const accessToken = field(json, 'access_token');
    if (typeof accessToken !== 'string' || accessToken === '' || !/^[\x21-\x7e]+$/.test(accessToken))
      throw new FieldError('access_token must be a non-empty printable string');
    const tokenType = field(json, 'token_type');
    if (typeof tokenType !== 'string' || tokenType.toLowerCase() !== 'bearer')
      throw new FieldError('token_type must be bearer');
    const expiresIn = field(json, 'expires_in');
    if (typeof expiresIn !== 'number' || !Number.isSafeInteger(expiresIn) || expiresIn < 1)
      throw new FieldError('expires_in must be a positive whole number of seconds');
    return { accessToken, expiresInSeconds: expiresIn };
  });
}

function statusCodeOf(json: JsonObject): string | null {
  const status = field(json, 'status');
  return isObject(status) ? text(status, 'status.', 'statusCode', 256) : null;
}

/**
 * Endpoints 3: `orders` (the one asked for), `status.statusCode` SUCCESS, `properties` with
 * PAYMENT_ID. An answer about another order is refused.
 */
export function parseOrderAnswer(body: Buffer, orderId: string): RetrievedOrder {
  const json = readObject(body);
  return reading(() => {
    const statusCode = statusCodeOf(json);
    if (statusCode !== null && statusCode !== 'SUCCESS') throw new FieldError('status.statusCode is not SUCCESS');
    const orders = field(json, 'orders');
    if (!Array.isArray(orders)) throw new FieldError('orders must be an array');
    const order: unknown = orders.find((o) => isObject(o) && id(o, 'orders[].', 'orderId') === orderId);
    if (!isObject(order)) throw new FieldError('orders does not hold the order asked for');
    const payMethod = field(order, 'payMethod');
    return {
      orderId: requiredId(order, 'orders[].', 'orderId'),
      extOrderId: id(order, 'orders[].', 'extOrderId'),
      merchantPosId: requiredId(order, 'orders[].', 'merchantPosId'),
      status: oneOf(RETRIEVED_ORDER_STATUSES, requiredId(order, 'orders[].', 'status'), 'orders[].status'),
      totalAmount: required(readAmount(field(order, 'totalAmount'), 'orders[].totalAmount'), 'orders[].totalAmount'),
      currencyCode: required(currency(order, 'orders[].'), 'orders[].currencyCode'),
      paymentId: paymentIdOf(field(json, 'properties')),
      payMethodType: isObject(payMethod) ? id(payMethod, 'orders[].payMethod.', 'type') : null,
      orderCreateDate: readTimestamp(field(order, 'orderCreateDate'), 'orders[].orderCreateDate'),
    };
  });
}

function readRetrievedRefund(refund: JsonObject): RetrievedRefund {
  const statusError = field(refund, 'statusError');
  if (statusError !== undefined && statusError !== null && !isObject(statusError))
    throw new FieldError('refunds[].statusError must be an object');
  return {
    refundId: requiredId(refund, 'refunds[].', 'refundId'),
    extRefundId: id(refund, 'refunds[].', 'extRefundId'),
    amount: readAmount(field(refund, 'amount'), 'refunds[].amount'),
    currencyCode: currency(refund, 'refunds[].'),
    status: oneOf(REFUND_STATUSES, requiredId(refund, 'refunds[].', 'status'), 'refunds[].status'),
    statusDateTime: readTimestamp(field(refund, 'statusDateTime'), 'refunds[].statusDateTime'),
    creationDateTime: readTimestamp(field(refund, 'creationDateTime'), 'refunds[].creationDateTime'),
    statusError: isObject(statusError)
      ? {
          code: id(statusError, 'refunds[].statusError.', 'code'),
          description: text(statusError, 'refunds[].statusError.', 'description', 4096),
        }
      : null,
  };
}

/** Endpoints 7: `refunds`, an array of refund records (an order without refunds: empty). */
export function parseRefundsAnswer(body: Buffer): RetrievedRefund[] {
  const json = readObject(body);
  return reading(() => {
    const refunds = field(json, 'refunds');
    if (refunds === undefined || refunds === null) return [];
    if (!Array.isArray(refunds)) throw new FieldError('refunds must be an array');
    return refunds.map((refund) => {
      if (!isObject(refund)) throw new FieldError('refunds[] must be objects');
      return readRetrievedRefund(refund);
    });
  });
}

/** An error answer's `status.statusCode` and `codeLiteral` (spec, "Errors"), when it has them. */
export function errorCodesOf(body: Buffer): { statusCode: string | null; codeLiteral: string | null } {
  try {
    const json = readObject(body);
    const status = field(json, 'status');
    if (!isObject(status)) return { statusCode: null, codeLiteral: null };
    return {
      statusCode: text(status, 'status.', 'statusCode', 256),
      codeLiteral: text(status, 'status.', 'codeLiteral', 256),
    };
  } catch {
    return { statusCode: null, codeLiteral: null };
  }
}

export type { OrderStatus, RefundStatus };
