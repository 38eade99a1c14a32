import { pick, randomInt, randomString, type Random } from './random';

/**
 * Notification bodies shaped like the payment service's (spec, "Events"; the captured ones in
 * test/fixtures/real-notifications.json): compact JSON, fields in the sender's order.
 */

export type OrderStatus = 'PENDING' | 'WAITING_FOR_CONFIRMATION' | 'COMPLETED' | 'CANCELED';
export type RefundStatus = 'FINALIZED' | 'CANCELED';

/** How the buyer pays. `blik` is the code-based method: an order with pay method PBL, value blik. */
export type PayMethodKind = 'pbl' | 'card' | 'blik';

/** The pay method type the notification carries (spec: PBL, CARD_TOKEN, INSTALLMENTS). */
export const NOTIFIED_PAY_METHOD_TYPE: Readonly<Record<PayMethodKind, string>> = {
  pbl: 'PBL',
  card: 'CARD_TOKEN',
  blik: 'PBL',
};

/** The payment service's time zone: its timestamps carry this offset. */
export const SENDER_TIME_ZONE = 'Europe/Warsaw';

/** One formatter per time zone: making one costs tens of microseconds. */
const offsetFormatters = new Map<string, Intl.DateTimeFormat>();
/** Offsets by time zone and quarter hour: every zone's offset changes only at a quarter hour. */
const offsets = new Map<string, string>();
const QUARTER_HOUR_MS = 900_000;
/** Quarter hours kept (about four years' worth): past it the cache starts again, so a long run stays bounded. */
const MAX_OFFSETS = 140_000;

/** The zone's UTC offset at `ms`, as `+01:00`. */
function offsetAt(ms: number, timeZone: string): string {
  const key = `${timeZone} ${Math.floor(ms / QUARTER_HOUR_MS)}`;
  let offset = offsets.get(key);
  if (offset === undefined) {
    let formatter = offsetFormatters.get(timeZone);
    if (!formatter) {
      formatter = new Intl.DateTimeFormat('en-US', { timeZone, timeZoneName: 'longOffset' });
      offsetFormatters.set(timeZone, formatter);
    }
    const name = formatter.formatToParts(ms).find((p) => p.type === 'timeZoneName')?.value ?? '';
    offset = name.replace('GMT', '') || '+00:00';
    if (offsets.size >= MAX_OFFSETS) offsets.clear();
    offsets.set(key, offset);
  }
  return offset;
}

/** The local wall-clock time (to the second) and offset of `date` in `timeZone`. */
function localParts(date: Date, timeZone: string): { stamp: string; offset: string } {
  const offset = offsetAt(date.getTime(), timeZone);
  const sign = offset.startsWith('-') ? -1 : 1;
  const offsetMs = sign * (Number(offset.slice(1, 3)) * 3_600_000 + Number(offset.slice(4, 6)) * 60_000);
  return { stamp: new Date(date.getTime() + offsetMs).toISOString().slice(0, 19), offset };
}

/** `2020-02-13T10:25:27.526+01:00`: ISO 8601 with milliseconds and the sender's offset. */
export function formatSenderTimestamp(date: Date, timeZone = SENDER_TIME_ZONE): string {
  const { stamp, offset } = localParts(date, timeZone);
  return `${stamp}.${String(date.getUTCMilliseconds()).padStart(3, '0')}${offset}`;
}

/**
 * localReceiptDateTime: like formatSenderTimestamp, except that when the milliseconds are 000 the
 * sender omits them and the offset (spec, "Order status notification").
 */
export function formatLocalReceiptDateTime(date: Date, timeZone = SENDER_TIME_ZONE): string {
  if (date.getUTCMilliseconds() === 0) return localParts(date, timeZone).stamp;
  return formatSenderTimestamp(date, timeZone);
}

/** `PB68465GCH200213GUEST000P01`: ten characters, the date (yymmdd), then the buyer-kind suffix. */
export function newOrderId(random: Random, date: Date): string {
  const yymmdd = date.toISOString().slice(2, 10).replace(/-/g, '');
  return `${randomString(random, 10)}${yymmdd}GUEST000P01`;
}

/** The shop's own order id; shops often use a hex uniqid such as `5e45160711d81`. */
export function newExtOrderId(random: Random): string {
  return randomString(random, 13, '0123456789abcdef');
}

export const newPaymentId = (random: Random): string => String(randomInt(random, 10_000_000, 5_999_999_999));
export const newRefundId = (random: Random): string => String(randomInt(random, 100_000, 5_999_999_999));

export interface Product {
  name: string;
  unitPrice: string;
  quantity: string;
}

/** Fictitious buyer data: the receiver must never print or log it, and the tests check that. */
export interface Buyer {
  customerId: string;
  email: string;
  phone?: string;
  firstName: string;
  lastName: string;
  language: string;
}

/** What stays the same across an order's notifications: what the shop sent when it created the order. */
export interface OrderData {
  orderId: string;
  extOrderId: string;
  orderCreateDate: string;
  notifyUrl: string;
  customerIp: string;
  merchantPosId: string;
  description: string;
  currencyCode: string;
  totalAmount: string;
  products: Product[];
  buyer: Buyer;
  payMethod: PayMethodKind;
  paymentId: string;
}

