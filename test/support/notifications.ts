import { createHash } from 'node:crypto';
import type { BatchWrites } from '../../src/recording/batch';
import type { Delivery } from '../../src/recording/notificationStore';
import type { OrderNotification, RefundNotification } from '../../src/parsing/notification';
import { POS_ID } from './signing';

// The recorder's inputs built in memory, for the tests that call it (or its pure parts) without the HTTP edge.

/** An order notification of `POS_ID` for 100 PLN, with no optional field; `fields` overrides any of it. */
export const orderNotification = (
  orderId: string,
  status: OrderNotification['status'],
  fields: Partial<OrderNotification> = {},
): OrderNotification => ({
  kind: 'order',
  orderId,
  extOrderId: null,
  merchantPosId: POS_ID,
  status,
  totalAmount: '100',
  currencyCode: 'PLN',
  paymentId: null,
  payMethodType: null,
  localReceiptDateTime: null,
  ...fields,
});

/** A refund notification of 10 PLN, with no optional field; `fields` overrides any of it. */
export const refundNotification = (
  orderId: string,
  refundId: string,
  status: RefundNotification['status'],
  fields: Partial<RefundNotification> = {},
): RefundNotification => ({
  kind: 'refund',
  orderId,
  extOrderId: null,
  refundId,
  extRefundId: null,
  status,
  amount: '10',
  currencyCode: 'PLN',
  statusDateTime: null,
  refundDate: null,
  reason: null,
  reasonDescription: null,
  ...fields,
});

let bodies = 0;
/**
 * One delivery signed by `POS_ID`'s key, of `body` (fresh bytes unless given: a delivery with the bytes of an
 * earlier one is a duplicate to the recorder).
 */
export const deliveryOf = (body = `delivery ${++bodies} ${process.pid}`, fields: Partial<Delivery> = {}): Delivery => {
  const bytes = Buffer.from(body);
  return {
    body: bytes,
    bodySha256: createHash('sha256').update(bytes).digest(),
    signers: [{ posId: POS_ID, keyFingerprint: 'test' }],
    sourceAddress: '127.0.0.1',
    processingTimeMs: null,
    observedVia: 'notification',
    ...fields,
  };
};

/** A batch that writes nothing: spread it and give the rows a test needs. */
export const NO_WRITES: BatchWrites = {
  newNotifications: [],
  owners: [],
  orders: [],
  refunds: [],
  sequences: [],
  events: [],
  variants: [],
  deliveries: [],
};
