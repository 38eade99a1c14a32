import os from 'node:os';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import type { Command } from 'commander';
import type { Config } from '../../../config';
import { prepareDatabase } from '../../../database/bootstrap';
import { addDays, DAY_MS, dayOf, daysToMake } from '../../../partitions/partitionDays';
import { createLogger } from '../../../observability/logger';
import { freshSeed, seededRandom } from '../../../simulator/random';
import { fingerprintKey } from '../../../verification/secondKeys';
import { auditedCommand } from '../audit';
import { readConfig, withDatabase } from '../database';
import { action, CliError, EXIT_OK, UsageError, type CliIo, type CliState, type ExitCode } from '../io';
import { integerOption, withDatabaseUrl } from '../options';
import type { SeedSettings } from './seededOrders';
import { analyzeProjections, makeSeedDays, markDaysPurged, reserveNotificationIds } from './seedQueries';
import {
  MAX_IDS_PER_ORDER,
  type ChunkCounts,
  type SeedChunk,
  type SeedWorkerData,
  type WorkerMessage,
} from './seedWorker';

/**
 * `notification-receiver history seed`: a database with a history of N orders over D days ending now, written as
 * the service would have left it (seededOrders.ts), for the benchmark and the tests to measure what a year of
 * history costs (issue 30). One thread per core builds the rows and copies them in, a slice of time each.
 */

interface SeedOptions {
  orders: number;
  days: number;
  sample?: number;
  workers?: number;
  databaseUrl?: string;
}

/** Orders per chunk (one transaction); a chunk is at most a day, so it fills few partitions. */
const CHUNK_ORDERS = 5_000;
/** The oldest and the newest month, where --sample takes its ids. */
const SAMPLE_WINDOW_MS = 30 * DAY_MS;
/** How often progress is reported on stderr. */
const PROGRESS_EVERY_MS = 2_000;
/** The history ends this long before now: the newest orders' notifications have arrived by then. */
const END_MARGIN_MS = 60_000;

const inOldestMonth = (slice: { fromMs: number }, fromMs: number): boolean => slice.fromMs < fromMs + SAMPLE_WINDOW_MS;
const inNewestMonth = (slice: { toMs: number }, toMs: number): boolean => slice.toMs > toMs - SAMPLE_WINDOW_MS;

/**
 * The chunks of a run, oldest first: the orders spread evenly over the time from fromMs to toMs, day by day, each
 * chunk with its block of the notification ids reserved from `firstId` on.
 */
export function planChunks(
  orders: number,
  fromMs: number,
  toMs: number,
  options: { sample: number; random: () => number; firstId?: bigint },
): SeedChunk[] {
  const chunks: SeedChunk[] = [];
  let planned = 0;
  let nextId = options.firstId ?? 1n;
  for (let dayStart = Math.floor(fromMs / DAY_MS) * DAY_MS; dayStart < toMs; dayStart += DAY_MS) {
    const start = Math.max(fromMs, dayStart);
    const end = Math.min(toMs, dayStart + DAY_MS);
    // The orders up to the end of this day, rounded: the days add up to `orders` exactly.
    const dayOrders = Math.round((orders * (end - fromMs)) / (toMs - fromMs)) - planned;
    planned += dayOrders;
    const inWindow = inOldestMonth({ fromMs: start }, fromMs) || inNewestMonth({ toMs: end }, toMs);
    for (let done = 0; done < dayOrders; done += CHUNK_ORDERS) {
      const count = Math.min(CHUNK_ORDERS, dayOrders - done);
      chunks.push({
        index: chunks.length,
        fromMs: start + Math.floor(((end - start) * done) / dayOrders),
        toMs: start + Math.floor(((end - start) * (done + count)) / dayOrders),
        orders: count,
        firstId: String(nextId),
        seed: Math.floor(options.random() * 2 ** 31),
        sample: inWindow ? options.sample : 0,
      });
      nextId += BigInt(count * MAX_IDS_PER_ORDER);
    }
  }
  return chunks;
}

