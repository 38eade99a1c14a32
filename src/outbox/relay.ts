import { sql, type Selectable } from 'kysely';
import type pg from 'pg';
import { columnsOf, type Table } from '../database/columns';
import type { OutboxEventsTable } from '../database/schema';
import { backoffAfter, SingleActiveWorker, type NextStep } from '../database/singleActiveWorker';
import { inTransaction, runOn, statement, type Statement } from '../database/transaction';
import type { Logger } from '../observability/logger';
import type { RelayMetrics } from '../observability/metrics';
import { BrokerChannel, type PublishResult } from './brokerChannel';
import { OUTBOX_CHANNEL } from './notifyChannel';

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
export const RELAY_LOCK = 7_316_002;
const RETENTION_SWEEP_MS = 60_000;

const OUTBOX = 'outbox_events' satisfies Table;
/** Its columns as the statements below name them: unqualified, and in the roles `o` and `p`. */
const c = columnsOf('outbox_events');
const o = columnsOf('outbox_events', 'o');
const p = columnsOf('outbox_events', 'p');

type ClaimedEvent = Pick<Selectable<OutboxEventsTable>, 'id' | 'type' | 'message' | 'created_at'>;

/**
 * The relay's two statements are not prepared by name: a named statement is planned generically after
 * five runs, and the plan is kept while the table changes under it. Planned when the outbox was young,
 * the mark scanned the whole table for every batch (40 ms with 150,000 rows, growing), and the claim,
 * its limit unknown, sorted every pending event. Planned at each run with its arguments (a fraction of a
 * millisecond, once per batch of up to 200 events), each walks its index.
 */

/**
 * The next batch: pending events due now, oldest first, at most the first pending event of each order,
 * skipping rows another transaction holds.
 */
const claim = (limit: number): Statement<ClaimedEvent> =>
  statement(
    sql<ClaimedEvent>`
      SELECT ${o('id')}, ${o('type')}, ${o('message')}, ${o('created_at')}
        FROM ${sql.table(OUTBOX)} o
       WHERE ${o('published_at')} IS NULL
         AND ${o('next_attempt_at')} <= now()
         AND NOT EXISTS (SELECT 1 FROM ${sql.table(OUTBOX)} p
                          WHERE ${p('order_id')} = ${o('order_id')} AND ${p('published_at')} IS NULL
                            AND ${p('sequence')} < ${o('sequence')})
       ORDER BY ${o('created_at')}
       LIMIT ${limit}
       FOR UPDATE OF o SKIP LOCKED`,
  );

/**
 * What the broker said, written back: confirmed events published, those it returned (no queue bound) with
 * unrouted_at too, so that they never hold up their order's later events; the others attempted again later,
 * with a per-event backoff of 1 s doubling to 5 min (the order's later events wait behind them).
 */
const mark = (
  published: readonly string[],
  unrouted: readonly string[],
  failed: ReadonlyArray<{ id: string; error: string }>,
): Statement =>
  statement(
    sql`
      WITH published AS (
        UPDATE ${sql.table(OUTBOX)} SET ${c('published_at')} = clock_timestamp(), ${c('last_error')} = NULL,
               ${c('unrouted_at')} = CASE WHEN ${c('id')} = ANY(${unrouted}::uuid[]) THEN clock_timestamp() END
         WHERE ${c('id')} = ANY(${published}::uuid[])
      ), failed AS (
        UPDATE ${sql.table(OUTBOX)} AS o
           SET ${c('attempts')} = ${o('attempts')} + 1,
               ${c('next_attempt_at')} = now() + least(interval '1 second' * power(2, ${o('attempts')}), interval '5 minutes'),
               ${c('last_error')} = f.error
          FROM unnest(${failed.map((f) => f.id)}::uuid[], ${failed.map((f) => f.error)}::text[]) AS f(id, error)
         WHERE ${o('id')} = f.id
      )
      SELECT 1`,
  );

const LEGACY = 'legacy_event_ids' satisfies Table;
const legacy = columnsOf('legacy_event_ids');
const deleted = columnsOf('outbox_events', 'd');

/**
 * Events created and published more than retention ago, deleted up to 10,000 at a time (the relay sweeps once a
 * minute), walking the outbox in the order events were stored (outbox_events_by_time, sql/011). One written by a
 * replica of the version before derived ids (a random, version-4 UUID: a rolling upgrade) is kept in
 * legacy_event_ids as it goes, so that `events rebuild` can give it its id again.
 */
