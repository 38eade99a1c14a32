import type pg from 'pg';
import { Retries, type BackoffPolicy } from '../domain/backoff';
import { systemClock, type Clock } from '../domain/clock';
import type { Logger } from '../observability/logger';
import { SessionLock, type SessionLockOptions } from '../database/sessionLock';

/** What a job's step asks of the loop: how long to wait before the next step, and whether wake() may end it early. */
export interface NextStep {
  /** 0 goes on at once. */
  waitMs: number;
  /** A poll may be cut short by a hint that there is work; a back-off may not. */
  wakeable: boolean;
}

/** The lock the worker holds (SessionLock; a test's own). */
export interface ActiveLock {
  readonly isHeld: boolean;
  readonly connection: pg.Client | null;
  hold(): Promise<boolean>;
  release(): Promise<void>;
}

export interface SingleActiveWorkerOptions {
  /** The session lock: its key, database, job name and connection settings (SessionLockOptions). */
  lock: Omit<SessionLockOptions, 'logger' | 'onChange'>;
  logger: Logger;
  /** The log lines: when this process becomes active, when it stands by, when a step or the lock failed. */
  lines: { active: string; standby: string; failed: string };
  /** Set to 1 while this process holds the lock, 0 otherwise. */
  activeGauge: { set(value: number): void };
  /** Told after the log line when this process becomes active or stands by (the job's own state). */
  onActiveChange?: (active: boolean) => void;
  /** How long a standby waits before it tries the lock again. */
  standbyMs: number;
  /**
   * The wait after a failure, by the one back-off policy (src/domain/backoff.ts) and never under atLeastMs; a step
   * that succeeds starts it over.
   */
  backoff: BackoffPolicy & { atLeastMs?: number };
  /** The job's own work, on the lock's connection, while this process holds the lock. */
  step: (connection: pg.Client) => Promise<NextStep>;
  /** Told of a failed step (a metric), after the log line. */
  onFailure?: (error: Error) => void;
  /** Run once the loop has ended, before the lock is released (the relay closes its broker connection). */
  onStop?: () => Promise<void>;
  /** The lock to hold; by default a SessionLock with the settings above. */
  createLock?: (options: SessionLockOptions) => ActiveLock;
  /** What the waits between steps are timed by (and the job reads the time from): the system's unless a test's. */
  clock?: Clock;
}

/**
 * A job that one process runs at a time across every replica (the outbox relay, the reconciler, the history
 * maintainer): the loop that holds a session advisory lock (SessionLock) and runs the job's step while it does,
 * waits as the step asks, polls for the lock as a standby, and backs off after a failure, starting over on a new
 * connection (the lock went with the old one). It logs becoming active, standing by and each failure, and keeps
 * the job's "active" gauge. stop() ends any wait at once, lets the step under way finish and releases the lock.
 * After graphile-worker's Worker: one loop with its lock, nudge and release; the jobs are only their step.
 */
export class SingleActiveWorker {
  private readonly lock: ActiveLock;
  private stopping = false;
  private loop: Promise<void> | null = null;
  private wakePending = false;
  private endWait: ((byWake: boolean) => void) | null = null;
  private readonly failures: Retries;

  constructor(private readonly options: SingleActiveWorkerOptions) {
    const { logger, lines, activeGauge, onActiveChange } = options;
    this.failures = new Retries(options.backoff);
    this.lock = (options.createLock ?? ((o) => new SessionLock(o)))({
      ...options.lock,
      logger,
      onChange: (held) => {
        logger.info({ active: held }, held ? lines.active : lines.standby);
        activeGauge.set(held ? 1 : 0);
        onActiveChange?.(held);
      },
    });
  }

  /** Whether this process holds the lock now. */
  get isActive(): boolean {
    return this.lock.isHeld;
  }

  /** Whether stop() was called: a long step checks it between its items. */
  get isStopping(): boolean {
    return this.stopping;
  }

  start(): void {
    if (this.loop) return;
    this.stopping = false;
    this.loop = this.run();
  }

  /** A hint that there is work: ends a wakeable wait now, or the next one at once if a step is under way. */
  wake(): void {
    this.wakePending = true;
    this.endWait?.(true);
  }

