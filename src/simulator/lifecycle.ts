import {
  formatLocalReceiptDateTime,
  formatSenderTimestamp,
  newBuyer,
  newExtOrderId,
  newOrderId,
  newPaymentId,
  newRefundId,
  orderNotificationBody,
  productsFor,
  refundNotificationBody,
  type OrderData,
  type OrderStatus,
  type PayMethodKind,
  type RefundStatus,
} from './bodies';
import { chance, pick, randomInt, type Random } from './random';

/** One refund of a completed order. `amount` omitted: the whole remaining amount (a full refund). */
export interface RefundPlan {
  amount?: string;
  /** The payment service's refund id; none: a random one. */
  refundId?: string;
  status: RefundStatus;
  extRefundId?: string;
  /** A PENDING notification first (the payment service does not normally send one): a refund.pending event. */
  pending?: boolean;
  /** The other final status arrives after `status` (FINALIZED then CANCELED, say): a refund.status_conflict. */
  conflict?: boolean;
}

/** What happens to one order, as the payment service would see it. */
export interface LifecyclePlan {
  posId: string;
  /** The notifyUrl the order carries (where the notifications go). */
  notifyUrl: string;
  payMethod: PayMethodKind;
  /** Auto-receive on: PENDING then the final status. Off: PENDING, WAITING_FOR_CONFIRMATION, then the merchant captures or cancels. */
  autoReceive: boolean;
  outcome: 'COMPLETED' | 'CANCELED';
  totalAmount: string;
  currencyCode: string;
  /** Only for a COMPLETED order; the amounts of the refunds that are not CANCELED add up to at most the total. */
  refunds: RefundPlan[];
  /** After everything else, the order's other final status arrives too: an order.status_conflict. */
  conflict?: boolean;
  /** The final status's notification states another total amount: its event carries data.disagreements. */
  disagreement?: boolean;
  /** Simulated time between consecutive status changes. */
  gapMs: number;
  /** Simulated offset (from the start of the run) of the order's first status change. */
  startMs: number;
  /** Wall-clock time of the start of the run: the timestamps in the bodies count from it. */
  runStartedAt: Date;
  orderId?: string;
  extOrderId?: string;
}

/** One notification the payment service sends: the bytes, and when its status changed. */
export interface SimulatedNotification {
  kind: 'order' | 'refund';
  orderId: string;
  refundId: string | null;
  status: OrderStatus | RefundStatus;
  /** Simulated offset from the start of the run at which the status changed: the first attempt's time. */
  changedAtMs: number;
  /** Exact body bytes (compact JSON, as the sender posts them). */
  body: Buffer;
  /** Svc-Processing-Time the sender reports; it sends one for selected statuses only. */
  processingTimeMs: number | null;
}

export interface Lifecycle {
  orderId: string;
  plan: LifecyclePlan;
  /** The order's final status followed by each refund's (what the projections should end at). */
  expected: { order: OrderStatus; refunds: Array<{ refundId: string; amount: string; status: RefundStatus }> };
  notifications: SimulatedNotification[];
}

export class PlanError extends Error {}

/** Checks a plan before anything is sent; throws PlanError naming the problem. */
export function validatePlan(plan: LifecyclePlan): void {
  if (!/^\d{1,18}$/.test(plan.totalAmount) || BigInt(plan.totalAmount) < 1n)
    throw new PlanError('totalAmount must be a positive whole number of minor units');
  if (!/^[A-Z]{3}$/.test(plan.currencyCode)) throw new PlanError('currencyCode must be an ISO 4217 code such as PLN');
  if (plan.refunds.length > 0 && plan.outcome !== 'COMPLETED')
    throw new PlanError('only a COMPLETED order can be refunded');
  let refunded = 0n;
  for (const refund of plan.refunds) {
    if (refund.amount !== undefined && (!/^\d{1,18}$/.test(refund.amount) || BigInt(refund.amount) < 1n)) {
      throw new PlanError('a refund amount must be a positive whole number of minor units');
    }
    const amount = refund.amount === undefined ? BigInt(plan.totalAmount) - refunded : BigInt(refund.amount);
    if (refund.status === 'CANCELED') continue;
    if (amount < 1n) throw new PlanError('a full refund needs an amount left to refund');
    refunded += amount;
    if (refunded > BigInt(plan.totalAmount)) throw new PlanError('refunds add up to more than the order amount');
  }
}

const DESCRIPTIONS = ['Shopping at myStore.com', 'Order from the online shop', 'Ebook', 'Subscription renewal'];

/** The order statuses of a lifecycle, in the order the payment service moves through them. */
export function orderStatusesOf(plan: Pick<LifecyclePlan, 'autoReceive' | 'outcome'>): OrderStatus[] {
  return plan.autoReceive ? ['PENDING', plan.outcome] : ['PENDING', 'WAITING_FOR_CONFIRMATION', plan.outcome];
}

/**
 * Builds every notification of one order's lifecycle, with realistic bodies and status-change times:
 *   auto-receive on:  PENDING, then COMPLETED (or CANCELED);
 *   auto-receive off: PENDING, WAITING_FOR_CONFIRMATION, then COMPLETED (captured) or CANCELED;
 *   then one FINALIZED or CANCELED notification per refund of a COMPLETED order.
 * Pure apart from `random`.
 */
