import { ADVISORY_LOCKS } from '../database/advisoryLocks';
import type { Db } from '../database/pool';
import { SingleActiveJob, type NextStep } from '../jobs/singleActiveWorker';
import { Retries } from '../domain/backoff';
import type { Clock } from '../domain/clock';
import type { Logger } from '../observability/logger';
import type { CheckResult, ReconciliationMetrics } from '../observability/reconciliationMetrics';
import { checkOrder, uncheckedOrder, type CheckDependencies, type OrderCheck } from './checkOrder';
import { afterCheck, unavailableBackoff, type SchedulePolicy } from './schedule';
import {
  answerForcedChecks,
  countOpenOrders,
  dueOrders,
  forgetExpectedOrders,
  forgetForcedChecks,
  forgetGivenUp,
  forgetIfClosed,
  forgetOrder,
  giveUpForcedChecks,
  pruneClosed,
  pruneHeardOf,
  recordCheck,
  takeInObservations,
  type ScheduledOrder,
} from './scheduleQueries';

/** Rows dropped (or given up) per statement, and statements per housekeeping at most (the rest go at the next). */
const FORGET_BATCH = 1000;
const FORGET_BATCHES = 10;
/** Rows looked at per housekeeping for orders a notification closed since (a cursor goes round the table). */
const PRUNE_BATCH = 10_000;

/** Runs a bounded statement until it does less than a full batch, FORGET_BATCHES times at most. */
async function inBatches(step: () => Promise<number>): Promise<void> {
  for (let batch = 0; batch < FORGET_BATCHES; batch++) if ((await step()) < FORGET_BATCH) return;
}

/** Only one reconciler checks at a time, across every replica (a session advisory lock, as the relay's). */
export const RECONCILER_LOCK = ADVISORY_LOCKS.reconciler;

export interface ReconcilerOptions {
  databaseUrl: string;
  /** The reconciler's own small pool: its reads never take a connection the intake needs. */
  db: Db;
  /** The API client and the recorder (on the same own pool) the checks use. */
  check: CheckDependencies;
  policy: SchedulePolicy;
  /** RECONCILE_INTERVAL: how often the sweep looks for due orders, and a standby for the lock. */
  intervalMs: number;
  metrics: ReconciliationMetrics;
  logger: Logger;
  /** Orders checked per round at most; a full round goes again at once (the API's limiter sets the pace). */
  batchSize?: number;
  /** The sweep's time and its waits (RECONCILE_INTERVAL, the back-off): the system's unless a test drives it. */
  clock?: Clock;
}

/** What one round did. */
export interface SweepRound {
  checked: number;
  repaired: number;
  givenUp: number;
  /** The API was unavailable (the round stopped early): the sweep backs off. */
  unavailable: boolean;
  retryAfterMs: number | null;
}

/**
 * Checks open orders against the payment API on their schedule (schedule.ts), and once each order whose check
 * was forced (forceChecks: a failover's window, a list), whatever its state here. One reconciler is active
 * across all replicas: it holds a session advisory lock on a connection of its own, and standbys try to take
 * it every interval. It waits RECONCILE_INTERVAL between rounds (never a busy loop), backs off while the API
 * is unavailable, and stops between two checks.
 */
export class Reconciler extends SingleActiveJob {
  private readonly batchSize: number;
  /** Rounds the API was unavailable in, in a row, and the pause after each. */
  private readonly unavailableRounds: Retries;
  /** When the gauges were counted and old given-up rows dropped (housekeeping); 0: not yet. */
  private housekeptAt = 0;
  /** Where the next housekeeping goes on looking for rows of closed orders, and for expected orders heard of. */
  private pruneCursor = '';
  private expectedCursor = '';

  constructor(private readonly options: ReconcilerOptions) {
    super({
      lock: { key: RECONCILER_LOCK, databaseUrl: options.databaseUrl, job: 'reconciler' },
      logger: options.logger,
      lines: {
        active: 'reconciler is active',
        standby: 'reconciler is standing by',
        failed: 'reconciler lost its database connection',
      },
      activeGauge: options.metrics.reconcilerActive,
      standbyMs: options.intervalMs,
      backoff: { firstMs: 250, maxMs: 30_000, jitter: 'none', atLeastMs: options.intervalMs },
      clock: options.clock,
    });
    this.batchSize = options.batchSize ?? 50;
    this.unavailableRounds = new Retries(unavailableBackoff(options.intervalMs));
  }

  private now(): Date {
    return new Date(this.clock.now());
  }

  /** Only the active reconciler reports the open orders: a former one must not keep its last figures. */
  protected override onActiveChange(active: boolean): void {
    if (active) return;
    this.options.metrics.stuckOrders.set(0);
    this.options.metrics.givenUpOrders.set(0);
  }

  /**
   * One sweep while active; then RECONCILE_INTERVAL, at once after a full batch, or, while the API is unavailable,
   * a back-off from twice the interval doubling to 5 minutes, and at least what it asked (Retry-After).
   */
  protected async step(): Promise<NextStep> {
    const { logger, intervalMs } = this.options;
    const round = await this.sweep();
    if (round.unavailable) {
      const waitMs = this.unavailableRounds.next(round.retryAfterMs ?? 0);
      logger.warn({ retryInMs: waitMs }, 'payment API unavailable; reconciliation backs off');
      return { waitMs, wakeable: false };
    }
    this.unavailableRounds.reset();
    return { waitMs: round.checked >= this.batchSize ? 0 : intervalMs, wakeable: false };
  }

