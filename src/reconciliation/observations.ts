import { createHash } from 'node:crypto';
import type { OrderNotification, RefundNotification } from '../parsing/notification';
import type { ApiAnswer, RetrievedOrder, RetrievedRefund } from '../paymentApi/paymentApi';
import type { Delivery } from '../recording/notificationStore';

/**
 * What the payment API says of an order, as the observations the recorder takes from a notification: pure.
 * Each status is recorded with the same meaning (kind, subject, status) as the notification that would have
 * carried it, so the recorder's dedup, forward-only rules, conflicts and events apply unchanged; the
 * delivery says where it came from (observedVia), keeps the API's answer byte-exact as its body, and is
 * vouched for by the POS whose credentials asked.
 */

/** The signer of an observation: the POS whose credentials asked. Not a key: the audit shows this instead. */
export const PAYMENT_API_FINGERPRINT = 'payment-api';

export interface Observation {
  delivery: Delivery;
  notification: OrderNotification | RefundNotification;
}

const sha256 = (body: Buffer): Buffer => createHash('sha256').update(body).digest();

function deliveryOf(posId: string, body: Buffer): Delivery {
  return {
    observedVia: 'reconciliation',
    body,
    bodySha256: sha256(body),
    signers: [{ posId, keyFingerprint: PAYMENT_API_FINGERPRINT }],
    sourceAddress: null,
    processingTimeMs: null,
  };
}

/**
 * The order's status as an observation; none for NEW, which no notification carries (the buyer has not
 * paid yet: nothing to record).
 */
export function orderObservation(posId: string, answer: ApiAnswer<RetrievedOrder>): Observation | null {
  const order = answer.value;
  if (order.status === 'NEW') return null;
  return {
    delivery: deliveryOf(posId, answer.body),
    notification: {
      kind: 'order',
      orderId: order.orderId,
      extOrderId: order.extOrderId,
      merchantPosId: order.merchantPosId,
      status: order.status,
      totalAmount: order.totalAmount,
      currencyCode: order.currencyCode,
      paymentId: order.paymentId,
      // Null when the answer has none: the projection keeps what a notification told (projection.ts).
      payMethodType: order.payMethodType,
      // Order retrieval does not give it.
      localReceiptDateTime: null,
    },
  };
}

/** Each refund of the list as an observation; all share the list's answer as their body. */
export function refundObservations(
  posId: string,
  order: RetrievedOrder,
  answer: ApiAnswer<RetrievedRefund[]>,
): Observation[] {
  return answer.value.map((refund) => ({
    delivery: deliveryOf(posId, answer.body),
    notification: {
      kind: 'refund',
      orderId: order.orderId,
      extOrderId: order.extOrderId,
      refundId: refund.refundId,
      extRefundId: refund.extRefundId,
      status: refund.status,
      amount: refund.amount,
      currencyCode: refund.currencyCode,
      statusDateTime: refund.statusDateTime,
      refundDate: null,
      reason: null,
      reasonDescription: null,
    },
  }));
}

/** Refunds exist only for a completed order (spec, "Refunds"): the list is asked for then only. */
export const hasRefunds = (order: RetrievedOrder): boolean => order.status === 'COMPLETED';

/**
 * The POS whose credentials ask about an order: the POS it belongs to when bound (a POS's credentials
 * vouch for its own orders only), else the one asked for, else the only one configured.
 */
export function posToAsk(
  owner: string | undefined,
  requested: string | undefined,
  configured: readonly string[],
): { posId: string } | { problem: 'pos_mismatch' | 'pos_required' | 'unknown_pos' } {
  if (requested !== undefined && !configured.includes(requested)) return { problem: 'unknown_pos' };
  if (owner !== undefined)
    return requested === undefined || requested === owner ? { posId: owner } : { problem: 'pos_mismatch' };
  if (requested !== undefined) return { posId: requested };
  const [only] = configured;
  return configured.length === 1 && only !== undefined ? { posId: only } : { problem: 'pos_required' };
}
