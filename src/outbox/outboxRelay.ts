import type pg from 'pg';
import { ADVISORY_LOCKS } from '../database/advisoryLocks';
import { SingleActiveJob, type NextStep } from '../jobs/singleActiveWorker';
import { Retries, type BackoffPolicy } from '../domain/backoff';
import { inTransaction, runOn, type Statement } from '../database/transaction';
import type { Logger } from '../observability/logger';
import type { RelayMetrics } from '../observability/metrics';
import { BrokerChannel, type PublishResult } from './brokerChannel';
import { claimEvents, deletePublished, listenForEvents, markEvents, type ClaimedEvent } from './outboxQueries';

export interface RelayOptions {
  databaseUrl: string;
  amqpUrl: string;
  exchange: string;
  retentionMs: number;
  metrics: RelayMetrics;
  logger: Logger;
  batchSize?: number;
  /** Polling fallback when no NOTIFY arrives, and how often a standby tries to take over. */
  pollIntervalMs?: number;
  confirmTimeoutMs?: number;
  /** Longest wait between broker reconnect attempts. */
  maxBackoffMs?: number;
  /** Send BEGIN with the claim and the marks with COMMIT (pg's pipeline mode; default false, as createPool's). */
  pipelined?: boolean;
}

/** What the relay reads of the configuration. */
export interface RelaySettings {
  amqpUrl: string;
  amqpExchange: string;
  outboxRetentionMs: number;
  databasePipeline: boolean;
}

/** The one way to build the outbox relay: the service, `npm run relay` and the tests use it. */
export function createRelay(
  settings: RelaySettings,
  databaseUrl: string,
  metrics: RelayMetrics,
  logger: Logger,
): OutboxRelay {
  return new OutboxRelay({
    databaseUrl,
    amqpUrl: settings.amqpUrl,
    exchange: settings.amqpExchange,
    retentionMs: settings.outboxRetentionMs,
    pipelined: settings.databasePipeline,
    metrics,
    logger,
  });
}

/** Only one relay publishes at a time, across every replica: per-order order needs one writer. */
export const RELAY_LOCK = ADVISORY_LOCKS.relay;
const RETENTION_SWEEP_MS = 60_000;
/**
 * While events keep coming, a batch starts at most this often, so that a busy outbox is published in batches of
 * dozens rather than of the few committed while the last one waited for its confirms: the claim, the marks, their
 * transaction and the broker's confirms cost mostly per batch. A full batch (a backlog) goes again at once.
 */
export const RELAY_BATCH_EVERY_MS = 20;

/**
 * What the relay does after a batch that took `tookMs`. A batch takes one event per order, so an order's next
 * events wait for the next batch. Empty: poll, and a commit's hint ends the wait at once. Full (a backlog): go again
 * at once. Otherwise go again once RELAY_BATCH_EVERY_MS has passed since the batch began, a hint not cutting it
 * short: the events committed meanwhile make the next batch.
 */
export function afterBatch(published: number, batchSize: number, tookMs: number, pollIntervalMs: number): NextStep {
  if (published === 0) return { waitMs: pollIntervalMs, wakeable: true };
  if (published >= batchSize) return { waitMs: 0, wakeable: true };
  return { waitMs: Math.max(0, RELAY_BATCH_EVERY_MS - tookMs), wakeable: false };
}

/**
 * Publishes outbox rows to RabbitMQ and marks them published only after the broker confirmed them.
 *
 * - Claims rows by state (published_at IS NULL) with FOR UPDATE SKIP LOCKED, never by an id offset.
 * - Takes at most the first pending event of each order per batch, so a failed event holds back
 *   the later events of its own order (order kept) and nothing else. An event no queue takes (the
 *   broker returns it) is published all the same, and marked unrouted: it holds back nothing.
 * - Holds a session advisory lock on its own connection: standbys retry every poll interval and
 *   take over as soon as the active relay's session ends.
 * - At-least-once: killed between the broker confirm and the commit, an event is sent again with
 *   the same id.
 */
export class OutboxRelay extends SingleActiveJob {
  private readonly batchSize: number;
  private readonly pollIntervalMs: number;
  private readonly broker: BrokerChannel;
  /** Broker connection attempts that failed in a row, and the wait after each. */
  private readonly brokerRetries: Retries;
  private lastSweep = 0;