const deletePublished = (retentionMs: number): Statement<{ deleted: number }> =>
  statement(
    sql<{ deleted: number }>`
      WITH deleted AS (
        DELETE FROM ${sql.table(OUTBOX)} WHERE ${c('id')} IN (
          SELECT ${c('id')} FROM ${sql.table(OUTBOX)}
           WHERE ${c('created_at')} < now() - ${retentionMs} * interval '1 millisecond'
             AND ${c('published_at')} < now() - ${retentionMs} * interval '1 millisecond'
           ORDER BY ${c('created_at')} LIMIT 10000)
        RETURNING ${c('id')}, ${c('message')}, ${c('created_at')}
      ), kept AS (
        INSERT INTO ${sql.table(LEGACY)} (${legacy('notification_id')}, ${legacy('event_id')}, ${legacy('event_time')}, ${legacy('created_at')})
        SELECT (${deleted('message')}::json -> 'data' ->> 'notificationId')::bigint, ${deleted('id')},
               (${deleted('message')}::json ->> 'time')::timestamptz, ${deleted('created_at')}
          FROM deleted d WHERE substr(${deleted('id')}::text, 15, 1) <> '7'
        ON CONFLICT (${legacy('notification_id')}) DO NOTHING
      )
      SELECT count(*)::int AS deleted FROM deleted`,
  );

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
export class OutboxRelay {
  private readonly batchSize: number;
  private readonly pollIntervalMs: number;
  private readonly maxBackoffMs: number;
  private readonly broker: BrokerChannel;
  private readonly worker: SingleActiveWorker;
  private lastSweep = 0;
  private brokerBackoffMs = 0;

  constructor(private readonly options: RelayOptions) {
    this.batchSize = options.batchSize ?? 200;
    this.pollIntervalMs = options.pollIntervalMs ?? 1000;
    this.maxBackoffMs = options.maxBackoffMs ?? 10_000;
    this.broker = new BrokerChannel(
      options.amqpUrl,
      options.exchange,
      options.confirmTimeoutMs ?? 10_000,
      options.metrics,
      options.logger,
    );
    this.worker = new SingleActiveWorker({
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
        onConnect: async (client) => {
          client.on('notification', () => this.wake());
          await runOn(client, statement(sql`LISTEN ${sql.id(OUTBOX_CHANNEL)}`));
        },
      },
      logger: options.logger,
      lines: {
        active: 'outbox relay is active',
        standby: 'outbox relay is standing by',
        failed: 'outbox relay lost its database connection',
      },
      activeGauge: options.metrics.relayActive,
      standbyMs: this.pollIntervalMs,
      backoff: { firstMs: 250, maxMs: this.maxBackoffMs },
      step: (connection) => this.step(connection),
      onStop: () => this.broker.close(),
    });
  }

  get isActive(): boolean {
    return this.worker.isActive;
  }

  start(): void {
    this.worker.start();
  }

  /** A hint that events were committed; the relay also polls, so a lost hint costs at most a poll interval. */
  wake(): void {
    this.worker.wake();
  }

  /** Finishes the current batch, releases the lock and closes both connections. */
  async stop(): Promise<void> {
    await this.worker.stop();
  }

  /**
   * One batch while active. A batch takes one event per order, so an order's next events wait for the next
   * batch: go again at once while batches find work (the events committed while this one waited for its
   * confirms are the next batch), poll only when one comes back empty. A commit's wake-up hint cuts a poll
   * wait short, never a backoff.
   */
  private async step(connection: pg.Client): Promise<NextStep> {
    if (!(await this.openBroker())) return { waitMs: this.brokerBackoffMs, wakeable: false };
    const published = await this.publishBatch(connection);
    await this.sweepPublished(connection);
    return { waitMs: published > 0 ? 0 : this.pollIntervalMs, wakeable: true };
  }

  /** Connects to the broker if needed; on failure backs off (250 ms doubling to maxBackoffMs). */
  private async openBroker(): Promise<boolean> {
    if (this.broker.isOpen) return true;
    try {
      await this.broker.open();
      this.brokerBackoffMs = 0;
      return true;
    } catch (error) {
      this.brokerBackoffMs = backoffAfter(this.brokerBackoffMs, 250, this.maxBackoffMs);
      this.options.metrics.publishFailures.inc({ reason: 'connection' });
      this.options.logger.warn(
        { err: { message: (error as Error).message }, retryInMs: this.brokerBackoffMs },
        'broker unreachable; events wait in the outbox',
      );
      return false;
    }
  }

  /**
   * Claims, publishes and marks one batch inside one transaction on the lock-holding connection. On a
   * pipelined connection BEGIN leaves with the claim, and the marks with COMMIT.
   */
  private async publishBatch(connection: pg.Client): Promise<number> {
    return inTransaction(connection, async (trx) => {
      const rows = await trx.run(claim(this.batchSize));
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
    return mark(
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
