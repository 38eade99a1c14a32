import { createHash } from 'node:crypto';
import { refundNotificationBody, writeOrderNotification, type Buyer } from '../../src/simulator';

/** Signs like the payment service: hex(hash(body bytes + second key)). */
export function sign(body: Buffer | string, key: string, algorithm = 'MD5'): string {
  const nodeName = algorithm.toLowerCase().replace('-', '');
  const signature = createHash(nodeName === 'sha' ? 'sha256' : nodeName)
    .update(body)
    .update(key)
    .digest('hex');
  return `sender=checkout;signature=${signature};algorithm=${algorithm};content=DOCUMENT`;
}

export const POS_ID = '300746';
export const SECOND_KEY = 'b6ca15b0d1020e8094d9b5f8d163db54';
export const OTHER_POS_ID = '145227';
export const OTHER_KEY = 'sign_key527';

let counter = 0;
export const uniqueId = (prefix: string): string =>
  `${prefix}${Date.now().toString(36)}${(counter++).toString(36)}`.toUpperCase();

export interface OrderFields {
  orderId: string;
  status: string;
  extOrderId?: string;
  merchantPosId?: string;
  totalAmount?: string;
  currencyCode?: string;
  paymentId?: string;
  /** payMethod.type, written whatever the status (the sender writes it for COMPLETED). */
  payMethodType?: string;
  localReceiptDateTime?: string;
  buyer?: Partial<Buyer>;
}

/**
 * An order notification body written by the simulator (src/simulator/bodies.ts), with the fields a test
 * names and fixed values for the others; unlike the simulator's lifecycles, any status may carry any part.
 */
export function orderBody(f: OrderFields): string {
  const order = {
    orderId: f.orderId,
    extOrderId: f.extOrderId ?? `ext-${f.orderId}`,
    orderCreateDate: '2026-11-01T10:00:00.000+01:00',
    notifyUrl: 'https://shop.example/notifications',
    customerIp: '127.0.0.1',
    merchantPosId: f.merchantPosId ?? POS_ID,
    description: 'Order',
    currencyCode: f.currencyCode ?? 'PLN',
    totalAmount: f.totalAmount ?? '15000',
    products: [{ name: 'Item', unitPrice: '15000', quantity: '1' }],
  };
  return writeOrderNotification(order, {
    status: f.status,
    ...(f.buyer ? { buyer: f.buyer } : {}),
    ...(f.payMethodType ? { payMethod: { type: f.payMethodType } } : {}),
    ...(f.localReceiptDateTime ? { localReceiptDateTime: f.localReceiptDateTime } : {}),
    ...(f.paymentId ? { paymentId: f.paymentId } : {}),
  }).toString('utf8');
}

export interface RefundFields {
  orderId: string;
  refundId: string;
  status: string;
  extOrderId?: string;
  amount?: string;
  currencyCode?: string;
  extRefundId?: string;
}

/** A refund notification body written by the simulator, with fixed values for the fields a test leaves out. */
export function refundBody(f: RefundFields): string {
  return refundNotificationBody(
    { orderId: f.orderId, extOrderId: f.extOrderId ?? `ext-${f.orderId}` },
    {
      refundId: f.refundId,
      ...(f.extRefundId ? { extRefundId: f.extRefundId } : {}),
      amount: f.amount ?? '5000',
      currencyCode: f.currencyCode ?? 'PLN',
      status: f.status,
      statusDateTime: '2026-11-02T12:00:00.000+01:00',
      reason: 'refund',
      reasonDescription: 'customer request',
      refundDate: '2026-11-02T11:59:59.000+01:00',
    },
  ).toString('utf8');
}

/**
 * superagent JSON-serializes a Buffer body when the Content-Type is JSON; the signature covers the
 * exact bytes, so tests send bodies through this identity serializer.
 */
export const exactBytes = (body: unknown): string => body as string;
