import type pg from 'pg';
import { ADVISORY_LOCKS } from '../database/advisoryLocks';
import { SingleActiveJob, type NextStep } from '../jobs/singleActiveWorker';
import { Retries, type BackoffPolicy } from '../domain/backoff';
import { runOn } from '../database/transaction';
import type { Logger } from '../observability/logger';
import type { RelayMetrics } from '../observability/metrics';
import { BrokerChannel, type OutgoingEvent, type PublishResult } from './brokerChannel';
import {
  deletePublished,
  listenForEvents,
  readBatch,
  recordBatch,
  type BatchEvent,
  type BatchOutcome,
} from './outboxQueries';

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
  /** pg's pipeline mode on the relay's connection (default false, as createPool's). */
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
 * dozens rather than of the few committed while the last one waited for its confirms: the read, the cursor's update
 * and the broker's confirms cost mostly per batch. A full batch (a backlog) goes again at once.
 */
export const RELAY_BATCH_EVERY_MS = 20;

/**
 * What the relay does after a batch that took `tookMs`. Empty: poll, and a commit's hint ends the wait at once. Full
 * (a backlog): go again at once. Otherwise go again once RELAY_BATCH_EVERY_MS has passed since the batch began, a hint
 * not cutting it short: the events committed meanwhile make the next batch.
 */
export function afterBatch(published: number, batchSize: number, tookMs: number, pollIntervalMs: number): NextStep {
  if (published === 0) return { waitMs: pollIntervalMs, wakeable: true };
  if (published >= batchSize) return { waitMs: 0, wakeable: true };
  return { waitMs: Math.max(0, RELAY_BATCH_EVERY_MS - tookMs), wakeable: false };
}

/**
 * The waves a batch is published in: the first event of each order, then the second of each, and so on, each wave
 * confirmed before the next leaves, so that an event the broker refuses holds back its order's later events (not yet
 * sent) and nothing else. Most batches have one event per order: one wave.
 */
export function waves<E extends { order_id: string }>(events: readonly E[]): E[][] {
  const rank = new Map<string, number>();
  const out: E[][] = [];
  for (const event of events) {
    const k = rank.get(event.order_id) ?? 0;
    rank.set(event.order_id, k + 1);
    (out[k] ??= []).push(event);
  }
  return out;
}

