import type pg from 'pg';
import { ADVISORY_LOCKS } from '../database/advisoryLocks';
import { SingleActiveJob, type NextStep } from '../jobs/singleActiveWorker';
import type { Clock } from '../domain/clock';
import type { Logger } from '../observability/logger';
import type { HistoryMetrics } from '../observability/metrics';
import { deleteAuditPast } from '../audit/auditQueries';
import { dayOf } from './partitionDays';
import {
  findMissingDays,
  historyPartitions,
  makeDays,
  makeDaysOn,
  purgeBodiesPast,
  removeDaysPast,
  withWorkLock,
} from './partitionMaintenance';
import { sessionOn, type ConnectionSession } from '../database/transaction';

/** Only one maintainer runs rounds on schedule, across every replica (as the relay and the reconciler). */
export const HISTORY_MAINTAINER_LOCK = ADVISORY_LOCKS.historyMaintainer;

/** Least time between two starts of making the days a write found missing (one failed write is enough). */
const MISSING_DAY_GAP_MS = 5000;

/**
 * How often the active maintainer looks for days without a partition between its rounds (one catalog read): a day
 * removed by hand is made again this soon with no write failing on it first (issue 45).
 */
export const MISSING_DAY_CHECK_MS = 10_000;

/** What the maintainer reads of the configuration. */
export interface HistorySettings {
  /** HISTORY_RETENTION: days wholly older are removed; null keeps history for ever. */
  historyRetentionMs: number | null;
  /** BODY_RETENTION: raw bodies of days wholly older are purged; null keeps them. */
  bodyRetentionMs: number | null;
  /** AUDIT_RETENTION: console audit rows older are deleted; null (or absent) keeps them. */
  auditRetentionMs?: number | null;
}

export interface PartitionMaintainerOptions extends HistorySettings {
  databaseUrl: string;
  metrics: HistoryMetrics;
  logger: Logger;
  /** Between rounds (default an hour), and how often a standby tries to take over (a minute at most). */
  intervalMs?: number;
  /** The rounds' time and the waits between them: the system's unless a test drives it. */
  clock?: Clock;
}

/** What one round did. */
export interface MaintenanceRound {
  daysMade: number;
  daysRemoved: number;
  bodiesPurged: number;
}

/**
 * Keeps history by the day (src/partitions/partitionDays.ts), on its own connection: makes the days ahead (writes never
 * find their day missing), purges the raw bodies of days past BODY_RETENTION, and removes days past
 * HISTORY_RETENTION. It runs a round when it becomes active and then every interval; a failed round is tried
 * again in a minute. One is active across all replicas (a session advisory lock); `notification-receiver
 * purge` does the same work on demand, one at a time with it (HISTORY_WORK_LOCK).
 */
export class PartitionMaintainer extends SingleActiveJob {
  private readonly intervalMs: number;
  private nextRoundAt = 0;
  /** When the days a write found missing were last being made (0: never). */
  private missingDayAt = 0;
  private makingMissingDays: Promise<void> | null = null;

  constructor(private readonly options: PartitionMaintainerOptions) {
    const intervalMs = options.intervalMs ?? 3_600_000;
    const standbyMs = Math.min(intervalMs, 60_000);
    super({
      lock: { key: HISTORY_MAINTAINER_LOCK, databaseUrl: options.databaseUrl, job: 'history' },
      logger: options.logger,
      lines: {
        active: 'history maintainer is active',
        standby: 'history maintainer is standing by',
        failed: 'history maintenance failed; trying again in a minute',
      },
      activeGauge: options.metrics.maintainerActive,
      standbyMs,
      backoff: { firstMs: standbyMs, maxMs: standbyMs, jitter: 'none' },
      clock: options.clock,
    });
    this.intervalMs = intervalMs;
  }

  /** A new holder runs a round at once. */
  protected override onActiveChange(active: boolean): void {
    if (active) this.nextRoundAt = 0;
  }

  /** A failed round is counted and tried again after the back-off. */
  protected override onFailure(): void {
    this.options.metrics.rounds.inc({ result: 'failed' });
    this.nextRoundAt = 0;
  }

  /** Finishes the round under way and the missing days being made, releases the lock and closes its connection. */
  override async stop(): Promise<void> {
    await super.stop();
    await this.makingMissingDays;
  }

