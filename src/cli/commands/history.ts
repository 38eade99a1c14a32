import os from 'node:os';
import type { Command } from 'commander';
import { recordingContext, type Config } from '../../config';
import { prepareDatabase } from '../../database/bootstrap';
import { addDays, DAY_MS, dayOf, daysToMake } from '../../partitions/partitionDays';
import { createLogger } from '../../observability/logger';
import { freshSeed, seededRandom } from '../../simulator/random';
import { fingerprintKey } from '../../verification/secondKeys';
import { auditedCommand } from './audit';
import { readConfig, withDatabase } from './database';
import { action, CliError, EXIT_OK, UsageError, type CliIo, type CliState, type ExitCode } from './io';
import { integerOption, withDatabaseUrl } from './options';
import type { SeedSettings } from '../../seeding/seededOrders';
import { pickSample, planChunks } from '../../seeding/seedPlan';
import { runChunks, SeedingFailed } from '../../seeding/seedThreads';
import { analyzeProjections, makeSeedDays, markDaysPurged, reserveNotificationIds } from '../../seeding/seedQueries';
import { MAX_IDS_PER_ORDER } from '../../seeding/seedWorker';

/**
 * `notification-receiver history seed`: a database with a history of N orders over D days ending now, written as
 * the service would have left it (seededOrders.ts), for the benchmark and the tests to measure what a year of
 * history costs (issue 30). One thread per core builds the rows and copies them in, a slice of time each
 * (src/seeding/: the plan, the threads, the rows and their statements).
 */

interface SeedOptions {
  orders: number;
  days: number;
  sample?: number;
  workers?: number;
  databaseUrl?: string;
}

/** The history ends this long before now: the newest orders' notifications have arrived by then. */
const END_MARGIN_MS = 60_000;

/** What the run keeps of the service's settings: the POS and key of its orders, and the retentions. */
function seedSettings(config: Config, nowMs: number): SeedSettings {
  const key = config.secondKeys[0];
  if (!key) throw new UsageError('SECOND_KEYS: the seeded orders need a POS and its key');
  const startOfDay = (ms: number): number => Date.parse(`${dayOf(ms)}T00:00:00Z`);
  return {
    posId: key.posId,
    keyFingerprint: fingerprintKey(key.key),
    ...recordingContext(config),
    nowMs,
    // The purge takes the bodies of the days wholly older than the retention (src/partitions/partitionMaintenance.ts).
    bodiesFromMs: config.bodyRetentionMs === null ? null : startOfDay(nowMs - config.bodyRetentionMs),
    outboxFromMs: nowMs - config.outboxRetentionMs,
    scheduleFromMs: nowMs - (config.reconciliation?.giveUpMs ?? 7 * DAY_MS),
  };
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
    const seedChunks = (): ReturnType<typeof runChunks> =>
      runChunks((line) => io.stderr.write(line), { url, settings }, chunks, threads, orders).catch((error: unknown) => {
        throw error instanceof SeedingFailed ? new CliError(error.message) : error;
      });
    const { totals, ids } = await auditedCommand(
      db,
      { action: 'history_seed', target: `${orders} orders over ${days} day(s)` },
      seedChunks,
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
