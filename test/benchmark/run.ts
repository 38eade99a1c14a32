/**
 * `npm run bench`: the service against the simplest possible receiver, side by side.
 *
 * Starts the built service (production mode, relay on, its own database and exchange, a consumer
 * bound to the exchange) and a reference receiver written here (plain node:http, the same MD5
 * check, ONE `INSERT ... ON CONFLICT DO NOTHING` of the raw body per request, a pool of 10), then
 * alternates closed-loop runs of both several times and reports medians, plus open-loop latency
 * at a fixed rate with the commit-to-confirm lag of what it produced (once on the warmed-up service,
 * once after the saturating rounds; the reference's open loop at the same rate right after each),
 * duplicates-only throughput (beside a receiver that does nothing but read the body and answer
 * 200: the floor of any Node receiver here), peak RSS and time to ready. Each
 * closed-loop run also measures the CPU per notification of every process involved (the receiver,
 * Postgres, RabbitMQ, the consumer, the load generator), and so the rate the machine's cores would
 * allow that receiver. The
 * downstream consumer bound to the exchange runs in a process of its own. The service runs with the
 * chart's memory limit (a memory cgroup, where the machine lets root make one), because Node sizes
 * V8's heap from it.
 * Prints a table, then one JSON line with every figure.
 *
 * `npm run bench -- --history <orders>` runs the history mode instead (history.ts): the service on an empty
 * database and on one seeded with a year of <orders> orders, alternated, then admin lookups, purge and retention
 * on the seeded one; BENCH_HISTORY_RATE (500) is its open loop's rate.
 *
 * Options (environment): BENCH_ROUNDS (3), BENCH_SECONDS (10), BENCH_RATE (1000),
 * BENCH_CONNECTIONS (32), BENCH_PROFILE=1 (write a CPU profile of the service to bench.cpuprofile),
 * BENCH_SERVICE_NODE_FLAGS (Node.js flags for the service's process only; default: the V8 heap flags
 * the chart gives the server, --max-semi-space-size=<heapSemiSpaceMb> and, when heapLimitMb is set,
 * --max-old-space-size=<heapLimitMb>), BENCH_SERVICE_MEMORY_LIMIT_MB (the service's memory limit; default:
 * the chart's resources.limits.memory; 0: none).
 *
 * `npm run bench -- --ab <git ref> [options]` runs the A/B mode instead (ab.ts): the ref's service against this
 * tree's, round by round on fresh databases, and the paired ratios' geometric mean with its confidence interval
 * (its options: abOptions.ts; a bad one prints the usage).
 *
 * `npm run bench -- --console [<orders>]` runs the console mode instead (console.ts): each console page's p50 and
 * p99 with a year of history (BENCH_CONSOLE_DATABASE_URL: a database already seeded; BENCH_CONSOLE_REQUESTS: 200).
 *
 * `npm run bench -- --failover [<notifications>]` runs the failover mode instead (failover.ts): the recovery's time
 * after a failover that lost that many acknowledged notifications (10,000 by default).
 *
 * `npm run bench -- --profile` runs the profile instead (profile.ts, profileWal.ts): Postgres's work per new
 * notification by statement, table, index and plan node; `--cores` the cores mode (cores.ts): throughput with the
 * receivers and Postgres on one core, then two. Both on a Postgres cluster of their own (benchCluster.ts).
 *
 * `npm run bench -- --memory [<orders>]` runs the memory mode instead (memory.ts): the heap the recorder's kept state
 * takes per entry, at its default and at its maximum, and how soon a busy shop's day fills it (25,000 orders).
 *
 * The modules, by concern: options.ts (the environment and the chart's settings), receivers.ts (the
 * service, the reference, the receiver that does nothing, the consumer), load.ts (the workload and
 * the closed and open loops), resources.ts (memory cgroup, RSS, CPU by process), serviceMetrics.ts
 * (the service's own counters), phases.ts (what a run does, phase by phase), report.ts (table and
 * JSON line); the history mode's history.ts (its run), historyDatabases.ts, historyPhases.ts, historyReport.ts;
 * the A/B mode's ab.ts (its rounds), abOptions.ts, abRef.ts (the ref's build), abReport.ts.
 */
