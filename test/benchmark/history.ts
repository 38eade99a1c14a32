/**
 * `npm run bench -- --history <orders>`: what a year of history costs the service (issue 30), against an empty
 * database, in one run.
 *
 * Two databases: one migrated only, one seeded by `notification-receiver history seed` with <orders> orders over
 * HISTORY_DAYS days ending now (then vacuumed, analyzed and checkpointed, as a year-old database would be). Their
 * size on disk gives the size per million orders. Then, BENCH_ROUNDS times, the service is started fresh on each
 * (empty first in even rounds, history first in odd ones, so that the host's drift falls on both alike), warmed
 * up, and measured: the open loop at BENCH_HISTORY_RATE (p50, p99), then the closed loop's throughput. Last, on
 * the seeded database: the admin port's order lookups (old and recent orders), the body purge twice (the second
 * with nothing left), and the intake's p99 at the same rate while retention removes half a year, beside the p99
 * on the idle service just before. Retention destroys the history: it comes last.
 *
 * The service runs with HISTORY_RETENTION and BODY_RETENTION off, so that its own maintainer leaves the seeded
 * history alone, and with ADMIN_TOKEN set. Prints a table with the targets and one JSON line.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import amqp from 'amqplib';
import { databaseSize, migrate, seedHistory, settle } from './historyDatabases';
import { adminLookups, bodyPurges, intakeRun, retentionUnderLoad, warmUp, type IntakeRun } from './historyPhases';
import { printHistoryReport } from './historyReport';
import { AMQP, HISTORY_DAYS, HISTORY_SAMPLE, PG, ROUNDS, SERVICE_MEMORY_LIMIT_MB } from './options';
import { admin, deleteExchangeOf, startService, stop } from './receivers';
import { CGROUP_PREFIX, memoryCgroup, type MemoryCgroup } from './resources';
import { sleep } from '../support/wait';

const DATABASES = ['empty', 'history'] as const;
type Which = (typeof DATABASES)[number];

const progress = (line: string): void => void process.stderr.write(`history: ${line}\n`);

export async function runHistory(orders: number): Promise<void> {
  const suffix = randomBytes(3).toString('hex');
  const names: Record<Which, string> = {
    empty: `bench_history_empty_${suffix}`,
    history: `bench_history_seeded_${suffix}`,
  };
  const urls: Record<Which, string> = { empty: `${PG}/${names.empty}`, history: `${PG}/${names.history}` };
  const exchange = `bench.payment.events.${suffix}`;
  const token = randomBytes(24).toString('hex');
  // The service's own maintainer would remove the seeded history past 180 days at its start.
  const serviceEnv = { ADMIN_TOKEN: token, HISTORY_RETENTION: 'off', BODY_RETENTION: 'off' };
  const cgroup: MemoryCgroup =
    SERVICE_MEMORY_LIMIT_MB > 0
      ? memoryCgroup(`${CGROUP_PREFIX}${suffix}`, SERVICE_MEMORY_LIMIT_MB)
      : { unavailable: 'BENCH_SERVICE_MEMORY_LIMIT_MB=0' };
  const children = new Set<ChildProcess>();
  let cleaned: Promise<void> | null = null;
  const cleanup = (): Promise<void> =>
    (cleaned ??= (async () => {
      await Promise.all([...children].map(stop));
      const connection = await amqp.connect(AMQP);
      await deleteExchangeOf(await connection.createChannel(), exchange);
      await connection.close();
      for (const name of Object.values(names)) await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      if ('remove' in cgroup) cgroup.remove();
    })());
  // A run takes minutes: one stopped by hand still drops its databases.
  const interrupted = (): void => void cleanup().finally(() => process.exit(130));
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);

  try {
    // The downstream consumer, in a process of its own as in the default mode (run.ts).
    const consumer = fork(path.join(__dirname, 'run.js'), ['--consumer', exchange], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    children.add(consumer);
    await new Promise((resolve) => consumer.once('message', resolve));

    progress('migrating both databases');
    for (const which of DATABASES) await migrate(urls[which]);
    progress(`seeding ${orders} orders over ${HISTORY_DAYS} days`);
    const seed = await seedHistory(urls.history, orders, HISTORY_DAYS, HISTORY_SAMPLE);
    progress(`seeded in ${seed.seconds.toFixed(1)} s (${seed.ordersPerSecond} orders/s); vacuum, analyze, checkpoint`);
    const settleSeconds = await settle(urls.history);
    await settle(urls.empty);
    const sizes = { empty: await databaseSize(urls.empty), history: await databaseSize(urls.history) };

    /** The service started fresh on a database for `work`, then stopped. */
    const onService = async <T>(which: Which, work: (s: Awaited<ReturnType<typeof startService>>) => Promise<T>) => {
      const service = await startService(urls[which], exchange, cgroup, { env: serviceEnv });
      children.add(service.child);
      try {
        return await work(service);
      } finally {
        await stop(service.child);
        children.delete(service.child);
      }
    };

    const intake: Record<Which, IntakeRun[]> = { empty: [], history: [] };
    for (let round = 0; round < ROUNDS; round++) {
      for (const which of round % 2 === 0 ? DATABASES : [...DATABASES].reverse()) {
        const run = await onService(which, async (service) => {
          await warmUp(service, `${suffix}${which[0]}${round}w`);
          return intakeRun(service, `${suffix}${which[0]}${round}`);
        });
        intake[which].push(run);
        progress(
          `round ${round + 1}, ${which}: ${run.closed.rps.toFixed(0)}/s closed loop; ` +
            `p50 ${run.open.p50.toFixed(1)} ms, p99 ${run.open.p99.toFixed(1)} ms open loop (${run.open.failures + run.closed.non2xx} non-2xx)`,
        );
        // Postgres works off the burst (its checkpoint, autovacuum) before the next service starts.
        await sleep(3000);
      }
    }

    const last = await onService('history', async (service) => {
      await warmUp(service, `${suffix}hw`);
      progress('admin lookups');
      const lookups = await adminLookups(service, token, seed.sampled);
      progress('body purge, twice');
      const purges = await bodyPurges(urls.history);
      await sleep(2000);
      const beforeRetention = await databaseSize(urls.history);
      progress('retention under load');
      const retention = await retentionUnderLoad(service, urls.history, `${suffix}ret`);
      return { lookups, purges, retention, beforeRetention, afterRetention: await databaseSize(urls.history) };
    });

    printHistoryReport({
      orders,
      cgroup,
      seed: { seconds: seed.seconds, ordersPerSecond: seed.ordersPerSecond, settleSeconds },
      sizes,
      intake,
      ...last,
    });
  } finally {
    await cleanup();
  }
}