export function buildLifecycle(plan: LifecyclePlan, random: Random): Lifecycle {
  validatePlan(plan);
  const at = (offsetMs: number): Date => new Date(plan.runStartedAt.getTime() + plan.startMs + offsetMs);
  const created = at(-randomInt(random, 5_000, 60_000));
  const order: OrderData = {
    orderId: plan.orderId ?? newOrderId(random, created),
    extOrderId: plan.extOrderId ?? newExtOrderId(random),
    orderCreateDate: formatSenderTimestamp(created),
    notifyUrl: plan.notifyUrl,
    customerIp: '127.0.0.1',
    merchantPosId: plan.posId,
    description: pick(random, DESCRIPTIONS),
    currencyCode: plan.currencyCode,
    totalAmount: plan.totalAmount,
    products: productsFor(random, plan.totalAmount),
    buyer: newBuyer(random),
    payMethod: plan.payMethod,
    paymentId: newPaymentId(random),
  };

  const notifications: SimulatedNotification[] = [];
  // The PAYMENT_ID property: one element from WAITING_FOR_CONFIRMATION on; PENDING may have none yet.
  const pendingHasPaymentId = chance(random, 0.7);
  let offset = 0;
  const orderNotification = (status: OrderStatus, stated: OrderData = order): void => {
    // The moment of the change, shortly before the notification about it goes out.
    const changedAt = at(offset - randomInt(random, 0, 999));
    notifications.push({
      kind: 'order',
      orderId: order.orderId,
      refundId: null,
      status,
      changedAtMs: plan.startMs + offset,
      body: orderNotificationBody(stated, status, {
        withPaymentId: status !== 'PENDING' || pendingHasPaymentId,
        ...(status === 'COMPLETED' ? { localReceiptDateTime: formatLocalReceiptDateTime(changedAt) } : {}),
      }),
      processingTimeMs: status === 'PENDING' ? null : randomInt(random, 100, 2_000),
    });
  };
  const statuses = orderStatusesOf(plan);
  statuses.forEach((status, index) => {
    if (index > 0) offset += plan.gapMs;
    const last = index === statuses.length - 1;
    // A disagreement: the final notification states another total (the receiver keeps the first one).
    const stated =
      last && plan.disagreement ? { ...order, totalAmount: String(BigInt(order.totalAmount) + 100n) } : order;
    orderNotification(status, stated);
  });

  const refunds: Lifecycle['expected']['refunds'] = [];
  let refunded = 0n;
  for (const refund of plan.refunds) {
    offset += plan.gapMs;
    const amount = refund.amount ?? (BigInt(plan.totalAmount) - refunded).toString();
    if (refund.status !== 'CANCELED') refunded += BigInt(amount);
    const refundId = refund.refundId ?? newRefundId(random);
    const refundNotification = (status: RefundStatus | 'PENDING'): void => {
      const statusAt = at(offset - randomInt(random, 0, 999));
      notifications.push({
        kind: 'refund',
        orderId: order.orderId,
        refundId,
        status,
        changedAtMs: plan.startMs + offset,
        body: refundNotificationBody(order, {
          refundId,
          ...(refund.extRefundId !== undefined ? { extRefundId: refund.extRefundId } : {}),
          amount,
          currencyCode: plan.currencyCode,
          status,
          statusDateTime: formatSenderTimestamp(statusAt),
          reason: 'refund',
          reasonDescription: status === 'CANCELED' ? 'refund rejected by the bank' : 'customer request',
          // Requested after the previous status change, processed by the time of this one.
          refundDate: formatSenderTimestamp(at(offset - Math.floor(plan.gapMs / 2) - randomInt(random, 0, 999))),
        }),
        processingTimeMs: null,
      });
    };
    if (refund.pending) {
      refundNotification('PENDING');
      offset += plan.gapMs;
    }
    refundNotification(refund.status);
    if (refund.conflict) {
      offset += plan.gapMs;
      refundNotification(refund.status === 'FINALIZED' ? 'CANCELED' : 'FINALIZED');
    }
    // The first final status is kept: the conflicting one is published as such, and changes nothing.
    refunds.push({ refundId, amount, status: refund.status });
  }
  if (plan.conflict) {
    offset += plan.gapMs;
    orderNotification(plan.outcome === 'COMPLETED' ? 'CANCELED' : 'COMPLETED');
  }
  return { orderId: order.orderId, plan, expected: { order: plan.outcome, refunds }, notifications };
}

/** The parts of a plan that random traffic does not choose. */
export type PlanBase = Pick<
  LifecyclePlan,
  'posId' | 'notifyUrl' | 'gapMs' | 'startMs' | 'runStartedAt' | 'currencyCode'
>;

/**
 * A random but realistic lifecycle: every pay method, auto-receive on and off, mostly completed,
 * some cancelled; completed orders sometimes refunded in full, or partially once or twice, now and
 * then a refund the bank rejects (CANCELED).
 */
export function randomPlan(random: Random, base: PlanBase): LifecyclePlan {
  const total = randomInt(random, 100, 250_000);
  const outcome = chance(random, 0.8) ? 'COMPLETED' : 'CANCELED';
  const refunds: RefundPlan[] = [];
  if (outcome === 'COMPLETED') {
    const kind = random();
    const status = (): RefundStatus => (chance(random, 0.15) ? 'CANCELED' : 'FINALIZED');
    if (kind < 0.25) refunds.push({ status: status() });
    else if (kind < 0.5) {
      const count = randomInt(random, 1, 2);
      for (let i = 0; i < count; i++)
        refunds.push({ amount: String(Math.max(1, Math.floor(total / 3))), status: status() });
    }
  }
  return {
    ...base,
    payMethod: pick(random, ['pbl', 'card', 'blik'] as const),
    autoReceive: chance(random, 0.7),
    outcome,
    totalAmount: String(total),
    refunds,
  };
}
