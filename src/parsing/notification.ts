/** Typed notifications, as read from a verified body (spec, "Events"). */

export const ORDER_STATUSES = ['PENDING', 'WAITING_FOR_CONFIRMATION', 'COMPLETED', 'CANCELED'] as const;
export type OrderStatus = (typeof ORDER_STATUSES)[number];

export const REFUND_STATUSES = ['PENDING', 'FINALIZED', 'CANCELED'] as const;
export type RefundStatus = (typeof REFUND_STATUSES)[number];

export interface OrderNotification {
  kind: 'order';
  orderId: string;
  extOrderId: string | null;
  merchantPosId: string | null;
  status: OrderStatus;
  /** Minor units as a string of digits, exactly as received (never a float). */
  totalAmount: string | null;
  currencyCode: string | null;
  /** properties[name=PAYMENT_ID].value */
  paymentId: string | null;
  payMethodType: string | null;
  /** Only for COMPLETED: when the funds reached the shop balance (see readTimestamp for the form). */
  localReceiptDateTime: string | null;
}

export interface RefundNotification {
  kind: 'refund';
  orderId: string;
  extOrderId: string | null;
  refundId: string;
  extRefundId: string | null;
  status: RefundStatus;
  /** Absent for a refund made in the management panel. */
  amount: string | null;
  currencyCode: string | null;
  statusDateTime: string | null;
  refundDate: string | null;
  reason: string | null;
  reasonDescription: string | null;
}

export type Notification = OrderNotification | RefundNotification;
export type NotificationKind = Notification['kind'];

/** What a notification is about: two deliveries with the same meaning are the same notification. */
export function notificationSubject(n: Notification): string {
  return n.kind === 'order' ? n.orderId : n.refundId;
}