const PRODUCT_NAMES = [
  'Lenovo ThinkPad Edge E540',
  'Wireless mouse',
  'USB-C cable 2 m',
  'Ebook',
  'Coffee beans 1 kg',
  'Desk lamp',
];
const FIRST_NAMES = ['Jan', 'Anna', 'Piotr', 'Maria', 'Tomasz', 'Katarzyna'];
const LAST_NAMES = ['Kowalski', 'Nowak', 'Wiśniewska', 'Wójcik', 'Kamińska', 'Lewandowski'];

/** Products whose prices add up to the total exactly (minor units stay integers). */
export function productsFor(random: Random, totalAmount: string): Product[] {
  const total = BigInt(totalAmount);
  if (total < 2n || random() < 0.5)
    return [{ name: pick(random, PRODUCT_NAMES), unitPrice: totalAmount, quantity: '1' }];
  const first = total - total / 3n;
  return [
    { name: pick(random, PRODUCT_NAMES), unitPrice: first.toString(), quantity: '1' },
    { name: 'Shipping', unitPrice: (total - first).toString(), quantity: '1' },
  ];
}

export function newBuyer(random: Random): Buyer {
  const firstName = pick(random, FIRST_NAMES);
  const lastName = pick(random, LAST_NAMES);
  return {
    customerId: 'guest',
    email: `${firstName.toLowerCase()}.${randomString(random, 6, 'abcdefghijklmnopqrstuvwxyz0123456789')}@example.com`,
    ...(random() < 0.5 ? { phone: `+48 ${randomInt(random, 500_000_000, 799_999_999)}` } : {}),
    firstName,
    lastName,
    language: 'pl',
  };
}

/** The order's own fields, written in every one of its notifications as the shop created it. */
export type OrderFields = Omit<OrderData, 'buyer' | 'payMethod' | 'paymentId'>;

/**
 * What an order notification carries besides the order's own fields; a part not given is not written. The
 * writer takes any status: judging one is the receiver's job, and its tests send some the sender would not.
 */
export interface OrderNotificationParts {
  status: string;
  buyer?: Partial<Buyer>;
  payMethod?: { amount?: string; type: string };
  localReceiptDateTime?: string;
  /** The one PAYMENT_ID property; none: `properties` is empty. */
  paymentId?: string;
}

/** An order notification body: compact JSON, the fields in the sender's order. */
export function writeOrderNotification(order: OrderFields, parts: OrderNotificationParts): Buffer {
  const body = {
    order: {
      orderId: order.orderId,
      extOrderId: order.extOrderId,
      orderCreateDate: order.orderCreateDate,
      notifyUrl: order.notifyUrl,
      customerIp: order.customerIp,
      merchantPosId: order.merchantPosId,
      description: order.description,
      currencyCode: order.currencyCode,
      totalAmount: order.totalAmount,
      ...(parts.buyer ? { buyer: parts.buyer } : {}),
      ...(parts.payMethod ? { payMethod: parts.payMethod } : {}),
      status: parts.status,
      products: order.products,
    },
    ...(parts.localReceiptDateTime !== undefined ? { localReceiptDateTime: parts.localReceiptDateTime } : {}),
    properties: parts.paymentId !== undefined ? [{ name: 'PAYMENT_ID', value: parts.paymentId }] : [],
  };
  return Buffer.from(JSON.stringify(body), 'utf8');
}

/**
 * An order status notification body as the payment service sends it for `status`. COMPLETED carries the
 * buyer, the pay method type and localReceiptDateTime; PENDING may have no PAYMENT_ID yet; CANCELED has no
 * buyer.
 */
export function orderNotificationBody(
  order: OrderData,
  status: OrderStatus,
  extra: { localReceiptDateTime?: string; withPaymentId: boolean },
): Buffer {
  const type = NOTIFIED_PAY_METHOD_TYPE[order.payMethod];
  const completed =
    status === 'COMPLETED'
      ? {
          buyer: order.buyer,
          payMethod: type === 'PBL' ? { amount: order.totalAmount, type } : { type },
          ...(extra.localReceiptDateTime !== undefined ? { localReceiptDateTime: extra.localReceiptDateTime } : {}),
        }
      : {};
  return writeOrderNotification(order, {
    status,
    ...completed,
    ...(extra.withPaymentId ? { paymentId: order.paymentId } : {}),
  });
}

export interface RefundData {
  refundId: string;
  extRefundId?: string;
  amount: string;
  currencyCode: string;
  status: RefundStatus;
  statusDateTime: string;
  reason: string;
  reasonDescription: string;
  refundDate: string;
}

/** A refund status notification body (spec, "Refund status notification"); any status, as for orders. */
export function refundNotificationBody(
  order: Pick<OrderData, 'orderId' | 'extOrderId'>,
  refund: Omit<RefundData, 'status'> & { status: string },
): Buffer {
  const body = {
    orderId: order.orderId,
    extOrderId: order.extOrderId,
    refund: {
      refundId: refund.refundId,
      ...(refund.extRefundId !== undefined ? { extRefundId: refund.extRefundId } : {}),
      amount: refund.amount,
      currencyCode: refund.currencyCode,
      status: refund.status,
      statusDateTime: refund.statusDateTime,
      reason: refund.reason,
      reasonDescription: refund.reasonDescription,
      refundDate: refund.refundDate,
    },
  };
  return Buffer.from(JSON.stringify(body), 'utf8');
}
