import amqp, { type ConsumeMessage } from 'amqplib';
import type { Command } from 'commander';
import { brokerUrl } from '../../config';
import { createLogger } from '../../observability/logger';
import { BrokerChannel, REPLAY_HEADER, type PublishResult } from '../../outbox/brokerChannel';
import { EVENT_TYPES, typesMatching, type EventType } from '../../outbox/cloudEvents';
import { createRelayMetrics } from '../../observability/metrics';
import type { Db } from '../../database/pool';
import { selectEvents, type ReplaySelection } from '../../outbox/outboxQueries';
import { isBrokerName } from '../../admin/tokens';
import { AUDITED_ORDERS_MAX, completeAudit } from '../../audit/auditQueries';
import { auditCommand } from './audit';
import { readConfig, withDatabase } from './database';
import { rebuildEvents, type RebuildOptions } from './eventsRebuild';
import { action, CliError, EXIT_FAILURE, EXIT_OK, UsageError, type CliIo, type CliState, type ExitCode } from './io';
import { collect, durationOption, integerOption, timeOption, withDatabaseUrl, withJson } from './options';
import { emit, iso, startProgress, table } from './output';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const PUBLISH_BATCH = 500;
const CONFIRM_TIMEOUT_MS = 10_000;

interface ReplayOptions {
  id?: string[];
  order?: string[];
  type?: string[];
  queue?: string;
  since?: Date;
  until?: Date;
  dryRun?: boolean;
  databaseUrl?: string;
  amqpUrl?: string;
  exchange?: string;
  json?: boolean;
}

export interface ReplayedEvent {
  id: string;
  orderId: string;
  sequence: number;
  type: string;
  createdAt: string | null;
  /** Whether the relay had published it (the replay does not change the outbox). */
  publishedByRelay: boolean;
  /**
   * confirmed; unrouted (confirmed, but the broker returned it: no queue bound for its routing key); or why it
   * was not confirmed (nack, timeout, connection); `would publish` in a dry run.
   */
  result: 'confirmed' | 'unrouted' | 'would publish' | PublishResultReason;
  error: string | null;
}

type PublishResultReason = Extract<PublishResult, { ok: false }>['reason'];

/**
 * A replay is an action on each order whose events go out again: a row each (up to AUDITED_ORDERS_MAX orders,
 * else one row for the whole selection), recorded before publishing, with how many events were selected; the
 * rows' ids, for how it ended.
 */
async function auditReplay(
  db: Db,
  selection: ReplaySelection,
  events: ReadonlyArray<{ order_id: string }>,
  destination: string,
): Promise<string[]> {
  const orders = [...new Set(events.map((e) => e.order_id))];
  const detail = `${events.length} event(s) selected (${[
    selection.ids.length > 0 ? `${selection.ids.length} id(s)` : '',
    selection.orders.length > 0 ? `${selection.orders.length} order(s)` : '',
    selection.types.length > 0 ? `types ${selection.types.join(' ')}` : '',
    selection.since ? `since ${selection.since.toISOString()}` : '',
    selection.until ? `until ${selection.until.toISOString()}` : '',
  ]
    .filter((part) => part !== '')
    .join(', ')}) to ${destination}`;
  if (orders.length > AUDITED_ORDERS_MAX)
    return [
      await auditCommand(db, {
        action: 'events_replay',
        target: `${orders.length} orders`,
        result: 'publishing',
        detail,
      }),
    ];
  const ids: string[] = [];
  for (const orderId of orders)
    ids.push(
      await auditCommand(db, {
        action: 'events_replay',
        target: orderId,
        orderId,
        result: 'publishing',
        detail: `${events.filter((e) => e.order_id === orderId).length} of ${detail}`,
      }),
    );
  return ids;
}

/** The types --type names: each a type or a binding pattern (`refund.#`); one that matches none is a usage error. */
function chosenTypes(patterns: readonly string[]): EventType[] {
  const chosen = new Set<EventType>();
  for (const pattern of patterns) {
    const matched = typesMatching(pattern);
    if (matched === null || matched.length === 0)
      throw new UsageError(
        `--type ${pattern}: ${matched === null ? 'not an event type or a binding pattern' : 'matches no event type'} ` +
          `(${EVENT_TYPES.join(', ')}; a pattern such as refund.# or order.* takes several)`,
      );
    for (const type of matched) chosen.add(type);
  }
  return EVENT_TYPES.filter((type) => chosen.has(type));
}