/** Half the ids from the oldest month's chunks, half from the newest's, each half spread over its chunks. */
export function pickSample(chunks: readonly SeedChunk[], ids: ReadonlyMap<number, string[]>, sample: number): string[] {
  if (chunks.length === 0 || sample === 0) return [];
  const fromMs = chunks[0]?.fromMs ?? 0;
  const toMs = chunks.at(-1)?.toMs ?? 0;
  const spread = (window: readonly SeedChunk[], wanted: number): string[] => {
    const lists = window.map((c) => ids.get(c.index) ?? []);
    const picked: string[] = [];
    for (let round = 0; picked.length < wanted && lists.some((l) => l.length > round); round++)
      for (const list of lists) {
        const id = list[round];
        if (id !== undefined && picked.length < wanted) picked.push(id);
      }
    return picked;
  };
  const oldest = spread(
    chunks.filter((c) => inOldestMonth(c, fromMs)),
    Math.floor(sample / 2),
  );
  // A history shorter than two months has one month in both: an id is printed once.
  const taken = new Set(oldest);
  const newest = spread(chunks.filter((c) => inNewestMonth(c, toMs)).reverse(), sample)
    .filter((id) => !taken.has(id))
    .slice(0, sample - oldest.length);
  return [...oldest, ...newest];
}

/** What the run keeps of the service's settings: the POS and key of its orders, and the retentions. */
function seedSettings(config: Config, nowMs: number): SeedSettings {
  const key = config.secondKeys[0];
  if (!key) throw new UsageError('SECOND_KEYS: the seeded orders need a POS and its key');
  const startOfDay = (ms: number): number => Date.parse(`${dayOf(ms)}T00:00:00Z`);
  return {
    posId: key.posId,
    keyFingerprint: fingerprintKey(key.key),
    eventSource: config.eventSource,
    nowMs,
    // The purge takes the bodies of the days wholly older than the retention (src/partitions/partitionMaintenance.ts).
    bodiesFromMs: config.bodyRetentionMs === null ? null : startOfDay(nowMs - config.bodyRetentionMs),
    outboxFromMs: nowMs - config.outboxRetentionMs,
    scheduleFromMs: nowMs - (config.reconciliation?.giveUpMs ?? 7 * DAY_MS),
  };
}

const zeroCounts = (): ChunkCounts => ({
  notifications: 0,
  deliveries: 0,
  orders: 0,
  refunds: 0,
  owners: 0,
  streams: 0,
  events: 0,
  checks: 0,
});

function addCounts(totals: ChunkCounts, counts: ChunkCounts): void {
  totals.notifications += counts.notifications;
  totals.deliveries += counts.deliveries;
  totals.orders += counts.orders;
  totals.refunds += counts.refunds;
  totals.owners += counts.owners;
  totals.streams += counts.streams;
  totals.events += counts.events;
  totals.checks += counts.checks;
}

/** Runs the chunks on `threads` workers, each taking the next as it answers the last; answers the totals and sampled ids. */
async function runChunks(
  io: CliIo,
  data: SeedWorkerData,
  chunks: readonly SeedChunk[],
  threads: number,
  orders: number,
): Promise<{ totals: ChunkCounts; ids: Map<number, string[]> }> {
  const totals = zeroCounts();
  const ids = new Map<number, string[]>();
  const queue = [...chunks];
  const started = performance.now();
  let reported = started;
  const progress = (): void => {
    const now = performance.now();
    if (now - reported < PROGRESS_EVERY_MS) return;
    reported = now;
    io.stderr.write(
      `seeded ${totals.orders.toLocaleString('en')} of ${orders.toLocaleString('en')} orders ` +
        `(${Math.round((100 * totals.orders) / orders)} %), ` +
        `${Math.round(totals.orders / ((now - started) / 1000)).toLocaleString('en')} orders/s\n`,
    );
  };
  const workers = Array.from(
    { length: Math.min(threads, chunks.length) },
    // Young space of 64 MiB: a chunk's rows are short-lived garbage by the megabyte.
    () =>
      new Worker(path.join(__dirname, 'seedWorker.js'), {
        workerData: data,
        resourceLimits: { maxYoungGenerationSizeMb: 64 },
      }),
  );
  try {
    await Promise.all(
      workers.map(
        (worker) =>
          new Promise<void>((resolve, reject) => {
            const next = (): void => {
              const chunk = queue.shift();
              if (chunk) worker.postMessage(chunk);
              else resolve();
            };
            worker.on('error', reject);
            worker.on('exit', (code) => reject(new Error(`a seeding thread stopped (exit code ${code})`)));
            worker.on('message', (message: WorkerMessage) => {
              if (message.kind === 'failed') {
                reject(new CliError(`seeding failed: ${message.message}`));
                return;
              }
              addCounts(totals, message.counts);
              if (message.sample.length > 0) ids.set(message.index, message.sample);
              progress();
              next();
            });
            next();
          }),
      ),
    );
  } finally {
    await Promise.all(workers.map((w) => w.terminate()));
  }
  return { totals, ids };
}

