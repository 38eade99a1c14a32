import { sql } from 'kysely';
import pg from 'pg';
import type { Logger } from '../observability/logger';
import { runOn, statement } from './transaction';

/**
 * Server-side keepalives for a lock's session: if its pod's node dies without closing the connection, the
 * server must notice the dead peer for another replica to take over, and by the kernel's defaults that takes
 * over two hours; these make it about a minute.
 */
const LOCK_SESSION_KEEPALIVES = '-c tcp_keepalives_idle=30 -c tcp_keepalives_interval=10 -c tcp_keepalives_count=3';

export interface SessionLockOptions {
  /** The advisory lock's key: each job its own (ADVISORY_LOCKS, src/database/advisoryLocks.ts). */
  key: number;
  databaseUrl: string;
  /** The job, for the connection's application_name and the log line when it is lost. */
  job: string;
  logger: Logger;
  /** Told when the lock is taken or given up (a log line, a gauge). */
  onChange: (held: boolean) => void;
  /** Session settings of the job's own, for the connection's `options` (`-c name=value ...`). */
  sessionOptions?: string;
  /** pg client settings of the job's own (pipeline mode, a statement timeout). */
  client?: Pick<pg.ClientConfig, 'pipeline' | 'statement_timeout'>;
  /** Run on each new connection before the lock is tried (the relay LISTENs on it). */
  onConnect?: (client: pg.Client) => Promise<void>;
}

/**
 * A session advisory lock held on a connection of its own, so that one process across every replica does
 * a job (the outbox relay, the reconciler, the partition maintainer). A standby calls hold() again on its own
 * schedule; the lock goes with the session, so a holder that stops, dies or loses its connection lets a
 * standby take over. The holder runs its work on the lock's connection, or on a pool of its own. The loop that
 * holds it is SingleActiveWorker's (singleActiveWorker.ts).
 */
export class SessionLock {
  private client: pg.Client | null = null;
  private held = false;

  constructor(private readonly options: SessionLockOptions) {}

  get isHeld(): boolean {
    return this.held;
  }

  /** The lock's connection, while open. */
  get connection(): pg.Client | null {
    return this.client;
  }

  /** Connects if needed and tries to take the lock; answers whether this process holds it. */
  async hold(): Promise<boolean> {
    this.client ??= await this.connect();
    if (!this.held) {
      const [row] = await runOn(
        this.client,
        statement(sql<{ locked: boolean }>`SELECT pg_try_advisory_lock(${this.options.key}::bigint) AS locked`),
      );
      this.setHeld(row?.locked === true);
    }
    return this.held;
  }

  /** Closes the connection, which releases the lock. */
  async release(): Promise<void> {
    const client = this.client;
    this.client = null;
    this.setHeld(false);
    await client?.end().catch(() => undefined);
  }

  private async connect(): Promise<pg.Client> {
    const { databaseUrl, job, logger, sessionOptions, onConnect } = this.options;
    const client = new pg.Client({
      ...this.options.client,
      connectionString: databaseUrl,
      keepAlive: true,
      application_name: `payment-notification-receiver:${job}`,
      connectionTimeoutMillis: 5000,
      // Keepalives: a dead holder's session must end for a standby to take over. No JIT (decision 0012).
      options: [sessionOptions, '-c jit=off', LOCK_SESSION_KEEPALIVES].filter(Boolean).join(' '),
    });
    client.on('error', (error) => {
      logger.warn({ err: { message: error.message } }, `${job} database connection lost`);
      // The lock went with the connection.
      if (this.client === client) void this.release();
    });
    await client.connect();
    try {
      await onConnect?.(client);
    } catch (error) {
      await client.end().catch(() => undefined);
      throw error;
    }
    return client;
  }

  private setHeld(held: boolean): void {
    if (held !== this.held) this.options.onChange(held);
    this.held = held;
  }
}