export async function replayEvents(io: CliIo, options: ReplayOptions): Promise<ExitCode> {
  const selection: ReplaySelection = {
    ids: options.id ?? [],
    orders: options.order ?? [],
    types: chosenTypes(options.type ?? []),
    since: options.since ?? null,
    until: options.until ?? null,
  };
  if (
    selection.ids.length === 0 &&
    selection.orders.length === 0 &&
    selection.types.length === 0 &&
    !selection.since &&
    !selection.until
  ) {
    throw new UsageError('choose the events: --id, --order, --type, and/or a time range (--since, --until)');
  }
  const badId = selection.ids.find((id) => !UUID.test(id));
  if (badId !== undefined) throw new UsageError(`--id ${badId}: an event id is a UUID`);
  if (selection.since && selection.until && selection.since >= selection.until)
    throw new UsageError('--until is not after --since: the range is empty');
  if (options.queue !== undefined && options.exchange !== undefined)
    throw new UsageError('--queue and --exchange: choose one destination');
  if (options.queue !== undefined && isBrokerName(options.queue))
    throw new UsageError(
      `--queue ${options.queue}: a name of the broker's own (amq.*: a server-named queue belongs to the connection that made it)`,
    );
  const config = readConfig(
    io,
    { DATABASE_URL: options.databaseUrl, AMQP_URL: options.amqpUrl, AMQP_EXCHANGE: options.exchange },
    { publishing: true },
  );
  const json = options.json === true;
  const dryRun = options.dryRun === true;

  const results = await withDatabase(io, config, async (db) => {
    const events = await selectEvents(db, selection);
    const listed: ReplayedEvent[] = events.map((e) => ({
      id: e.id,
      orderId: e.order_id,
      sequence: Number(e.sequence),
      type: e.type,
      createdAt: iso(e.created_at),
      publishedByRelay: e.published_at !== null,
      result: 'would publish',
      error: null,
    }));
    if (dryRun || events.length === 0) return listed;
    // To the exchange, which must exist (checked, never declared: one declared otherwise would refuse with 406),
    // or to one queue through the default exchange. Its metrics go to a registry of its own (a one-off command is
    // not scraped).
    const toQueue = options.queue;
    const broker = new BrokerChannel(
      brokerUrl(config),
      toQueue === undefined ? config.amqpExchange : '',
      CONFIRM_TIMEOUT_MS,
      createRelayMetrics(),
      createLogger('silent'),
      toQueue === undefined ? 'check' : 'none',
    );
    try {
      await broker.open();
    } catch (error) {
      const { code, message } = error as { code?: unknown; message: string };
      if (code === 404)
        throw new CliError(`the exchange ${config.amqpExchange} does not exist on the broker; nothing was published`);
      throw new CliError(`cannot connect to the broker: ${message}`);
    }
    try {
      const state = toQueue === undefined ? 'available' : await broker.queueState(toQueue);
      if (state === 'missing')
        throw new CliError(`the queue ${toQueue ?? ''} does not exist on the broker; nothing was published`);
      if (state === 'exclusive')
        throw new CliError(
          `the queue ${toQueue ?? ''} is held exclusively by another connection (a consumer's own); nothing was published`,
        );
      // On the record before the first event goes out, and how it ended once it is known.
      const audited = await auditReplay(
        db,
        selection,
        events,
        toQueue === undefined ? `exchange ${config.amqpExchange}` : `queue ${toQueue}`,
      );
      const publishing = {
        ...(toQueue === undefined ? {} : { routingKey: toQueue }),
        headers: { [REPLAY_HEADER]: new Date().toISOString() },
      };
      const progress = startProgress(io, json, 'events', events.length);
      try {
        for (let start = 0; start < events.length; start += PUBLISH_BATCH) {
          const batch = events.slice(start, start + PUBLISH_BATCH);
          // The exact stored message bytes, with the same id and type, as the relay sends them.
          const published = await broker.publish(
            batch.map((e) => ({ id: e.id, type: e.type, message: e.message, createdAt: e.created_at })),
            publishing,
          );
          published.forEach((r, i) => {
            const entry = listed[start + i] as ReplayedEvent;
            entry.result = r.ok ? (r.routed ? 'confirmed' : 'unrouted') : r.reason;
            entry.error = r.ok ? null : r.error;
          });
          progress.increment(batch.length);
          if (!broker.isOpen && start + PUBLISH_BATCH < events.length) await broker.open();
        }
      } catch (error) {
        await completeAudit(db, audited, { result: 'failed: the replay stopped on an error' }).catch(() => undefined);
        throw error;
      } finally {
        progress.stop();
      }
      const unconfirmed = listed.filter((r) => r.result !== 'confirmed').length;
      await completeAudit(db, audited, {
        result: unconfirmed === 0 ? 'published' : `${unconfirmed} of ${listed.length} not confirmed`,
      });
      return listed;
    } finally {
      await broker.close();
    }
  });
  const found = new Set(results.map((e) => e.id.toLowerCase()));
  const missing = selection.ids.filter((id) => !found.has(id.toLowerCase()));

  const counts: Record<string, number> = {};
  for (const r of results) counts[r.result] = (counts[r.result] ?? 0) + 1;
  const failed = results.filter((r) => r.result !== 'confirmed' && r.result !== 'would publish');
  emit(
    io,
    json,
    {
      dryRun,
      exchange: options.queue === undefined ? config.amqpExchange : '',
      queue: options.queue ?? null,
      selected: results.length,
      counts,
      missing,
      events: results,
    },
    () => [
      ...table(
        results.map((r) => [
          r.createdAt ?? '',
          r.type,
          `${r.orderId} #${r.sequence}`,
          r.id,
          r.result + (r.error ? ` (${r.error})` : ''),
        ]),
      ),
      '',
      `${dryRun ? 'Dry run: would publish' : 'Published'} ${results.length} event(s) to ${options.queue === undefined ? `exchange ${config.amqpExchange}` : `queue ${options.queue}`}` +
        (dryRun
          ? '.'
          : `: ${counts.confirmed ?? 0} confirmed, ${failed.length} not (${counts.unrouted ?? 0} unrouted: no queue bound for their routing key).`),
      ...(missing.length > 0
        ? [`Not found (never stored, or deleted after OUTBOX_RETENTION): ${missing.join(', ')}`]
        : []),
      ...(results.some((r) => !r.publishedByRelay)
        ? ['Note: some of these were not yet published by the relay; it will still publish them (same id).']
        : []),
    ],
  );
  if (results.length === 0 && missing.length === 0) io.stderr.write('no stored event matches the selection\n');
  return results.length === 0 || missing.length > 0 || failed.length > 0 ? EXIT_FAILURE : EXIT_OK;
}