import { fork, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import amqp from 'amqplib';
import { freePort } from '../support/net';
import { closedLoop, openLoop, take, workload } from './load';
import { AMQP, PG, RATE, SERVICE_MEMORY_LIMIT_MB, WARM_UP_SECONDS } from './options';
import { abMain } from './ab';
import { runConsole } from './console';
import { runCores } from './cores';
import { runFailover } from './failover';
import { runHistory } from './history';
import { runProfile } from './profile';
import { duplicatesRounds, latencyPhase, referenceLatencyPhase, throughputRounds, type OtherReceivers } from './phases';
import {
  admin,
  deleteExchangeOf,
  runBare,
  runConsumer,
  runReference,
  startService,
  stop,
  waitForPort,
} from './receivers';
import { printReport } from './report';
import { runMemory } from './memory';
import { CGROUP_PREFIX, memoryCgroup, memoryMb, watchService, type MemoryCgroup } from './resources';
import { sleep } from '../support/wait';

async function main(): Promise<void> {
  const suffix = randomBytes(3).toString('hex');
  const serviceDb = `bench_service_${suffix}`;
  const referenceDb = `bench_reference_${suffix}`;
  const exchange = `bench.payment.events.${suffix}`;
  await admin(`CREATE DATABASE ${referenceDb}`);

  // The downstream consumer runs in a process of its own, as a downstream service would: in the
  // load generator's process it would take event-loop turns from the load.
  const consumer = fork(__filename, ['--consumer', exchange], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  await new Promise((resolve) => consumer.once('message', resolve));

  const referencePort = await freePort();
  const reference = spawn(
    process.execPath,
    [__filename, '--reference', String(referencePort), `${PG}/${referenceDb}`],
    {
      stdio: ['ignore', 'inherit', 'inherit'],
    },
  );
  const barePort = await freePort();
  const bare = spawn(process.execPath, [__filename, '--bare', String(barePort)], {
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const serviceUrl = `${PG}/${serviceDb}`;
  // The service runs with the pod's memory limit, as deployed (Node sizes its heap from it).
  const cgroup: MemoryCgroup =
    SERVICE_MEMORY_LIMIT_MB > 0
      ? memoryCgroup(`${CGROUP_PREFIX}${suffix}`, SERVICE_MEMORY_LIMIT_MB)
      : { unavailable: 'BENCH_SERVICE_MEMORY_LIMIT_MB=0' };

  // Stopped in the end whatever happened: a failed phase must not leave the service running on a dropped database.
  let service: Awaited<ReturnType<typeof startService>> | undefined;
  try {
    // First start creates the database and applies migrations; the time to ready is measured on restarts.
    await stop((await startService(serviceUrl, exchange, cgroup)).child);
    const readyTimes: number[] = [];
    for (let i = 0; i < 3; i++) {
      const s = await startService(serviceUrl, exchange, cgroup);
      readyTimes.push(s.readyMs);
      await stop(s.child);
    }
    service = await startService(serviceUrl, exchange, cgroup, { profile: process.env.BENCH_PROFILE === '1' });
    const watcher = watchService(service.child.pid as number, service.adminPort);
    await Promise.all([waitForPort(referencePort), waitForPort(barePort)]);

    // Both receivers warm up first (JIT compilation, connection pools, caches), so that what is
    // measured is a receiver that has been running. The service warms up at the open loop's rate:
    // 3 s of closed loop left V8 still optimizing its code in the open loop that followed (its
    // compiler threads took about a fifth of the service's CPU), and a longer closed loop leaves
    // Postgres working off the burst (checkpoint, autovacuum) in it (docs/PERFORMANCE.md).
    await openLoop(service.port, take(workload(`${suffix}warm`), RATE * WARM_UP_SECONDS), RATE, WARM_UP_SECONDS);
    await closedLoop(referencePort, workload(`${suffix}warm`), 3);

    // Latency at a fixed rate, twice: on the warmed-up service (steady), and again after the
    // saturating rounds below, while the database still works off their aftermath (autovacuum
    // of the rows they added, the checkpoint their WAL triggers).
    await sleep(2000);
    const steady = await latencyPhase(service, watcher, 'open loop, steady', serviceUrl, `${suffix}steady`);
    const referenceSteady = await referenceLatencyPhase(referencePort, `${suffix}refsteady`);
    const others: OtherReceivers = {
      referencePort,
      referencePid: reference.pid as number,
      barePort,
      barePid: bare.pid as number,
      consumerPid: consumer.pid as number,
      databases: [serviceDb, referenceDb],
    };
    const throughput = await throughputRounds(service, others, watcher, suffix);
    const duplicates = await duplicatesRounds(service, others, watcher, suffix);

    await sleep(2000);
    const afterBursts = await latencyPhase(
      service,
      watcher,
      'open loop, after the bursts',
      serviceUrl,
      `${suffix}after`,
    );
    const referenceAfterBursts = await referenceLatencyPhase(referencePort, `${suffix}refafter`);
    const rss = memoryMb(service.child.pid as number, 'VmHWM');
    const peak = watcher.peak();
    const consumed = await new Promise<number>((resolve) => {
      consumer.once('message', (count) => resolve(Number(count)));
      consumer.send('count');
    });
    await stop(service.child);
    printReport({
      cgroup,
      readyTimes,
      steady,
      referenceSteady,
      throughput,
      duplicates,
      afterBursts,
      referenceAfterBursts,
      rss,
      peak,
      consumed,
    });
  } finally {
    await Promise.all([stop(reference), stop(bare), ...(service ? [stop(service.child)] : [])]);
    consumer.disconnect();
    await new Promise((resolve) => (consumer.exitCode === null ? consumer.once('exit', resolve) : resolve(undefined)));
    const cleanup = await amqp.connect(AMQP);
    await deleteExchangeOf(await cleanup.createChannel(), exchange);
    await cleanup.close();
    await admin(`DROP DATABASE IF EXISTS ${serviceDb} WITH (FORCE)`);
    await admin(`DROP DATABASE IF EXISTS ${referenceDb} WITH (FORCE)`);
    if ('remove' in cgroup) cgroup.remove();
  }
}

/** What a mode counts (`--<mode> <count>`): the range it takes, and its default when it may be left out. */
interface CountArgument {
  what: string;
  least: number;
  most: number;
  byDefault?: number;
}

/** A mode's count, or a usage error naming the mode, what it counts and the range (exit 2). */
function countOf(mode: string, value: string | undefined, { what, least, most, byDefault }: CountArgument): number {
  const count = Number(value ?? byDefault);
  if (Number.isInteger(count) && count >= least && count <= most) return count;
  const fallback = byDefault === undefined ? '' : ` (default ${byDefault})`;
  process.stderr.write(`--${mode} takes a number of ${what}, from ${least} to ${most}${fallback}\n`);
  return process.exit(2);
}

/** The history mode: at least a thousand orders to seed, at most a hundred million. */
const historyRun = (value: string | undefined): (() => Promise<void>) => {
  const orders = countOf('history', value, { what: 'orders to seed', least: 1000, most: 100_000_000 });
  return () => runHistory(orders);
};

/** The console mode: 2 million orders to seed unless told otherwise. */
const consoleRun = (value: string | undefined): (() => Promise<void>) => {
  const range = { what: 'orders to seed', least: 1000, most: 100_000_000, byDefault: 2_000_000 };
  const orders = countOf('console', value, range);
  return () => runConsole(orders);
};

/** The memory mode: 25,000 orders to record unless told otherwise (both kept states filled). */
const memoryRun = (value: string | undefined): (() => Promise<void>) => {
  const range = { what: 'orders to record', least: 1000, most: 1_000_000, byDefault: 25_000 };
  const orders = countOf('memory', value, range);
  return () => runMemory(orders);
};

/** The failover mode: 10,000 notifications to lose unless told otherwise. */
const failoverRun = (value: string | undefined): (() => Promise<void>) => {
  const range = { what: 'notifications to lose', least: 100, most: 1_000_000, byDefault: 10_000 };
  const notifications = countOf('failover', value, range);
  return () => runFailover(notifications);
};

const USAGE = `usage: npm run bench [-- <mode>]
  (no mode)                 the service against the reference receiver (options: BENCH_* variables, docs/PERFORMANCE.md)
  --ab <git ref> [options]  the ref's service against this tree's, round by round (a bad option lists its options)
  --history <orders>        an empty database against one seeded with a year of <orders> orders
  --console [<orders>]      each console page's p50 and p99 with a year of history (default 2000000 orders)
  --failover [<n>]          the recovery after a failover that lost n acknowledged notifications (default 10000)
  --profile                 Postgres's work per new notification: by statement, table, index and plan (its own cluster)
  --cores                   the service's and the reference's throughput with them and Postgres on 1 core, then 2
  --memory [<orders>]       the heap the recorder's kept state takes, per entry and at its maximum (default 25000)
`;
const MODES = [
  '--history',
  '--console',
  '--failover',
  '--memory',
  '--profile',
  '--cores',
  '--reference',
  '--bare',
  '--consumer',
];

if (process.argv[2] === '--help' || process.argv[2] === '-h') {
  process.stdout.write(USAGE);
} else if (process.argv.slice(2).some((arg) => arg === '--ab' || arg.startsWith('--ab='))) {
  abMain(process.argv.slice(2));
} else if (process.argv[2] === '--reference') {
  void runReference(Number(process.argv[3]), process.argv[4] as string);
} else if (process.argv[2] === '--bare') {
  runBare(Number(process.argv[3]));
} else if (process.argv[2] === '--consumer') {
  void runConsumer(process.argv[3] as string);
} else if (process.argv[2] !== undefined && !MODES.includes(process.argv[2])) {
  process.stderr.write(`unknown argument ${process.argv[2]}\n${USAGE}`);
  process.exit(2);
} else {
  const run =
    process.argv[2] === '--history'
      ? historyRun(process.argv[3])
      : process.argv[2] === '--console'
        ? consoleRun(process.argv[3])
        : process.argv[2] === '--failover'
          ? failoverRun(process.argv[3])
          : process.argv[2] === '--memory'
            ? memoryRun(process.argv[3])
            : process.argv[2] === '--profile'
              ? runProfile
              : process.argv[2] === '--cores'
                ? runCores
                : main;
  run().catch((error: unknown) => {
    process.stderr.write(`benchmark failed: ${(error as Error).stack ?? String(error)}\n`);
    process.exit(1);
  });
}
