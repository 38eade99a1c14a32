import { createHash } from 'node:crypto';
import { orderBody, refundBody, uniqueId } from '../../support/signing';
import { BUYER } from './secrets';

/**
 * A reference model of the README's recording rules ("Recording and state rules", "AMQP interface"),
 * written independently of src/recording: what the projections and the events must be after a
 * given arrival order of notifications.
 */

export type PayMethod = 'hosted' | 'card' | 'code';

export interface RefundPlan {
  full: boolean;
  withPending: boolean;
  final: 'FINALIZED' | 'CANCELED';
}

export interface OrderPlan {
  pay: PayMethod;
  autoReceive: boolean;
  outcome: 'completed' | 'canceled';
  /** A second payment attempt of the same order after it completed: PENDING then CANCELED. */
  secondAttempt: boolean;
  refunds: RefundPlan[];
  /** Copies of each notification (cycled): the sender's repeats. */
  copies: number[];
  /** Which copies are re-serialized by the sender (same meaning, other bytes), cycled. */
  reserialized: boolean[];
  /** Which notifications have their copies sent at the same moment (parallel duplicates), cycled. */
  parallel: boolean[];
  /** Delay of each delivery in send slots (cycled), scaled by `disorder`: 0 keeps the send order. */
  delays: number[];
  disorder: number;
}

export interface ModelNotification {
  kind: 'order' | 'refund';
  orderId: string;
  refundId: string | null;
  status: string;
  body: string;
  fields: Record<string, string | null>;
}

export interface Delivery {
  notification: ModelNotification;
  body: Buffer;
  /** Deliveries of one step are sent at once. */
  step: number;
}

const AMOUNTS: Record<PayMethod, string> = { hosted: '15000', card: '2599', code: '100' };
const PAY_METHOD_TYPE: Record<PayMethod, string> = { hosted: 'PBL', card: 'CARD_TOKEN', code: 'PBL' };

let paymentCounter = 0;
const nextPaymentId = (): string => String(80_000_000 + (paymentCounter++ % 10_000_000));

/** The notifications the payment service sends for one order, in the order the statuses change. */
export function lifecycle(plan: OrderPlan, orderId: string): ModelNotification[] {
  const total = AMOUNTS[plan.pay];
  const payMethodType = PAY_METHOD_TYPE[plan.pay];
  const paymentId = nextPaymentId();
  const notes: ModelNotification[] = [];
  const order = (
    status: string,
    extra: { paymentId?: string; payMethodType?: string; localReceiptDateTime?: string; buyer?: boolean },
  ): void => {
    const body = orderBody({
      orderId,
      status,
      totalAmount: total,
      ...(extra.paymentId ? { paymentId: extra.paymentId } : {}),
      ...(extra.payMethodType ? { payMethodType: extra.payMethodType } : {}),
      ...(extra.localReceiptDateTime ? { localReceiptDateTime: extra.localReceiptDateTime } : {}),
      ...(extra.buyer ? { buyer: BUYER } : {}),
    });
    notes.push({
      kind: 'order',
      orderId,
      refundId: null,
      status,
      body,
      fields: {
        extOrderId: `ext-${orderId}`,
        totalAmount: total,
        currencyCode: 'PLN',
        paymentId: extra.paymentId ?? null,
        payMethodType: extra.payMethodType ?? null,
        localReceiptDateTime: extra.localReceiptDateTime ?? null,
      },
    });
  };
  // The code-based method's PENDING carries no PAYMENT_ID yet (spec: "for PENDING possibly empty").
  order('PENDING', plan.pay === 'code' ? {} : { paymentId });
  if (!plan.autoReceive) order('WAITING_FOR_CONFIRMATION', { paymentId });
  if (plan.outcome === 'completed') {
    // localReceiptDateTime: with milliseconds and offset, or both omitted when the milliseconds are 000.
    order('COMPLETED', {
      paymentId,
      payMethodType,
      localReceiptDateTime: plan.pay === 'card' ? '2026-11-01T10:05:00' : '2026-11-01T10:05:00.123+01:00',
      buyer: true,
    });
    if (plan.secondAttempt) {
      const second = nextPaymentId();
      order('PENDING', { paymentId: second });
      order('CANCELED', { paymentId: second });
    }
    plan.refunds.forEach((r, i) => {
      const refundId = uniqueId(`${orderId}R${i}`);
      const amount = r.full ? total : String(Math.max(1, Math.floor(Number(total) / 3)));
      for (const status of [...(r.withPending ? ['PENDING'] : []), r.final]) {
        notes.push({
          kind: 'refund',
          orderId,
          refundId,
          status,
          body: refundBody({ orderId, refundId, status, amount, extRefundId: `shop-${refundId}` }),
          fields: { amount, currencyCode: 'PLN', extRefundId: `shop-${refundId}` },
        });
      }
    });
  } else {
    order('CANCELED', { paymentId });
  }
  return notes;
}