interface WatchOptions {
  bindingKey: string;
  count?: number;
  timeout?: number;
  amqpUrl?: string;
  exchange?: string;
  json?: boolean;
}

function describeEvent(message: ConsumeMessage): string {
  try {
    const event = JSON.parse(message.content.toString('utf8')) as {
      time?: string;
      subject?: string;
      data?: {
        status?: string;
        previousStatus?: string | null;
        sequence?: number;
        refundId?: string;
        amount?: string | null;
        totalAmount?: string | null;
      };
    };
    const d = event.data ?? {};
    return [
      event.time ?? '',
      message.fields.routingKey.padEnd(30),
      `order ${event.subject ?? '?'}${d.refundId ? ` refund ${d.refundId}` : ''}`,
      `${d.previousStatus ?? '-'} -> ${d.status ?? '?'}`,
      `seq ${d.sequence ?? '?'}`,
      `id ${String(message.properties.messageId)}`,
    ].join('  ');
  } catch {
    return `${message.fields.routingKey}  (not JSON, ${message.content.length} bytes)`;
  }
}

/**
 * Binds a queue of its own (exclusive, deleted when the watcher stops) to the exchange and prints
 * every event published from then on (an event no queue was bound for is kept in the outbox, not
 * held back), so start this first.
 */
export async function watchEvents(io: CliIo, options: WatchOptions): Promise<ExitCode> {
  const config = readConfig(io, { AMQP_URL: options.amqpUrl, AMQP_EXCHANGE: options.exchange }, { publishing: true });
  const json = options.json === true;
  let connection;
  try {
    connection = await amqp.connect(brokerUrl(config), {
      clientProperties: { connection_name: 'payment-notification-receiver:cli-watch' },
    });
  } catch (error) {
    throw new CliError(`cannot connect to the broker: ${(error as Error).message}`);
  }
  // amqplib emits 'error' before 'close' when the broker or the network ends the connection (or the
  // channel); unheard, that would end the command with a stack trace instead of a clear message.
  let lost: Error | undefined;
  const remember = (error: Error): void => void (lost ??= error);
  connection.on('error', remember);
  try {
    const channel = await connection.createChannel();
    channel.on('error', remember);
    await channel.assertExchange(config.amqpExchange, 'topic', { durable: true });
    const { queue } = await channel.assertQueue('', { exclusive: true, autoDelete: true });
    await channel.bindQueue(queue, config.amqpExchange, options.bindingKey);
    let received = 0;
    let stopped = false;
    const outcome = await new Promise<ExitCode>((resolve) => {
      const stop = (code: ExitCode): void => {
        stopped = true;
        process.off('SIGINT', interrupted);
        process.off('SIGTERM', interrupted);
        clearTimeout(timer);
        resolve(code);
      };
      const interrupted = (): void => stop(EXIT_OK);
      process.on('SIGINT', interrupted);
      process.on('SIGTERM', interrupted);
      const timer =
        options.timeout === undefined
          ? undefined
          : setTimeout(() => {
              if (options.count !== undefined)
                io.stderr.write(`timed out after ${received} of ${options.count} event(s)\n`);
              stop(options.count === undefined ? EXIT_OK : EXIT_FAILURE);
            }, options.timeout);
      connection.on('close', () => {
        if (stopped) return; // the watcher's own close, once it is done
        io.stderr.write(`lost the broker connection${lost ? `: ${lost.message}` : ''} after ${received} event(s)\n`);
        stop(EXIT_FAILURE);
      });
      void channel
        .consume(
          queue,
          (message) => {
            if (!message) return;
            received++;
            if (json) {
              let event: unknown;
              try {
                event = JSON.parse(message.content.toString('utf8')) as unknown;
              } catch {
                event = null;
              }
              io.stdout.write(
                `${JSON.stringify({ routingKey: message.fields.routingKey, messageId: (message.properties.messageId as string | undefined) ?? null, event })}\n`,
              );
            } else {
              io.stdout.write(`${describeEvent(message)}\n`);
            }
            if (options.count !== undefined && received >= options.count) stop(EXIT_OK);
          },
          { noAck: true },
        )
        .then(() => {
          io.stderr.write(
            `watching exchange ${config.amqpExchange} with binding key ${options.bindingKey} (Ctrl-C to stop)\n`,
          );
        });
    });
    return outcome;
  } finally {
    await connection.close().catch(() => undefined);
  }
}

