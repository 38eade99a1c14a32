import pg from 'pg';
import type { FailoverMetrics } from '../observability/failoverMetrics';
import type { Logger } from '../observability/logger';
import { beat, noteFirstIdentity, readIdentity, recordFailover, type BeatRow } from './failoverQueries';
import { noticeOf, rememberBeat, type WatchMemory } from './failoverNotice';

/**
 * Every replica's watch of the database it writes to (docs/decisions/0021). On a connection of its own it beats
 * once a second (WATCH_INTERVAL_MS): moves database_watch's counter forward and reads the server's identity beside
 * it. A new connection (at start, after any failure) reads again whether the identity can be read at all. When a
 * beat shows a failover (failoverNotice.ts), the watch:
 *
 * - logs it at error level, saying what the service does about it, and counts it (database_failovers_total);
 * - holds the intake's and reconciliation's writes at once (503 `recovering`), so nothing is recorded on the
 *   promoted database before what it lost is restored;
 * - writes the failover once for every replica (recordFailover) and wakes the recovery (failoverRecovery.ts).
 *
 * It also says, from each beat, whether a recovery holds writes (HOLD_MS at most from its notice) and in which
 * phase it is (the gauge), and since when its beats fail: a database that takes no write.
 */

/** How often a replica beats; a recovery's hold is looked at more often. */
export const WATCH_INTERVAL_MS = 1000;
const HOLDING_INTERVAL_MS = 250;
/** The longest the writes are held for a restoration, from its notice: past it they go on, restored or not. */
export const HOLD_MS = 30_000;

export interface DatabaseWatchOptions {
  databaseUrl: string;
  /** This replica's name, for the failover's record (its host name: the pod's). */
  replica: string;
  /** The longest a beat may take; a slower one counts as failed. */
  timeoutMs: number;
  metrics: FailoverMetrics;
  logger: Logger;
  /** Told of each failover this replica noticed, once it is written (the recovery is woken). */
  onFailover: (failoverId: string) => void;
  intervalMs?: number;
}

export class DatabaseWatch {
  private client: pg.Client | null = null;
  private identityReadable = true;
  private memory: WatchMemory | null = null;
  private timer: NodeJS.Timeout | null = null;
  private ticking: Promise<void> | null = null;
  private stopped = true;
  /** Until when the writes are held (Date.now()); 0: not held. */
  private holdUntil = 0;
  private failingSince: Date | null = null;
  private phase: BeatRow['recovery'] = null;
  private identityWarned = false;
  /** A failover noticed and not written yet. */
  private noticing = false;

  constructor(private readonly options: DatabaseWatchOptions) {}

  /** Whether the intake holds its writes now: a failover is being restored. */
  get holding(): boolean {
    return this.holdUntil > Date.now();
  }

  /** Since when this replica's beats fail (the database takes no write), or null. */
  get writesFailingSince(): Date | null {
    return this.failingSince;
  }

  /** The recovery under way, as the last beat saw it. */
  get recovery(): BeatRow['recovery'] {
    return this.phase;
  }

  /** Beats now, then every interval. */
  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.schedule(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.ticking;
    await this.disconnect();
  }

  /** One beat now (the tests' clock); what start() runs every interval. */
  async tick(): Promise<void> {
    this.ticking ??= this.beatOnce().finally(() => (this.ticking = null));
    return this.ticking;
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      void this.tick().finally(() =>
        this.schedule(this.holding ? HOLDING_INTERVAL_MS : (this.options.intervalMs ?? WATCH_INTERVAL_MS)),
      );
    }, ms);
  }

  private async beatOnce(): Promise<void> {
    const { metrics, logger, timeoutMs } = this.options;
    try {
      const client = await this.connection();
      const row = await beat(client, this.identityReadable, HOLD_MS);
      if (row.identity && !row.stored) await noteFirstIdentity(client, row.identity);
      const notice = noticeOf(this.memory, row);
      this.failingSince = null;
      metrics.lastBeat.set(Date.now() / 1000);
      this.observeRecovery(row.recovery);
      if (notice) {
        this.holdUntil = Math.max(this.holdUntil, Date.now() + HOLD_MS);
        // Said once, however many beats it takes to write it down.
        if (!this.noticing) {
          metrics.noticed.inc({ cause: notice.cause });
          logger.error(
            {
              cause: notice.cause,
              previous: notice.previous,
              current: notice.current,
              lastPoint: notice.lastPoint.toISOString(),
            },
            'the database failed over (it no longer holds what it acknowledged after ' +
              `${notice.lastPoint.toISOString()}): writes are held while the journal restores what it lost, then ` +
              'the orders of the window before it are reconciled against the payment API',
          );
        }
        this.noticing = true;
        const { id, written } = await recordFailover(client, notice, this.options.replica);
        this.noticing = false;
        logger.info({ failoverId: id, written }, written ? 'failover recorded' : 'failover already recorded');
        this.options.onFailover(id);
      }
      // Only once the failover is written: a beat that could not write it notices it again.
      this.memory = rememberBeat(this.memory, row, notice !== null);
    } catch (error) {
      this.failingSince ??= new Date();
      logger.warn(
        { err: { message: error instanceof Error ? error.message : String(error) }, timeoutMs },
        'database watch: the beat failed',
      );
      await this.disconnect();
    }
  }

  /** The recovery the beat saw: its phase's gauge, and the hold (a beat's worth of it, renewed at each). */
  private observeRecovery(recovery: BeatRow['recovery']): void {
    this.phase = recovery;
    for (const phase of ['restoring', 'reconciling'] as const)
      this.options.metrics.recovery.set({ phase }, recovery?.state === phase ? 1 : 0);
    if (recovery?.holding) this.holdUntil = Math.max(this.holdUntil, Date.now() + 2 * WATCH_INTERVAL_MS);
    else if (recovery && recovery.state !== 'restoring') this.holdUntil = 0;
  }

  /** The watch's connection; a new one reads again whether the identity may be read. */
  private async connection(): Promise<pg.Client> {
    if (this.client) return this.client;
    const { databaseUrl, timeoutMs, logger } = this.options;
    const client = new pg.Client({
      connectionString: databaseUrl,
      connectionTimeoutMillis: timeoutMs,
      statement_timeout: timeoutMs,
      query_timeout: timeoutMs + 500,
      application_name: 'payment-notification-receiver:watch',
    });
    client.on('error', () => undefined);
    await client.connect();
    try {
      this.identityReadable = (await readIdentity(client)) !== null;
    } catch (error) {
      await client.end().catch(() => undefined);
      throw error;
    }
    if (!this.identityReadable && !this.identityWarned) {
      this.identityWarned = true;
      logger.warn(
        'the database role may not read pg_control_system() and pg_walfile_name(): a failover is noticed only when ' +
          'the database lost a beat (docs/DEPLOYMENT.md, "Failover")',
      );
    }
    this.client = client;
    return client;
  }

  private async disconnect(): Promise<void> {
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => undefined);
  }
}
