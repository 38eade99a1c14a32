import type { Db } from '../database/pool';
import { systemClock, type Clock } from '../domain/clock';
import type { Logger } from '../observability/logger';
import type { PaymentApiMetrics, ReconciliationMetrics } from '../observability/reconciliationMetrics';
import { createPaymentApi, type PaymentApi, type PaymentApiCredential } from '../paymentApi/paymentApi';
import type { NotificationStore } from '../recording/notificationStore';
import { checkOrder, type OrderCheck } from './checkOrder';
import { posToAsk } from './observations';
import { PaymentApiReachability } from './reachability';
import { Reconciler } from './reconciler';
import { schedulePolicy, type SchedulePolicy } from './schedule';
import { ownerOf, recordedMeanings } from './scheduleQueries';
import { SharedWork } from './sharedWork';

/** The reconciliation settings, read by src/config/ (ReconciliationConfig). */
export interface ReconciliationSettings {
  /** PAYMENT_API_URL: the payment API's base address, without a path. */
  paymentApiUrl: string;
  /** One OAuth client per POS (PAYMENT_API_CREDENTIALS). Secret. */
  credentials: PaymentApiCredential[];
  /** PAYMENT_API_TIMEOUT: longest a payment API attempt may take, answer included. */
  timeoutMs: number;
  /** PAYMENT_API_MAX_IN_FLIGHT and PAYMENT_API_MAX_PER_SECOND, shared by every POS. */
  maxInFlight: number;
  maxPerSecond: number;
  /** RECONCILE_AFTER: an open order is checked this long after its last observation, then on a widening schedule. */
  afterMs: number;
  /** RECONCILE_GIVE_UP: past this since its last observation, an order still open is given up (counted, alerted). */
  giveUpMs: number;
  /** RECONCILE_INTERVAL: how often the sweep looks for due work. */
  intervalMs: number;
}

/** Why an order cannot be checked as asked: the POS to ask with is not known, or not the order's. */
export type PosProblem = 'pos_mismatch' | 'pos_required' | 'unknown_pos';

/** Reconciliation as the service, the admin port and the CLI use it. */
/** How one order is reconciled on demand. */
export interface ReconcileOptions {
  /** The POS to ask with when the order was never seen (else its own; else the only one configured). */
  posId?: string;
  /**
   * The POS to ask with only if the order was never seen: unlike `posId`, never a mismatch with the order's own
   * (a list of orders, known and not, given with one POS).
   */
  posIdIfNeverSeen?: string;
  /** Ask, record nothing. */
  dryRun?: boolean;
  /** Aborted when the caller left. */
  clientLeft?: AbortSignal;
}

export interface Reconciliation {
  api: PaymentApi;
  /** RECONCILE_AFTER and RECONCILE_GIVE_UP, as the schedule reads them. */
  policy: SchedulePolicy;
  /** The POS that credentials are configured for (PAYMENT_API_CREDENTIALS): the ones a check can ask with. */
  posIds: readonly string[];
  /**
   * Checks one order now with the credentials of the POS it belongs to (or, never seen, of `posId`, or of
   * the only POS configured) and records what the API says; or why it cannot ask. Callers asking the same at
   * once share one check; it is cancelled once every one of them has left (`clientLeft` aborted).
   */
  reconcileOrder(orderId: string, options?: ReconcileOptions): Promise<OrderCheck | { problem: PosProblem }>;
  /**
   * The background sweep (one active across replicas), on the reconciliation's clock, or on a clock of its own where
   * a test sets the time of each sweep by hand (and the API client's limiter keeps the real time).
   */
  createReconciler(databaseUrl: string, sweepClock?: Clock): Reconciler;
}

export interface ReconciliationDependencies {
  /** The reconciliation's own small pool: it never takes a connection the intake needs. */
  db: Db;
  /** The recorder on that pool: what the API says goes through the same door as a notification. */
  store: NotificationStore;
  metrics: { paymentApi: PaymentApiMetrics; reconciliation: ReconciliationMetrics };
  logger: Logger;
  /**
   * The sweep's time and waits, and the API client's (its retries, Retry-After, the token's lifetime): the system's
   * unless a test drives it.
   */
  clock?: Clock;
}

export function createReconciliation(
  settings: ReconciliationSettings,
  deps: ReconciliationDependencies,
): Reconciliation {
  const { db, store, metrics, logger, clock = systemClock } = deps;
  const api = createPaymentApi({
    now: () => clock.now(),
    sleep: (ms) => new Promise((resolve) => clock.after(ms, resolve)),
    baseUrl: settings.paymentApiUrl,
    credentials: settings.credentials,
    timeoutMs: settings.timeoutMs,
    maxInFlight: settings.maxInFlight,
    maxPerSecond: settings.maxPerSecond,
    logger: logger.child({ component: 'payment-api' }),
    metrics: metrics.paymentApi,
  });
  const check = {
    api,
    store,
    logger,
    metrics: metrics.reconciliation,
    recorded: (orderId: string) => recordedMeanings(db, orderId),
    reachability: new PaymentApiReachability(db, logger),
  };
  const configured = settings.credentials.map((c) => c.posId);
  const policy = schedulePolicy(settings.afterMs, settings.giveUpMs);
  const shared = new SharedWork<OrderCheck | { problem: PosProblem }>();
  return {
    api,
    policy,
    posIds: configured,
    reconcileOrder: (orderId, { posId, posIdIfNeverSeen, dryRun = false, clientLeft } = {}) =>
      shared.run(
        // U+001F never occurs in an id (idProblem).
        [orderId, posId ?? '', posIdIfNeverSeen ?? '', String(dryRun)].join('\u001f'),
        async (cancelled) => {
          const owner = await ownerOf(db, orderId);
          const pos = posToAsk(owner, posId ?? (owner === undefined ? posIdIfNeverSeen : undefined), configured);
          return 'problem' in pos ? pos : checkOrder(check, orderId, pos.posId, { dryRun, signal: cancelled });
        },
        clientLeft,
      ),
    createReconciler: (databaseUrl, sweepClock = clock) =>
      new Reconciler({
        clock: sweepClock,
        databaseUrl,
        db,
        check,
        policy,
        intervalMs: settings.intervalMs,
        metrics: metrics.reconciliation,
        logger: logger.child({ component: 'reconciler' }),
      }),
  };
}
