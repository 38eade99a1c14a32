import pg from 'pg';
import { Pause, SessionLock } from '../database/sessionLock';
import type { Logger } from '../observability/logger';
import type { HistoryMetrics } from '../observability/metrics';
import { deleteAuditPast } from './audit';
import { daysAhead, dayOf } from './days';
import {
  historyPartitions,
  makeDays,
  purgeBodiesPast,
  removeDaysPast,
  sessionOn,
  withWorkLock,
  type HistorySession,
} from './maintenance';

/** Only one maintainer runs rounds on schedule, across every replica (as the relay and the reconciler). */
export const HISTORY_MAINTAINER_LOCK = 7_316_004;

/** What the maintainer reads of the configuration. */
export interface HistorySettings {
  /** HISTORY_RETENTION: days wholly older are removed; null keeps history for ever. */
  historyRetentionMs: number | null;
  /** BODY_RETENTION: raw bodies of days wholly older are purged; null keeps them. */
  bodyRetentionMs: number | null;
  /** AUDIT_RETENTION: console audit rows older are deleted; null (or absent) keeps them. */
  auditRetentionMs?: number | null;
}

export interface HistoryMaintainerOptions extends HistorySettings {
  databaseUrl: string;
  metrics: HistoryMetrics;
  logger: Logger;
  /** Between rounds (default an hour), and how often a standby tries to take over (a minute at most). */
  intervalMs?: number;
  now?: () => number;
}

/** What one round did. */
export interface MaintenanceRound {
  daysMade: number;
  daysRemoved: number;
  bodiesPurged: number;
}

/**
 * Keeps history by the day (src/history/days.ts), on its own connection: makes the days ahead (writes never
 * find their day missing), purges the raw bodies of days past BODY_RETENTION, and removes days past
 * HISTORY_RETENTION. It runs a round when it becomes active and then every interval; a failed round is tried
 * again in a minute. One is active across all replicas (a session advisory lock); `notification-receiver
 * purge` does the same work on demand, one at a time with it (HISTORY_WORK_LOCK).
 */
export class HistoryMaintainer {
  private readonly intervalMs: number;
  private readonly now: () => number;
  private readonly lock: SessionLock;
  private stopping = false;
  private loop: Promise<void> | null = null;
  private readonly pause = new Pause();
  private nextRoundAt = 0;

  constructor(private readonly options: HistoryMaintainerOptions) {
    this.intervalMs = options.intervalMs ?? 3_600_000;
    this.now = options.now ?? Date.now;
    this.lock = new SessionLock({
      key: HISTORY_MAINTAINER_LOCK,
      databaseUrl: options.databaseUrl,
      job: 'history',
      logger: options.logger,
      onChange: (held) => {
        options.logger.info(
          { active: held },
          held ? 'history maintainer is active' : 'history maintainer is standing by',
        );
        options.metrics.maintainerActive.set(held ? 1 : 0);
        // A new holder runs a round at once.
        if (held) this.nextRoundAt = 0;
      },
    });
  }

  get isActive(): boolean {
    return this.lock.isHeld;
  }

  start(): void {
    if (this.loop) return;
    this.stopping = false;
    this.pause.resume();
    this.loop = this.run();
  }

  /** Finishes the round under way, releases the lock and closes its connection. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.pause.stop();
    await this.loop;
    this.loop = null;
  }

  private async run(): Promise<void> {
    const standbyMs = Math.min(this.intervalMs, 60_000);
    while (!this.stopping) {
      let delay = standbyMs;
      try {
        if ((await this.lock.hold()) && this.now() >= this.nextRoundAt) {
          await this.round(sessionOn(this.lock.connection as pg.Client));
          this.nextRoundAt = this.now() + this.intervalMs;
          delay = this.intervalMs;
        } else if (this.lock.isHeld) {
          delay = Math.max(0, this.nextRoundAt - this.now());
        }
      } catch (error) {
        this.options.metrics.rounds.inc({ result: 'failed' });
        this.options.logger.warn(
          { err: { message: (error as Error).message } },
          'history maintenance failed; trying again in a minute',
        );
        // The connection may be gone with the lock: start over on a new one.
        await this.lock.release();
        this.nextRoundAt = 0;
        delay = standbyMs;
      }
      if (delay > 0) await this.pause.wait(delay);
    }
    await this.lock.release();
  }

  /** One round: the days ahead, then the days and the bodies past their retentions; then the gauges. */
  async round(session: HistorySession): Promise<MaintenanceRound> {
    const { metrics, logger, historyRetentionMs, bodyRetentionMs, auditRetentionMs } = this.options;
    const started = performance.now();
    const done = await withWorkLock(session, async () => {
      const now = this.now();
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
    metrics.daysAhead.set(daysAhead(done.days, done.now));
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