  /** Ends any wait, lets the step under way finish, runs onStop and releases the lock (closing its connection). */
  async stop(): Promise<void> {
    this.stopping = true;
    this.endWait?.(false);
    await this.loop;
    this.loop = null;
  }

  private async run(): Promise<void> {
    const { logger, lines, backoff, standbyMs } = this.options;
    while (!this.stopping) {
      let next: NextStep;
      try {
        if (await this.lock.hold()) {
          this.wakePending = false;
          next = await this.options.step(this.heldConnection());
          this.failures.reset();
        } else {
          next = { waitMs: standbyMs, wakeable: false }; // a standby only polls for the lock
        }
      } catch (thrown) {
        const error = thrown instanceof Error ? thrown : new Error(String(thrown));
        logger.warn({ err: { message: error.message } }, lines.failed);
        this.options.onFailure?.(error);
        // The connection may be gone with the lock: start over on a new one.
        await this.lock.release();
        next = { waitMs: this.failures.next(backoff.atLeastMs), wakeable: false };
      }
      if (next.waitMs > 0) await this.wait(next);
    }
    await this.options.onStop?.();
    await this.lock.release();
  }

  private heldConnection(): pg.Client {
    const connection = this.lock.connection;
    if (!connection) throw new Error(`${this.options.lock.job} lock held without a connection`);
    return connection;
  }

  /** Waits as the step asked; wake() ends it only when wakeable (and a wake during the step ends it at once). */
  private wait({ waitMs, wakeable }: NextStep): Promise<void> {
    if (this.stopping || (wakeable && this.wakePending)) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        cancel();
        this.endWait = null;
        resolve();
      };
      const cancel = (this.options.clock ?? systemClock).after(waitMs, done);
      this.endWait = (byWake) => {
        if (!byWake || wakeable) done();
      };
    });
  }
}

/** What a single-active job sets of its worker; the rest (its step and what it is told) are the job's methods. */
export type SingleActiveJobSettings = Omit<
  SingleActiveWorkerOptions,
  'step' | 'onStop' | 'onActiveChange' | 'onFailure' | 'lock'
> & { lock: Omit<SingleActiveWorkerOptions['lock'], 'onConnect'> };

/**
 * The one start/stop shape of the jobs one process runs at a time across every replica (the outbox relay, the
 * reconciler, the partition maintainer): each extends this with its step and what it must be told, and is started,
 * hinted and stopped the same way, through its SingleActiveWorker.
 */
export abstract class SingleActiveJob {
  private readonly worker: SingleActiveWorker;
  /** The job's time (its schedule, its rounds), on the clock its waits are timed by. */
  protected readonly clock: Clock;

  protected constructor(settings: SingleActiveJobSettings) {
    this.clock = settings.clock ?? systemClock;
    this.worker = new SingleActiveWorker({
      ...settings,
      clock: this.clock,
      lock: { ...settings.lock, onConnect: (client) => this.onConnect(client) },
      step: (connection) => this.step(connection),
      onStop: () => this.onStop(),
      onActiveChange: (active) => this.onActiveChange(active),
      onFailure: (error) => this.onFailure(error),
    });
  }

  /** Whether this process holds the job's lock now. */
  get isActive(): boolean {
    return this.worker.isActive;
  }

  start(): void {
    this.worker.start();
  }

  /** A hint that there is work: ends a wakeable wait now. */
  wake(): void {
    this.worker.wake();
  }

  /** Ends any wait, lets the step under way finish, releases the lock and closes its connection. */
  async stop(): Promise<void> {
    await this.worker.stop();
  }

  /** Whether stop() was called: a long step checks it between its items. */
  protected get isStopping(): boolean {
    return this.worker.isStopping;
  }

  /** The job's work while this process holds the lock: one step, and how long to wait before the next. */
  protected abstract step(connection: pg.Client): Promise<NextStep>;

  /** Run on each new connection of the lock's, before the lock is tried (the relay LISTENs on it). */
  protected onConnect(_connection: pg.Client): Promise<void> {
    return Promise.resolve();
  }

  /** Run once the loop has ended, before the lock is released. */
  protected onStop(): Promise<void> {
    return Promise.resolve();
  }

  /** Told, after the log line, when this process becomes active or stands by. */
  protected onActiveChange(_active: boolean): void {}

  /** Told of a failed step (a metric), after the log line. */
  protected onFailure(_error: Error): void {}
}
