import { createHash } from 'node:crypto';
import {
  buildLifecycle,
  randomPlan,
  type Lifecycle,
  type LifecyclePlan,
  type PlanBase,
  type SimulatedNotification,
} from './lifecycle';
import { chance, randomInt, type Random } from './random';
import { notificationHeaders, type SignatureHeaders, type SimulatorAlgorithm } from './signing';
import { concurrencyLimit, deliverWithRetries, type AttemptReport, type Clock, type Sender } from './delivery';

/** Irregularities of the real sender, each applied independently with its probability. */
export interface Faults {
  /** Probability that a notification is sent twice (two independent deliveries of the same bytes). */
  duplicates: number;
  /** Probability that two consecutive notifications of an order go out in the opposite order. */
  reorder: number;
  /** Each notification's first attempt is late by a random delay up to this (simulated ms). */
  maxDelayMs: number;
  /** Probability that a notification is lost for good: never sent (the payment API still knows the status). */
  drop?: number;
}

export const NO_FAULTS: Faults = { duplicates: 0, reorder: 0, maxDelayMs: 0 };

export interface TrafficOptions {
  orders: number;
  /** Every order follows this plan, or with `randomize` each gets a random realistic one. */
  plan: Omit<LifecyclePlan, keyof PlanBase> | 'random';
  base: Omit<PlanBase, 'startMs'>;
  /** Orders start spread evenly over this many simulated ms. */
  spreadMs: number;
  random: Random;
}

/** The lifecycles of a run: one per order, started `spreadMs / orders` apart. */
export function buildTraffic(options: TrafficOptions): Lifecycle[] {
  const lifecycles: Lifecycle[] = [];
  for (let i = 0; i < options.orders; i++) {
    const startMs = options.orders > 1 ? Math.round((options.spreadMs * i) / options.orders) : 0;
    const base: PlanBase = { ...options.base, startMs };
    const plan: LifecyclePlan =
      options.plan === 'random' ? randomPlan(options.random, base) : { ...base, ...options.plan };
    lifecycles.push(buildLifecycle(plan, options.random));
  }
  return lifecycles;
}

export interface SimulationOptions {
  url: string;
  lifecycles: readonly Lifecycle[];
  secondKey: string | Buffer;
  algorithm: SimulatorAlgorithm;
  signatureHeaders: SignatureHeaders;
  basicAuth?: { user: string; password: string } | null;
  /** Send Svc-Processing-Time for the statuses the real sender reports it for. */
  processingTime: boolean;
  faults: Faults;
  random: Random;
  clock: Clock;
  send?: Sender;
  maxAttempts?: number;
  timeoutMs?: number;
  /** Requests in flight at once. */
  concurrency?: number;
  /** Called as each delivery ends (delivered or given up). */
  onDelivery?: (delivery: NotificationDelivery) => void;
  /** Called after each attempt, with when the next one is due (simulated ms), or null: no more. */
  onAttempt?: (notification: SimulatedNotification, attempt: AttemptReport, nextAtMs: number | null) => void;
  /**
   * Called at each status change (simulated time), whether or not its notification is ever sent:
   * how the payment-service double learns the truth as it happens.
   */
  onStatusChange?: (notification: SimulatedNotification) => void;
}

/** One delivery of one notification (an injected duplicate is a second delivery) and how it went. */
export interface NotificationDelivery {
  kind: 'order' | 'refund';
  orderId: string;
  refundId: string | null;
  status: string;
  /** 1, or 2 for the injected second copy. */
  copy: number;
  /** Simulated ms since the start at which the status changed (as planned). */
  changedAtMs: number;
  /** When the sender's schedule started for this delivery, after injected delays and reordering. */
  firstAttemptAtMs: number;
  reordered: boolean;
  bodyBytes: number;
  bodySha256: string;
  attempts: AttemptReport[];
  delivered: boolean;
  /** The last answer: HTTP status and the receiver's outcome or error code. */
  finalStatus: number | null;
  finalAnswer: string | null;
}

export interface SimulationSummary {
  orders: number;
  notifications: number;
  /** Notifications lost for good (faults.drop): never sent. */
  dropped: number;
  deliveries: number;
  delivered: number;
  gaveUp: number;
  attempts: number;
  /** How the receiver answered the delivered ones: accepted, duplicate, stale, conflict, quarantined. */
  outcomes: Record<string, number>;
  /** Every attempt's HTTP status ("none" for no answer). */
  httpStatuses: Record<string, number>;
}

export interface SimulationReport {
  orders: Array<{
    orderId: string;
    payMethod: string;
    autoReceive: boolean;
    expectedStatus: string;
    refunds: Array<{ refundId: string; amount: string; status: string }>;
  }>;
  deliveries: NotificationDelivery[];
  /** The notifications never sent (faults.drop), by status change. */
  dropped: Array<{ kind: 'order' | 'refund'; orderId: string; refundId: string | null; status: string }>;
  summary: SimulationSummary;
}

interface Job {
  lifecycle: Lifecycle;
  index: number;
  copy: number;
  startMs: number;
  reordered: boolean;
}