  /** A round when one is due (at once when this process became active), else the wait until it is. */
  protected async step(connection: pg.Client): Promise<NextStep> {
    const session = sessionOn(connection);
    if (this.clock.now() >= this.nextRoundAt) {
      await this.round(session);
      this.nextRoundAt = this.clock.now() + this.intervalMs;
    } else await this.makeMissingDays(session);
    const untilRound = Math.max(0, this.nextRoundAt - this.clock.now());
    return { waitMs: Math.min(untilRound, MISSING_DAY_CHECK_MS), wakeable: true };
  }

  /** Between rounds: the days without a partition (a day removed by hand, a restore), made at once. */
  private async makeMissingDays(session: ConnectionSession): Promise<void> {
    const missing = await findMissingDays(session, this.clock.now());
    if (missing.length === 0) return;
    const { logger } = this.options;
    logger.warn({ missingDays: missing }, 'days of history without a partition; making them now');
    const daysMade = await makeDays(session, this.clock.now());
    logger.warn({ daysMade }, 'missing days of history made');
  }

  /**
   * A write found its day without a partition: every notification is answered 503 until it exists. The days
   * are made at once, on a short connection of this process's own, whether or not it holds the maintainer
   * lock: the replica whose writes fail may be a standby, and the active one may be busy with a long purge.
   * Here, the active maintainer also runs a round at once. Writes failing meanwhile join the making under way;
   * after it, another starts MISSING_DAY_GAP_MS later at the soonest.
   */
  dayMissing(): void {
    const { metrics, logger, databaseUrl } = this.options;
    metrics.missingPartitionWrites.inc();
    if (this.makingMissingDays || this.clock.now() - this.missingDayAt < MISSING_DAY_GAP_MS) return;
    this.missingDayAt = this.clock.now();
    logger.warn('a write found its day of history without a partition; making the missing days now');
    if (this.isActive) {
      this.nextRoundAt = 0;
      this.wake();
    }
    this.makingMissingDays = makeDaysOn(databaseUrl, this.clock.now())
      .then(
        (daysMade) => logger.warn({ daysMade }, 'missing days of history made; writes go on'),
        (error: unknown) =>
          logger.warn(
            { err: { message: (error as Error).message } },
            'making the missing days of history failed; the next write that finds one missing tries again',
          ),
      )
      .finally(() => (this.makingMissingDays = null));
  }

  /** One round: the days ahead, then the days and the bodies past their retentions; then the gauges. */
  async round(session: ConnectionSession): Promise<MaintenanceRound> {
    const { metrics, logger, historyRetentionMs, bodyRetentionMs, auditRetentionMs } = this.options;
    const started = performance.now();
    const done = await withWorkLock(session, async () => {
      const now = this.clock.now();
      const daysMade = await makeDays(session, now);
      // Days about to go are not purged first.
      const removed = historyRetentionMs === null ? null : await removeDaysPast(session, historyRetentionMs, now);
      const bodies = bodyRetentionMs === null ? null : await purgeBodiesPast(session, bodyRetentionMs, now);
      const audit = auditRetentionMs == null ? null : await deleteAuditPast(session, auditRetentionMs, now);
      const partitions = await historyPartitions(session);
      const days = [...partitions.values()].flatMap((list) => list.map((p) => p.day));
      return { now, daysMade, bodies, removed, days, auditDeleted: audit?.deleted ?? 0 };
    });
    const bodiesPurged = Object.values(done.bodies?.bodies ?? {}).reduce((a, b) => a + b, 0);
    const daysRemoved = done.removed?.days.length ?? 0;
    metrics.rounds.inc({ result: 'ok' });
    metrics.roundDuration.observe((performance.now() - started) / 1000);
    metrics.lastSuccess.set(Math.floor(done.now / 1000));
    const oldest = done.days.sort()[0] ?? dayOf(done.now);
    metrics.oldestDay.set(Date.parse(`${oldest}T00:00:00Z`) / 1000);
    metrics.daysRemoved.inc(daysRemoved);
    metrics.bodiesPurged.inc(bodiesPurged);
    if (done.daysMade > 0 || daysRemoved > 0 || bodiesPurged > 0 || done.auditDeleted > 0)
      logger.info(
        {
          daysMade: done.daysMade,
          daysRemoved: done.removed?.days ?? [],
          rowsRemoved: done.removed?.rows,
          bodyDaysPurged: done.bodies?.days ?? [],
          bodiesPurged: done.bodies?.bodies,
          auditRowsDeleted: done.auditDeleted,
          seconds: (performance.now() - started) / 1000,
        },
        'history maintained',
      );
    return { daysMade: done.daysMade, daysRemoved, bodiesPurged };
  }
}