const cycle = <T>(values: readonly T[], index: number, fallback: T): T =>
  values.length === 0 ? fallback : (values[index % values.length] as T);

/** Copies, re-serializations, parallel bursts and delays turned into the arrival order. */
export function schedule(plan: OrderPlan, notes: readonly ModelNotification[]): Delivery[][] {
  const slots: Array<{ key: number; deliveries: Delivery[] }> = [];
  let d = 0;
  notes.forEach((n, i) => {
    const copies = cycle(plan.copies, i, 1);
    const bodies = Array.from({ length: copies }, (_, c) =>
      c > 0 && cycle(plan.reserialized, i + c, false)
        ? Buffer.from(JSON.stringify(JSON.parse(n.body), null, 1))
        : Buffer.from(n.body),
    );
    if (cycle(plan.parallel, i, false) && copies > 1) {
      slots.push({
        key: i * 10 + cycle(plan.delays, d++, 0) * plan.disorder,
        deliveries: bodies.map((body) => ({ notification: n, body, step: 0 })),
      });
    } else {
      bodies.forEach((body, c) => {
        // A repeat is a retry: it comes after its original was sent, then may be overtaken.
        slots.push({
          key: i * 10 + c * 5 + cycle(plan.delays, d++, 0) * plan.disorder,
          deliveries: [{ notification: n, body, step: 0 }],
        });
      });
    }
  });
  return slots
    .map((s, index) => ({ ...s, index }))
    .sort((a, b) => a.key - b.key || a.index - b.index)
    .map((s, step) => s.deliveries.map((x) => ({ ...x, step })));
}

export interface ModelEvent {
  type: string;
  status: string;
  previousStatus: string | null;
  sequence: number;
  fields: Record<string, string | null>;
}

export interface ModelHistory {
  status: string;
  outcome: 'applied' | 'stale' | 'conflict';
  deliveries: number;
}

export interface ModelProjection {
  status: string;
  fields: Record<string, string | null>;
  history: ModelHistory[];
}

export interface ModelState {
  orders: Map<string, ModelProjection>;
  refunds: Map<string, ModelProjection & { orderId: string }>;
  events: Map<string, ModelEvent[]>;
}

const ORDER_RANK: Record<string, number> = { PENDING: 1, WAITING_FOR_CONFIRMATION: 2, COMPLETED: 3, CANCELED: 3 };
const REFUND_RANK: Record<string, number> = { PENDING: 1, FINALIZED: 2, CANCELED: 2 };
const FINAL = new Set(['COMPLETED', 'CANCELED', 'FINALIZED']);

/** README: forward only; final statuses hold; one final after another is a conflict. */
function decide(
  ranks: Record<string, number>,
  current: string | null,
  incoming: string,
): 'applied' | 'stale' | 'conflict' {
  if (current === null) return 'applied';
  if (FINAL.has(current)) return FINAL.has(incoming) && incoming !== current ? 'conflict' : 'stale';
  return (ranks[incoming] ?? 0) > (ranks[current] ?? 0) ? 'applied' : 'stale';
}

export function emptyModel(): ModelState {
  return { orders: new Map(), refunds: new Map(), events: new Map() };
}

/** Applies one delivery; returns the outcome the service must answer. */
export function applyDelivery(
  model: ModelState,
  n: ModelNotification,
): 'accepted' | 'duplicate' | 'stale' | 'conflict' {
  const isOrder = n.kind === 'order';
  const subject = isOrder ? n.orderId : (n.refundId as string);
  const projections = isOrder ? model.orders : model.refunds;
  const existing = projections.get(subject);
  const seen = existing?.history.find((h) => h.status === n.status);
  if (seen) {
    seen.deliveries += 1;
    return 'duplicate';
  }
  const outcome = decide(isOrder ? ORDER_RANK : REFUND_RANK, existing?.status ?? null, n.status);
  const projection = existing ?? {
    status: n.status,
    fields: {},
    history: [],
    ...(isOrder ? {} : { orderId: n.orderId }),
  };
  const previous = existing?.status ?? null;
  projection.history.push({ status: n.status, outcome, deliveries: 1 });
  if (outcome === 'applied') {
    projection.status = n.status;
    for (const [key, value] of Object.entries(n.fields)) if (value !== null) projection.fields[key] = value;
  }
  if (!existing) projections.set(subject, projection);
  if (outcome !== 'stale') {
    const events = model.events.get(n.orderId) ?? [];
    events.push({
      type: outcome === 'conflict' ? `${n.kind}.status_conflict` : `${n.kind}.${n.status.toLowerCase()}`,
      status: n.status,
      previousStatus: previous,
      sequence: events.length + 1,
      fields: { ...projection.fields },
    });
    model.events.set(n.orderId, events);
  }
  return outcome === 'applied' ? 'accepted' : outcome;
}

export const sha256 = (body: Buffer): string => createHash('sha256').update(body).digest('hex');