/** Plans every delivery: drops, delays, reordering and duplicates decided up front from `random`. */
function planJobs(
  lifecycles: readonly Lifecycle[],
  faults: Faults,
  random: Random,
): { jobs: Job[]; dropped: SimulatedNotification[] } {
  const jobs: Job[] = [];
  const dropped: SimulatedNotification[] = [];
  for (const lifecycle of lifecycles) {
    const starts = lifecycle.notifications.map(
      (n) => n.changedAtMs + (faults.maxDelayMs > 0 ? randomInt(random, 0, faults.maxDelayMs) : 0),
    );
    const reordered = new Set<number>();
    if (lifecycle.notifications.length > 1 && chance(random, faults.reorder)) {
      const i = randomInt(random, 0, lifecycle.notifications.length - 2);
      [starts[i], starts[i + 1]] = [starts[i + 1] as number, starts[i] as number];
      reordered.add(i).add(i + 1);
    }
    lifecycle.notifications.forEach((notification, index) => {
      // Drawn only when asked for, so runs without --drop repeat their seeds exactly as before.
      if (chance(random, faults.drop ?? 0)) {
        dropped.push(notification);
        return;
      }
      const startMs = starts[index] as number;
      jobs.push({ lifecycle, index, copy: 1, startMs, reordered: reordered.has(index) });
      if (chance(random, faults.duplicates)) {
        const lag = randomInt(random, 0, Math.max(1_000, faults.maxDelayMs));
        jobs.push({ lifecycle, index, copy: 2, startMs: startMs + lag, reordered: reordered.has(index) });
      }
    });
  }
  return { jobs: jobs.sort((a, b) => a.startMs - b.startMs), dropped };
}

const increment = (counts: Record<string, number>, key: string): void => {
  counts[key] = (counts[key] ?? 0) + 1;
};

/**
 * Plays the payment service: sends every notification of the given lifecycles to `url`, signed,
 * each on its own retry schedule from its status change, with the injected faults, and reports
 * what was sent and how the receiver answered.
 */
export async function runSimulation(options: SimulationOptions): Promise<SimulationReport> {
  const { jobs, dropped } = planJobs(options.lifecycles, options.faults, options.random);
  const acquire = concurrencyLimit(options.concurrency ?? 8);
  // Each status change is announced once, in its order's sequence, at its time, or just before its
  // notification goes out when a timer of the same moment fires later: the API knows a status
  // before any notification about it can arrive.
  const announced = new Map<Lifecycle, number>();
  const announceThrough = (lifecycle: Lifecycle, index: number): void => {
    if (!options.onStatusChange) return;
    for (let i = (announced.get(lifecycle) ?? -1) + 1; i <= index; i++) {
      options.onStatusChange(lifecycle.notifications[i] as SimulatedNotification);
      announced.set(lifecycle, i);
    }
  };
  const statusChanges = options.onStatusChange
    ? options.lifecycles.flatMap((lifecycle) =>
        lifecycle.notifications.map(async (n, index) => {
          await options.clock.sleepUntil(n.changedAtMs);
          announceThrough(lifecycle, index);
        }),
      )
    : [];
  const deliveryRuns = Promise.all(
    jobs.map(async (job): Promise<NotificationDelivery> => {
      const n = job.lifecycle.notifications[job.index] as Lifecycle['notifications'][number];
      const headers = notificationHeaders(n.body, {
        secondKey: options.secondKey,
        algorithm: options.algorithm,
        signatureHeaders: options.signatureHeaders,
        basicAuth: options.basicAuth ?? null,
        processingTimeMs: options.processingTime ? n.processingTimeMs : null,
      });
      if (options.onStatusChange) {
        await options.clock.sleepUntil(job.startMs);
        // A reordered notification may go out before its status changed: the API does not know it yet.
        if (options.clock.now() >= n.changedAtMs) announceThrough(job.lifecycle, job.index);
      }
      const result = await deliverWithRetries(
        { url: options.url, body: n.body, headers, changedAtMs: job.startMs },
        {
          clock: options.clock,
          acquire,
          ...(options.onAttempt
            ? { onAttempt: (a: AttemptReport, next: number | null) => options.onAttempt?.(n, a, next) }
            : {}),
          ...(options.send ? { send: options.send } : {}),
          ...(options.maxAttempts !== undefined ? { maxAttempts: options.maxAttempts } : {}),
          ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
        },
      );
      const last = result.attempts[result.attempts.length - 1];
      const delivery: NotificationDelivery = {
        kind: n.kind,
        orderId: n.orderId,
        refundId: n.refundId,
        status: n.status,
        copy: job.copy,
        changedAtMs: n.changedAtMs,
        firstAttemptAtMs: job.startMs,
        reordered: job.reordered,
        bodyBytes: n.body.length,
        bodySha256: createHash('sha256').update(n.body).digest('hex'),
        attempts: result.attempts,
        delivered: result.delivered,
        finalStatus: last?.status ?? null,
        finalAnswer: last?.answer ?? null,
      };
      options.onDelivery?.(delivery);
      return delivery;
    }),
  );
  const [deliveries] = await Promise.all([deliveryRuns, Promise.all(statusChanges)]);

  const summary: SimulationSummary = {
    orders: options.lifecycles.length,
    notifications: options.lifecycles.reduce((sum, l) => sum + l.notifications.length, 0),
    dropped: dropped.length,
    deliveries: deliveries.length,
    delivered: deliveries.filter((d) => d.delivered).length,
    gaveUp: deliveries.filter((d) => !d.delivered).length,
    attempts: deliveries.reduce((sum, d) => sum + d.attempts.length, 0),
    outcomes: {},
    httpStatuses: {},
  };
  for (const d of deliveries) {
    if (d.delivered) increment(summary.outcomes, d.finalAnswer ?? 'unknown');
    for (const a of d.attempts) increment(summary.httpStatuses, a.status === null ? 'none' : String(a.status));
  }
  return {
    orders: options.lifecycles.map((l) => ({
      orderId: l.orderId,
      payMethod: l.plan.payMethod,
      autoReceive: l.plan.autoReceive,
      expectedStatus: l.expected.order,
      refunds: l.expected.refunds,
    })),
    deliveries,
    dropped: dropped.map((n) => ({ kind: n.kind, orderId: n.orderId, refundId: n.refundId, status: n.status })),
    summary,
  };
}
