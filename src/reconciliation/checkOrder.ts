import type { Logger } from '../observability/logger';
import type { CheckResult, ReconciliationMetrics } from '../observability/reconciliationMetrics';
import { PaymentApiError, type PaymentApi, type RetrievedOrder } from '../paymentApi/paymentApi';
import type { PaymentApiErrorDetails } from '../paymentApi/paymentApiError';
import { meaningOf } from '../recording/batch';
import type { NotificationStore, DeliveryAnswer } from '../recording/notificationStore';
import type { PaymentApiReachability } from './reachability';
import { hasRefunds, orderObservation, refundObservations, type Observation } from './observations';

/** A status of the order or of one of its refunds. */
export interface ObservedStatus {
  kind: 'order' | 'refund';
  /** The orderId, or the refundId. */
  id: string;
  status: string;
}

/** One check of one order: what the API said and what recording it changed. */
export interface OrderCheck {
  orderId: string;
  posId: string;
  result: CheckResult;
  /** What the API says: the order's status (NEW included) and its refunds'; empty when it did not answer. */
  said: ObservedStatus[];
  /** Statuses the projection took from this check: each one a notification that never arrived. */
  applied: ObservedStatus[];
  /** Statuses behind the projection (a lagging answer) or against a final one: recorded, nothing changed. */
  stale: ObservedStatus[];
  conflicts: ObservedStatus[];
  /** Whether the API says the order and its refunds are final: nothing more to learn. */
  final: boolean;
  /** What the API asked us to wait, when it refused for load. */
  retryAfterMs: number | null;
  /** Why the API gave no usable answer (its last status, no answer at all, attempts); null when it answered. */
  failure: PaymentApiErrorDetails | null;
}

export interface CheckDependencies {
  api: PaymentApi;
  store: NotificationStore;
  logger: Logger;
  metrics?: ReconciliationMetrics;
  /**
   * What is recorded for an order already, as meaning keys (meaningKey): those statuses are not recorded again,
   * so a check that learns nothing writes nothing (not even a delivery row). Without it, everything is recorded.
   */
  recorded?: (orderId: string) => Promise<ReadonlySet<string>>;
  /** Told how each check's question went, for the record every replica's console reads (reachability.ts). */
  reachability?: PaymentApiReachability;
}

const FINAL = new Set(['COMPLETED', 'CANCELED', 'FINALIZED']);

const statusOf = ({ notification: n }: Observation): ObservedStatus => ({
  kind: n.kind,
  id: n.kind === 'order' ? n.orderId : n.refundId,
  status: n.status,
});

/** A check that learned nothing (yet): its result, and empty lists. */
export function uncheckedOrder(orderId: string, posId: string, result: CheckResult): OrderCheck {
  return {
    orderId,
    posId,
    result,
    said: [],
    applied: [],
    stale: [],
    conflicts: [],
    final: false,
    retryAfterMs: null,
    failure: null,
  };
}

type Asked = { ok: true; order: RetrievedOrder; observations: Observation[] } | { ok: false; error: PaymentApiError };

/** The order and, for a completed one, its refunds, as observations; the order's own POS's credentials ask. */
async function ask(api: PaymentApi, orderId: string, posId: string, signal?: AbortSignal): Promise<Asked> {
  try {
    const answer = await api.retrieveOrder(posId, orderId, signal);
    const order = orderObservation(posId, answer);
    const refunds = hasRefunds(answer.value)
      ? refundObservations(posId, answer.value, await api.listRefunds(posId, orderId, signal))
      : [];
    return { ok: true, order: answer.value, observations: [...(order ? [order] : []), ...refunds] };
  } catch (error) {
    if (error instanceof PaymentApiError) return { ok: false, error };
    throw error;
  }
}

/**
 * Checks one order against the payment API with its POS's credentials and, unless dryRun, records what the
 * API says through the recorder, as observations of the same meanings as notifications (observations.ts).
 * An answer about another POS's order is refused, nothing recorded. A `signal` that aborts (the caller left)
 * stops the questions where they are: the check ends `cancelled`.
 */
export async function checkOrder(
  deps: CheckDependencies,
  orderId: string,
  posId: string,
  { dryRun = false, signal }: { dryRun?: boolean; signal?: AbortSignal } = {},
): Promise<OrderCheck> {
  const check = uncheckedOrder(orderId, posId, 'unchanged');
  const asked = await ask(deps.api, orderId, posId, signal);
  if (!asked.ok) {
    check.result = asked.error.kind;
    check.retryAfterMs = asked.error.details.retryAfterMs;
    check.failure = asked.error.details;
  } else {
    const { order, observations } = asked;
    check.said = [
      { kind: 'order', id: orderId, status: order.status },
      ...observations.filter((o) => o.notification.kind === 'refund').map(statusOf),
    ];
    check.final = check.said.every((s) => FINAL.has(s.status));
    if (order.merchantPosId !== posId) check.result = 'pos_mismatch';
    else if (!dryRun) {
      const known = (await deps.recorded?.(orderId)) ?? new Set<string>();
      const news = observations.filter((o) => !known.has(meaningOf(o.notification)));
      const disagreed = await record(deps.store, news, check);
      for (const { kind, field } of disagreed) deps.metrics?.disagreements.inc({ kind, field });
      if (disagreed.length > 0)
        // Field names only: never a value of the answer.
        deps.logger.warn(
          { orderId, posId, disagreements: disagreed.map((d) => `${d.kind} ${d.field}`) },
          "the payment API states facts otherwise than the order's notifications; the first ones are kept",
        );
    }
  }
  deps.metrics?.checks.inc({ result: check.result });
  await deps.reachability?.observe(check);
  for (const s of check.applied) deps.metrics?.repairs.inc({ kind: s.kind, status: s.status });
  deps.logger.debug({ orderId, posId, result: check.result, dryRun }, 'order checked against the payment API');
  if (check.conflicts.length > 0)
    deps.logger.error(
      { orderId, posId, conflicts: check.conflicts.map((s) => `${s.kind} ${s.status}`) },
      'the payment API states a final status other than the one recorded: the first one is kept',
    );
  if (check.applied.length > 0)
    // Statuses only: never a byte of the answer.
    deps.logger.warn(
      { orderId, posId, applied: check.applied.map((s) => `${s.kind} ${s.status}`) },
      'statuses learned from the payment API that no notification brought: check the delivery path',
    );
  return check;
}

/**
 * Records the observations in order (the order's status first, its refunds after) and sorts the outcomes;
 * answers the facts they stated otherwise than the projections keep.
 */
async function record(
  store: NotificationStore,
  observations: readonly Observation[],
  check: OrderCheck,
): Promise<Array<{ kind: 'order' | 'refund'; field: string }>> {
  const outcomes: DeliveryAnswer[] = [];
  for (const o of observations) outcomes.push(await store.record(o.delivery, o.notification));
  const disagreed: Array<{ kind: 'order' | 'refund'; field: string }> = [];
  outcomes.forEach((outcome, index) => {
    const status = statusOf(observations[index] as Observation);
    if (outcome.outcome === 'refused') check.result = 'pos_mismatch';
    else {
      if (outcome.outcome === 'accepted') check.applied.push(status);
      else if (outcome.outcome === 'stale') check.stale.push(status);
      else if (outcome.outcome === 'conflict') check.conflicts.push(status);
      for (const field of outcome.disagreements) disagreed.push({ kind: status.kind, field });
    }
  });
  if (check.result !== 'pos_mismatch' && check.applied.length > 0) check.result = 'repaired';
  return disagreed;
}