/**
 * Publishes outbox events to RabbitMQ by transaction id, behind a cursor (docs/decisions/0023):
 *
 * - Reads the events of whole transactions above the cursor and below the oldest transaction still running, in
 *   transaction order (an order's events have growing ids in sequence: its writers take the order's lock before their
 *   first write), publishes them, waits for every confirm, then moves the cursor past them: one row written a batch,
 *   none per event, no row locked.
 * - An event the broker refuses (nack) is held (outbox_held) with its order's later events, and published again after
 *   EVENT_RETRY, in sequence: it holds back its own order and nothing else. An event no queue takes (the broker
 *   returns it) is published all the same, and marked unrouted. A batch the broker fails as a whole (the connection
 *   lost, confirms late) is read again after the same back-off.
 * - Holds a session advisory lock on its own connection: standbys retry every poll interval and take over as soon as
 *   the active relay's session ends; the cursor moves only from where this relay read it.
 * - At-least-once: killed between the broker confirm and the cursor's update, the batch is sent again with the same
 *   ids.
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
        // Moving the cursor need not wait for the WAL flush: a move lost in a database crash only means the batch
        // is published again, with the same ids (at-least-once, as documented). The retention sweep walks
        // outbox_events_by_time in order, an index scan (sql/011).
        // Its read and its cursor's move are prepared, planned once (their rows are parameters, their plans the same).
        sessionOptions: '-c synchronous_commit=off -c enable_bitmapscan=off -c plan_cache_mode=force_generic_plan',
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
   * Reads one batch, publishes it and records what the broker said, each one statement on the lock-holding
   * connection. Answers how many events the batch read.
   */
  private async publishBatch(connection: pg.Client): Promise<number> {
    const rows = await runOn(connection, readBatch(this.batchSize));
    if (rows.length === 0) return 0;
    const [recorded] = await runOn(connection, recordBatch(await this.publish(rows)));
    // Another relay moved the cursor: this one lost its lock (0005). Start over, on a new session.
    if (!recorded?.moved) throw new Error('the outbox cursor moved under this relay: another relay is active');
    return rows.length;
  }

  /** Publishes a batch in waves (waves()), counts the outcome and answers what to record. */
  private async publish(rows: readonly BatchEvent[]): Promise<BatchOutcome> {
    const hold: Array<BatchOutcome['hold'][number]> = [];
    const unrouted: string[] = [];
    const heldPublished: string[] = [];
    const heldFailed: Array<{ id: string; error: string }> = [];
    let batchError: string | null = null;
    const holdBack = (row: BatchEvent, error: string | null): void => {
      hold.push({ id: row.id, orderId: row.order_id, sequence: row.sequence, error });
    };
    const refused = new Set<string>();
    const toSend: BatchEvent[] = [];
    for (const row of rows) {
      if (row.held) toSend.push(row);
      else if (row.published) continue;
      else if (row.blocked) holdBack(row, null);
      else toSend.push(row);
    }
    const failures: Array<Extract<PublishResult, { ok: false }>> = [];
    for (const wave of waves(toSend)) {
      const sending = wave.filter((row) => {
        if (!refused.has(row.order_id)) return true;
        holdBack(row, null);
        return false;
      });
      if (sending.length === 0) continue;
      const results = await this.broker.publish(sending.map(outgoing));
      const confirmedAt = Date.now();
      sending.forEach((row, i) => {
        const result = results[i];
        if (result?.ok) {
          this.options.metrics.eventsPublished.inc({ type: row.type });
          if (!result.routed) this.options.metrics.eventsUnrouted.inc({ type: row.type });
          this.options.metrics.publishLatency.observe(Math.max(0, confirmedAt - row.created_at.getTime()) / 1000);
          if (row.held) heldPublished.push(row.id);
          if (!result.routed) unrouted.push(row.id);
          return;
        }
        const failure = result ?? { id: row.id, ok: false, reason: 'connection', error: 'no answer' };
        failures.push(failure);
        this.options.metrics.publishFailures.inc({ reason: failure.reason });
        const error = `${failure.reason}: ${failure.error}`;
        if (row.held) heldFailed.push({ id: row.id, error });
        else if (failure.reason === 'nack') {
          holdBack(row, error);
          refused.add(row.order_id);
        } else batchError ??= error;
      });
      if (batchError !== null) break;
    }
    if (failures.length > 0) {
      this.options.logger.warn(
        { failed: failures.length, reasons: [...new Set(failures.map((f) => f.reason))] },
        'events not confirmed; will retry',
      );
    }
    const cursorXid = (rows[0] as BatchEvent).cursor_xid;
    // A batch failed as a whole is read again from the same cursor: nothing of it is held.
    if (batchError !== null)
      return { cursorXid, advanceTo: null, batchError, hold: [], unrouted, heldPublished, heldFailed };
    const advanceTo = rows.find((r) => !r.held)?.last_xid ?? null;
    return { cursorXid, advanceTo, batchError, hold, unrouted, heldPublished, heldFailed };
  }

  private async sweepPublished(connection: pg.Client): Promise<void> {
    const now = Date.now();
    if (now - this.lastSweep < RETENTION_SWEEP_MS) return;
    this.lastSweep = now;
    const [row] = await runOn(connection, deletePublished(this.options.retentionMs));
    if (row?.deleted) this.options.logger.info({ deleted: row.deleted }, 'published events past retention deleted');
  }
}

const outgoing = (row: BatchEvent): OutgoingEvent => ({
  id: row.id,
  type: row.type,
  message: row.message,
  createdAt: row.created_at,
});
