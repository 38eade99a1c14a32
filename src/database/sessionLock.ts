import { sql } from 'kysely';
import type pg from 'pg';
import { runOn, statement } from './transaction';

/**
 * Server-side keepalives for a lock's session: if its pod's node dies without closing the connection, the
 * server must notice the dead peer for another replica to take over, and by the kernel's defaults that takes
 * over two hours; these make it about a minute. For the connection's `options`.
 */
export const LOCK_SESSION_KEEPALIVES =
  '-c tcp_keepalives_idle=30 -c tcp_keepalives_interval=10 -c tcp_keepalives_count=3';

/**
 * A session advisory lock held on a connection of its own, so that one process across every replica does
 * a job (the outbox relay, the reconciler). A standby calls hold() again on its own schedule; the lock goes
 * with the session, so a holder that stops, dies or loses its connection lets a standby take over.
 */
export class SessionLock {
  private client: pg.Client | null = null;
  private held = false;

  /**
   * @param connect opens the lock's connection (with LOCK_SESSION_KEEPALIVES: a dead holder's session must
   *   end for a standby to take over), and calls lost() from its error handler.
   * @param onChange told when the lock is taken or given up (a log line, a gauge).
   */
  constructor(
    private readonly key: number,
    private readonly connect: () => Promise<pg.Client>,
    private readonly onChange: (held: boolean) => void,
  ) {}

  get isHeld(): boolean {
    return this.held;
  }

  /** The lock's connection, while open (the relay runs its batches on it). */
  get connection(): pg.Client | null {
    return this.client;
  }

  /** Connects if needed and tries to take the lock; answers whether this process holds it. */
  async hold(): Promise<boolean> {
    this.client ??= await this.connect();
    if (!this.held) {
      const [row] = await runOn(
        this.client,
        statement(sql<{ locked: boolean }>`SELECT pg_try_advisory_lock(${this.key}::bigint) AS locked`),
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

  /** The connection failed: the lock went with it. */
  lost(client: pg.Client): void {
    if (this.client === client) void this.release();
  }

  private setHeld(held: boolean): void {
    if (held !== this.held) this.onChange(held);
    this.held = held;
  }
}