export async function seedHistory(io: CliIo, options: SeedOptions): Promise<ExitCode> {
  const { orders, days } = options;
  const sample = options.sample ?? 0;
  if (sample > orders) throw new UsageError(`--sample ${sample}: more than the ${orders} orders seeded`);
  const threads = options.workers ?? os.availableParallelism();
  // As a receiving process: the orders belong to the POS of SECOND_KEYS (outside production, the sandbox key).
  const config = readConfig(io, { DATABASE_URL: options.databaseUrl }, { receiving: true });
  const logger = createLogger('silent');
  return withDatabase(io, config, async (db, _transactions, url): Promise<ExitCode> => {
    await prepareDatabase(config, url, logger);
    const nowMs = Date.now() - END_MARGIN_MS;
    const fromMs = nowMs - days * DAY_MS;
    const settings = seedSettings(config, nowMs);
    const started = performance.now();
    // Every day it fills, and the days the service keeps made ahead.
    await makeSeedDays(db, dayOf(fromMs), daysToMake(Date.now()).last);
    if (settings.bodiesFromMs !== null && settings.bodiesFromMs > fromMs) {
      // The days before the body retention count as purged, as the maintainer would have left them.
      await markDaysPurged(db, dayOf(fromMs), addDays(dayOf(settings.bodiesFromMs), -1));
    }
    // The notification ids of the whole run, reserved at once from the recorder's sequence; unused ones are gaps.
    const firstId = await reserveNotificationIds(db, BigInt(orders * MAX_IDS_PER_ORDER));
    const chunks = planChunks(orders, fromMs, nowMs, { sample, random: seededRandom(freshSeed()), firstId });
    io.stderr.write(
      `seeding ${orders.toLocaleString('en')} orders over ${days} day(s) in ${chunks.length} chunk(s) on ` +
        `${Math.min(threads, chunks.length)} thread(s)\n`,
    );
    // It writes a history the service never received: on the record, so that no one takes it for real orders.
    const { totals, ids } = await auditedCommand(
      db,
      { action: 'history_seed', target: `${orders} orders over ${days} day(s)` },
      () => runChunks(io, { url, settings }, chunks, threads, orders),
      ({ totals: t }) => ({
        result: `seeded ${t.orders}`,
        detail: `${t.orders} orders, ${t.refunds} refunds, ${t.notifications} notifications, ${t.events} events`,
      }),
    );
    const written = performance.now();
    await analyzeProjections(db);
    const seconds = (written - started) / 1000;
    io.stderr.write(
      `seeded ${totals.orders.toLocaleString('en')} orders, ${totals.refunds.toLocaleString('en')} refunds, ` +
        `${totals.notifications.toLocaleString('en')} notifications, ${totals.deliveries.toLocaleString('en')} ` +
        `deliveries, ${totals.events.toLocaleString('en')} events kept in the outbox, ${totals.checks.toLocaleString('en')} ` +
        `orders in the reconciliation schedule, in ${seconds.toFixed(1)} s ` +
        `(${Math.round(totals.orders / seconds).toLocaleString('en')} orders/s); analyzed in ` +
        `${((performance.now() - written) / 1000).toFixed(1)} s\n`,
    );
    for (const id of pickSample(chunks, ids, sample)) io.stdout.write(`${id}\n`);
    return EXIT_OK;
  });
}

export function registerHistory(program: Command, io: CliIo, state: CliState): void {
  const history = program.command('history').summary('tools for the history the service keeps');
  const seed = history
    .command('seed')
    .summary('fill a database with a realistic history of N orders over D days')
    .description(
      'Writes the history N orders would have left over D days ending now, through the tables and row shapes of ' +
        'the live intake: about 70 % completed (some with WAITING_FOR_CONFIRMATION first), 5 % canceled, 25 % ' +
        'abandoned at PENDING; a tenth of the completed refunded (each with an extRefundId); about 20 % of deliveries repeats; raw bodies only ' +
        'within BODY_RETENTION; events published. Orders belong to the first POS of SECOND_KEYS. Migrates first. ' +
        'For benchmarks and tests: seed a database no service is writing to. Progress on stderr; --sample K prints ' +
        'K seeded order ids on stdout, one a line, half from the oldest month and half from the newest.\n\n' +
        'Exit codes: 0 seeded; 1 database failure; 2 usage error.',
    )
    .requiredOption('--orders <n>', 'orders to seed', integerOption(1, 100_000_000))
    .requiredOption('--days <d>', 'days of history, ending now', integerOption(1, 3_650))
    .option('--sample <k>', 'print K seeded order ids on stdout', integerOption(0, 100_000))
    .option('--workers <n>', 'threads building and copying rows (default: one per core)', integerOption(1, 64));
  withDatabaseUrl(seed).action(action(state, (options: SeedOptions) => seedHistory(io, options)));
}