  constructor(private readonly options: RelayOptions) {
    const pollIntervalMs = options.pollIntervalMs ?? 1000;
    const backoff: BackoffPolicy = { firstMs: 250, maxMs: options.maxBackoffMs ?? 10_000, jitter: 'none' };
    super({
      lock: {
        key: RELAY_LOCK,
        databaseUrl: options.databaseUrl,
        job: 'relay',
        client: { pipeline: options.pipelined ?? false, statement_timeout: 30_000 },
        // Marking events published need not wait for the WAL flush: a mark lost in a database crash only means
        // the event is published again, with the same id (at-least-once, as documented). The claim must walk the
        // pending index in order (an index scan, not a bitmap scan): only an index scan marks the entries of
        // events published since as dead and skips them from then on; the planner cannot see those entries and
        // would pick a bitmap scan that re-reads all of them on every batch until the next VACUUM
        // (sql/003_outbox_pending_by_age.sql).
        sessionOptions: '-c synchronous_commit=off -c enable_bitmapscan=off',
      },
      logger: options.logger,
      lines: {
        active: 'outbox relay is active',
        standby: 'outbox relay is standing by',
        failed: 'outbox relay lost its database connection',
      },
      activeGauge: options.metrics.relayActive,
      standbyMs: pollIntervalMs,
      backoff,
    });
    this.batchSize = options.batchSize ?? 200;
    this.pollIntervalMs = pollIntervalMs;
    this.brokerRetries = new Retries(backoff);
    this.broker = new BrokerChannel(
      options.amqpUrl,
      options.exchange,
      options.confirmTimeoutMs ?? 10_000,
      options.metrics,
      options.logger,
    );
  }

  /** Each new session of the lock's listens for the hint a commit that wrote events sends. */
  protected override async onConnect(connection: pg.Client): Promise<void> {
    connection.on('notification', () => this.wake());
    await runOn(connection, listenForEvents());
  }

  protected override onStop(): Promise<void> {
    return this.broker.close();
  }

  /** One batch while active, then the wait afterBatch says. A commit's wake-up hint cuts a poll short, never a backoff. */
  protected async step(connection: pg.Client): Promise<NextStep> {
    const brokerWaitMs = await this.openBroker();
    if (brokerWaitMs !== null) return { waitMs: brokerWaitMs, wakeable: false };
    const started = performance.now();
    const published = await this.publishBatch(connection);
    await this.sweepPublished(connection);
    return afterBatch(published, this.batchSize, performance.now() - started, this.pollIntervalMs);
  }

  /**
   * Connects to the broker if needed: null once connected; on failure, how long to back off (250 ms doubling to
   * maxBackoffMs), the lock kept.
   */
  private async openBroker(): Promise<number | null> {
    if (this.broker.isOpen) return null;
    try {
      await this.broker.open();
      this.brokerRetries.reset();
      return null;
    } catch (error) {
      const retryInMs = this.brokerRetries.next();
      this.options.metrics.publishFailures.inc({ reason: 'connection' });
      this.options.logger.warn(
        { err: { message: (error as Error).message }, retryInMs },
        'broker unreachable; events wait in the outbox',
      );
      return retryInMs;
    }
  }

  /**
   * Claims, publishes and marks one batch inside one transaction on the lock-holding connection. On a
   * pipelined connection BEGIN leaves with the claim, and the marks with COMMIT.
   */
  private async publishBatch(connection: pg.Client): Promise<number> {
    return inTransaction(connection, async (trx) => {
      const rows = await trx.run(claimEvents(this.batchSize));
      if (rows.length > 0) await trx.runAndCommit(await this.publish(rows));
      return rows.length;
    });
  }

  /** Publishes the claimed events and counts the outcome; answers the statement that records it. */
  private async publish(rows: ClaimedEvent[]): Promise<Statement> {
    const results = await this.broker.publish(
      rows.map((r) => ({ id: r.id, type: r.type, message: r.message, createdAt: r.created_at })),
    );
    const confirmedAt = Date.now();
    const byId = new Map(rows.map((r) => [r.id, r]));
    const published = results.filter((r): r is Extract<PublishResult, { ok: true }> => r.ok);
    const failed = results.filter((r): r is Extract<PublishResult, { ok: false }> => !r.ok);
    for (const result of published) {
      const row = byId.get(result.id) as ClaimedEvent;
      this.options.metrics.eventsPublished.inc({ type: row.type });
      if (!result.routed) this.options.metrics.eventsUnrouted.inc({ type: row.type });
      this.options.metrics.publishLatency.observe(Math.max(0, confirmedAt - row.created_at.getTime()) / 1000);
    }
    for (const result of failed) this.options.metrics.publishFailures.inc({ reason: result.reason });
    if (failed.length > 0) {
      this.options.logger.warn(
        { failed: failed.length, reasons: [...new Set(failed.map((f) => f.reason))] },
        'events not confirmed; will retry',
      );
    }
    return markEvents(
      published.map((r) => r.id),
      published.filter((r) => !r.routed).map((r) => r.id),
      failed.map((r) => ({ id: r.id, error: `${r.reason}: ${r.error}` })),
    );
  }

  private async sweepPublished(connection: pg.Client): Promise<void> {
    const now = Date.now();
    if (now - this.lastSweep < RETENTION_SWEEP_MS) return;
    this.lastSweep = now;
    const [row] = await runOn(connection, deletePublished(this.options.retentionMs));
    if (row?.deleted) this.options.logger.info({ deleted: row.deleted }, 'published events past retention deleted');
  }
}