  /**
   * One round: the due orders, soonest first, each checked and rescheduled; then the housekeeping. A forced check
   * is made whatever the order's state here, its result written for its cause (forcedCheckProgress), and the row
   * kept only while the order is still open; one the API could not answer (unavailable) stays due.
   */
  async sweep(): Promise<SweepRound> {
    const { db, policy } = this.options;
    const round: SweepRound = { checked: 0, repaired: 0, givenUp: 0, unavailable: false, retryAfterMs: null };
    await takeInObservations(db, this.now(), policy.afterMs);
    const due = await dueOrders(db, this.now(), this.batchSize);
    // A POS whose credentials were refused (or are missing) this round is not asked again in it: its other
    // orders count the same result and keep their schedule, and the token endpoint is not hammered.
    const refusedPos = new Map<string, CheckResult>();
    for (const order of due) {
      if (this.isStopping) break;
      const { posId } = order;
      if (posId === null || !(order.open || order.forced)) {
        // Closed by a notification since (nothing left to learn), or bound to no POS (none may ask about it).
        if (order.forced) await answerForcedChecks(db, order.orderId, order.observation, 'no_pos', this.now());
        await forgetOrder(db, order.orderId, order.observation);
        continue;
      }
      const refused = refusedPos.get(posId);
      const check = refused
        ? this.notAsked(order.orderId, posId, refused)
        : await checkOrder(this.options.check, order.orderId, posId);
      if (check.result === 'unauthorized' || check.result === 'no_credentials') refusedPos.set(posId, check.result);
      round.checked += 1;
      if (check.result === 'repaired') round.repaired += 1;
      // A forced check is settled by an answer, or by a refusal that asking again would not change; one the API
      // did not answer stays due: the round backs off, and the next one asks again.
      const settled = check.result !== 'unavailable' && check.result !== 'cancelled';
      if (order.forced && settled)
        await answerForcedChecks(db, order.orderId, order.observation, check.result, this.now());
      if (settled || !order.forced) {
        // What it learned may have closed the order (or a forced one was final here): its row goes now.
        const closed =
          (check.applied.length > 0 || order.forced) && (await forgetIfClosed(db, order.orderId, order.observation));
        if (!closed && (await this.reschedule(order, posId, check))) round.givenUp += 1;
      }
      if (check.result === 'unavailable') {
        // The API (not this order) is failing: stop the round and back off.
        round.unavailable = true;
        round.retryAfterMs = check.retryAfterMs;
        break;
      }
    }
    await this.housekeep();
    return round;
  }

  /**
   * At most once a minute (or every fourth interval, when shorter): drops rows given up RECONCILE_GIVE_UP ago or
   * more, and rows of orders a notification has closed since (PRUNE_BATCH rows looked at each time, round the
   * table), and counts the rest for the gauges. Forced checks: gives up those pending RECONCILE_GIVE_UP, drops those
   * answered as long ago. Expected orders: drops those heard of since (a cursor, as for closed rows) and those
   * created RECONCILE_GIVE_UP ago. Each a bounded batch; what is left goes at the next.
   */
  private async housekeep(): Promise<void> {
    const { db, policy, metrics, intervalMs } = this.options;
    const now = this.now();
    if (this.housekeptAt !== 0 && now.getTime() - this.housekeptAt < Math.min(60_000, 4 * intervalMs)) return;
    this.housekeptAt = now.getTime();
    const longAgo = new Date(now.getTime() - policy.giveUpMs);
    await inBatches(() => forgetGivenUp(db, longAgo, FORGET_BATCH));
    await inBatches(() => giveUpForcedChecks(db, longAgo, now, FORGET_BATCH));
    await inBatches(() => forgetForcedChecks(db, longAgo, FORGET_BATCH));
    await inBatches(() => forgetExpectedOrders(db, longAgo, FORGET_BATCH));
    this.pruneCursor = (await pruneClosed(db, this.pruneCursor, PRUNE_BATCH)).next;
    this.expectedCursor = (await pruneHeardOf(db, this.expectedCursor, PRUNE_BATCH)).next;
    const counts = await countOpenOrders(db);
    metrics.stuckOrders.set(counts.stuck);
    metrics.givenUpOrders.set(counts.givenUp);
  }

  /** A check skipped because its POS was refused earlier in the round: counted with that result. */
  private notAsked(orderId: string, posId: string, result: CheckResult): OrderCheck {
    this.options.metrics.checks.inc({ result });
    return uncheckedOrder(orderId, posId, result);
  }

  /**
   * Writes the order's next check, or gives it up; answers whether it was given up now. Nothing is written
   * when a newer observation came during the check (its repair, or a notification): its schedule stands.
   */
  private async reschedule(order: ScheduledOrder, posId: string, check: OrderCheck): Promise<boolean> {
    const checkedAt = this.now();
    const checks = order.checks + 1;
    const next = afterCheck(order.observedAt, checks, checkedAt, this.options.policy, check.retryAfterMs);
    const written = await recordCheck(this.options.db, {
      orderId: order.orderId,
      observation: order.observation,
      checks,
      checkedAt,
      nextCheckAt: next.givenUp ? null : next.nextCheckAt,
      result: check.result,
      givenUp: next.givenUp,
    });
    if (!written || !next.givenUp) return false;
    this.options.metrics.givenUp.inc();
    this.options.logger.warn(
      { orderId: order.orderId, posId, checks, result: check.result },
      'order still not final after RECONCILE_GIVE_UP; reconciliation gave it up',
    );
    return true;
  }
}