export function registerEvents(program: Command, io: CliIo, state: CliState): void {
  const events = program
    .command('events')
    .summary('replay stored events, rebuild them from history, or watch the exchange')
    .description(
      'Domain events: replay stored ones to the exchange or a queue, rebuild deleted ones from history, or watch the exchange.',
    );

  const replay = events
    .command('replay')
    .summary('publish stored events again (same ids, same bytes)')
    .description(
      'Publishes stored outbox events again to AMQP_EXCHANGE (or, with --queue, to that one queue only, through the ' +
        'default exchange), with the same event id (messageId), type, message bytes and AMQP timestamp, and a ' +
        'replayed-at header, with publisher confirms and mandatory, and reports each confirm or return. The ' +
        'exchange or queue must exist (never an amq.* queue, nor one another connection holds exclusively). ' +
        'Selection: --id and --order (either matches; repeatable), limited to --type (a type or a binding pattern; ' +
        'repeatable) and --since/--until (stored time; ISO 8601 or a duration ago such as 2h). Only events still in ' +
        'the outbox can be replayed (published ones are deleted after OUTBOX_RETENTION; `events rebuild` gives older ' +
        'ones back from history). The outbox is not changed. The replay is recorded in the audit trail before the ' +
        'first event goes out, with how it ended. A team without the database credentials replays into its queue ' +
        'with POST /events/replay on the admin port.\n\n' +
        'Exit codes: 0 every selected event confirmed (or listed, with --dry-run); 1 nothing matched, an --id was not ' +
        'found, or an event was unrouted (no queue bound), nacked or not confirmed; 2 usage error.',
    )
    .option(
      '--id <eventId>',
      'an event id (repeatable)',
      collect((v: string) => v),
    )
    .option(
      '--order <orderId>',
      'every event of an order (repeatable)',
      collect((v: string) => v),
    )
    .option(
      '--type <type>',
      'only events of this type, or of the types a binding pattern matches (refund.#, order.*; repeatable)',
      collect((v: string) => v),
    )
    .option('--since <time>', 'events created at or after (ISO 8601, or a duration ago: 30m, 2h, 7d)', timeOption)
    .option('--until <time>', 'events created before (ISO 8601, or a duration ago)', timeOption)
    .option('--dry-run', 'list what would be published; publish nothing')
    .option('--queue <name>', 'publish to this queue only (through the default exchange), not to the exchange')
    .option('--amqp-url <url>', 'broker instead of AMQP_URL')
    .option('--exchange <name>', 'exchange instead of AMQP_EXCHANGE');
  withJson(withDatabaseUrl(replay)).action(action(state, (options: ReplayOptions) => replayEvents(io, options)));

  const rebuild = events
    .command('rebuild')
    .summary('rebuild events from history, with their ids, back into the outbox')
    .description(
      'Rebuilds the events of the notifications received in a time range from the stored history, with the ' +
        "recorder's own rules, each with its original id, time, number and body, and puts those the outbox no longer " +
        'holds (deleted after OUTBOX_RETENTION) back into it, as published: the relay does not publish them again, ' +
        'GET /events serves them in their place and a replay (POST /events/replay, events replay) publishes them, ' +
        'until OUTBOX_RETENTION from now. Needs the whole history of each order (HISTORY_RETENTION): an order part of ' +
        'whose history is gone is not rebuilt, nor is an event deleted before this version derived event ids.\n\n' +
        'Exit codes: 0 every event rebuilt; 1 some order or event could not be (listed); 2 usage error.',
    )
    .option('--since <time>', 'notifications received at or after (ISO 8601, or a duration ago: 30d)', timeOption)
    .option('--until <time>', 'notifications received before (default: now)', timeOption)
    .option('--dry-run', 'count what would be rebuilt; change nothing');
  withJson(withDatabaseUrl(rebuild)).action(action(state, (options: RebuildOptions) => rebuildEvents(io, options)));

  const watch = events
    .command('watch')
    .summary('print the events published to the exchange')
    .description(
      'Binds a queue of its own (exclusive, deleted when it stops) to AMQP_EXCHANGE and prints every event (one JSON ' +
        'line each with --json). Start it before the events are published: it sees only those published once its ' +
        'queue is bound (the others are in GET /events on the admin port).\n\n' +
        'Exit codes: 0 stopped (Ctrl-C, --count reached, or --timeout without --count); 1 --timeout before --count ' +
        'events, or the broker connection lost; 2 usage error.',
    )
    .option('--binding-key <pattern>', 'topic pattern, e.g. order.*, refund.#, order.completed', '#')
    .option('--count <n>', 'stop after this many events', integerOption(1))
    .option('--timeout <duration>', 'stop after this long', durationOption)
    .option('--amqp-url <url>', 'broker instead of AMQP_URL')
    .option('--exchange <name>', 'exchange instead of AMQP_EXCHANGE');
  withJson(watch).action(action(state, (options: WatchOptions) => watchEvents(io, options)));
}
