import { Counter, Histogram, Gauge, type Registry } from 'prom-client';

/**
 * The metrics of reconciliation (src/reconciliation/) and of its payment-API client (src/paymentApi/), in a given
 * registry: the service's (createMetrics), or a CLI command's own.
 */

/** The payment API's endpoints the client calls (spec, "Endpoints" 1, 3 and 7). */
export const PAYMENT_API_ENDPOINTS = ['token', 'order', 'refunds'] as const;
export type PaymentApiEndpoint = (typeof PAYMENT_API_ENDPOINTS)[number];

/** How a token fetch ended; a POS with wrong credentials shows as `unauthorized`. */
export const TOKEN_FETCH_RESULTS = ['ok', 'unauthorized', 'unavailable', 'invalid_answer'] as const;
export type TokenFetchResult = (typeof TOKEN_FETCH_RESULTS)[number];

/** The payment-API client's: calls by endpoint and answer, their durations, and token fetches per POS. */
export interface PaymentApiMetrics {
  /** status: the HTTP status code, or `network` / `timeout` when no answer came. */
  requests: Counter<'endpoint' | 'status'>;
  requestDuration: Histogram<'endpoint'>;
  tokenFetches: Counter<'pos_id' | 'result'>;
}

/** Reconciliation against the payment API: checks, repairs, the orders it waits on, and who runs it. */
export interface ReconciliationMetrics {
  /** result: unchanged, repaired, pos_mismatch, or why the API gave no usable answer. */
  checks: Counter<'result'>;
  /** Statuses learned from the API that no notification brought: each one a notification lost on its way. */
  repairs: Counter<'kind' | 'status'>;
  /** Facts the API's answer stated otherwise than the order's notifications (the first ones are kept). */
  disagreements: Counter<'kind' | 'field'>;
  /** Orders given up (RECONCILE_GIVE_UP passed, still not final). */
  givenUp: Counter;
  /** Set by the active reconciler after each sweep. */
  stuckOrders: Gauge;
  givenUpOrders: Gauge;
  reconcilerActive: Gauge;
}

/**
 * How a reconciliation check of an order ended: nothing new, statuses repaired, an answer about another
 * POS's order refused, or why the payment API gave no usable answer (PaymentApiErrorKind).
 */
export const CHECK_RESULTS = [
  'unchanged',
  'repaired',
  'pos_mismatch',
  'not_found',
  'forbidden',
  'unauthorized',
  'unavailable',
  'invalid_answer',
  'no_credentials',
  'invalid_order_id',
  'cancelled',
] as const;
export type CheckResult = (typeof CHECK_RESULTS)[number];

/** The reconciler's metrics, in a given registry (the service's, or a CLI command's own). */
export function createReconciliationMetrics(registry: Registry): ReconciliationMetrics {
  const checks = new Counter({
    name: 'reconciliation_checks_total',
    help: 'Orders checked against the payment API, by result.',
    labelNames: ['result'] as const,
    registers: [registry],
  });
  for (const result of CHECK_RESULTS) checks.inc({ result }, 0);
  const repairs = new Counter({
    name: 'reconciliation_repairs_total',
    help: 'Statuses applied from the payment API that no notification brought (each a lost notification), by kind and status.',
    labelNames: ['kind', 'status'] as const,
    registers: [registry],
  });
  for (const kind of ['order', 'refund'])
    repairs.inc({ kind, status: kind === 'order' ? 'COMPLETED' : 'FINALIZED' }, 0);
  const disagreements = new Counter({
    name: 'reconciliation_disagreements_total',
    help: "Facts (amount, currency, extOrderId, POS, a refund's order) the payment API stated otherwise than the order's notifications, by kind and field; the status is recorded, the first facts kept, and the event lists the disagreement.",
    labelNames: ['kind', 'field'] as const,
    registers: [registry],
  });
  for (const [kind, field] of [
    ['order', 'totalAmount'],
    ['order', 'currencyCode'],
    ['refund', 'amount'],
    ['refund', 'currencyCode'],
  ] as const)
    disagreements.inc({ kind, field }, 0);
  const givenUp = new Counter({
    name: 'reconciliation_given_up_total',
    help: 'Orders given up: still not final RECONCILE_GIVE_UP after their last observation.',
    registers: [registry],
  });
  const stuckOrders = new Gauge({
    name: 'reconciliation_stuck_orders',
    help: 'Orders (or their refunds) not final RECONCILE_AFTER after their last observation, not given up; set by the active reconciler.',
    registers: [registry],
  });
  const givenUpOrders = new Gauge({
    name: 'reconciliation_given_up_orders',
    help: 'Orders given up and still not final; set by the active reconciler.',
    registers: [registry],
  });
  const reconcilerActive = new Gauge({
    name: 'reconciler_active',
    help: '1 while this process is the active reconciler (holds the reconciler lock).',
    registers: [registry],
  });
  return { checks, repairs, disagreements, givenUp, stuckOrders, givenUpOrders, reconcilerActive };
}

/**
 * The payment-API client's metrics, in a given registry (the service's, or a CLI command's own).
 * Token fetch series per POS are created by the client, which knows the configured POS.
 */
export function createPaymentApiMetrics(registry: Registry): PaymentApiMetrics {
  const requests = new Counter({
    name: 'payment_api_requests_total',
    help: 'Requests to the payment API by endpoint and answer: the HTTP status, or network / timeout.',
    labelNames: ['endpoint', 'status'] as const,
    registers: [registry],
  });
  const requestDuration = new Histogram({
    name: 'payment_api_request_duration_seconds',
    help: 'Payment API request duration, from the request sent to the answer read (each attempt).',
    labelNames: ['endpoint'] as const,
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  });
  const tokenFetches = new Counter({
    name: 'payment_api_token_fetches_total',
    help: 'OAuth token fetches by POS and result; unauthorized means wrong credentials for that POS.',
    labelNames: ['pos_id', 'result'] as const,
    registers: [registry],
  });
  return { requests, requestDuration, tokenFetches };
}
