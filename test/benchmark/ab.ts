/**
 * `npm run bench -- --ab <git ref> [options]`: this tree's service (B) against a git ref's (A), round by round.
 *
 * The ref is built in a temporary tree (abRef.ts). Then, `--rounds` times, each side in turn (A first in odd
 * rounds, B first in even ones, so that a drift of the machine within a round falls on both alike): a fresh
 * database and exchange, a consumer bound to it in a process of its own, the side's service started on them as
 * its chart deploys it (its own V8 flags and memory limit), warmed up by a closed loop, then measured by a closed
 * loop of `--seconds` on the workload asked, until every event it caused has reached the consumer; then all of it
 * stopped and dropped. Each round gives one pair: B's throughput over A's. The pairs are summarized on the log
 * scale (abReport.ts): geometric mean with a 95 % confidence interval, median, rounds won; and each side's CPU per
 * new notification (a repeat is not new), by process.
 *
 * Bad input (options, a ref that does not exist, has no benchmark, does not build, or whose service does not
 * start) says so and exits 2 before anything is left behind. Whatever happens after (Ctrl-C, a crash), the run
 * stops its processes, drops its databases, deletes its exchanges and removes the ref's tree before it exits.
 */
import { execFile, fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { promisify } from 'node:util';
import amqp from 'amqplib';
import pg from 'pg';
import { AB_USAGE, parseAbOptions, type AbOptions } from './abOptions';
import { BadRef, buildRef, isRunning, removeLeftTrees, type RefBuild } from './abRef';
import { printAbReport, printPair, type Pair, type Side, type SideResult } from './abReport';
import { closedLoop, madeAhead, workload, type Notification } from './load';
import { AHEAD_PER_SECOND, AMQP, PG, ROOT, serviceMemoryLimitMb, serviceNodeFlags } from './options';
import { admin, deleteExchangeOf, startService, stop, THIS_BUILD, type Service } from './receivers';
import {
  CGROUP_PREFIX,
  cpuMeter,
  memoryCgroup,
  perItemUs,
  type CpuByGroup,
  type CpuUsed,
  type MemoryCgroup,
} from './resources';
import { sleep } from '../support/wait';

/** The run's databases are named bench_ab_<pid>_<suffix>_<round><side>. */
const DATABASE_PREFIX = 'bench_ab_';

const progress = (line: string): void => void process.stderr.write(`ab: ${line}\n`);

/**
 * The A/B mode's entry: reads the options, runs, and returns the exit status (0; 2 for bad input; 130 when
 * interrupted). `repository` is where the ref is read from (this tree's repository unless a test says otherwise).
 */
export async function runAb(args: readonly string[], repository = ROOT, signal?: AbortSignal): Promise<number> {
  const options = parseAbOptions(args);
  if ('error' in options) {
    process.stderr.write(`${options.error}\n\n${AB_USAGE}`);
    return 2;
  }
  removeLeftTrees();
  const builds: RefBuild[] = [];
  try {
    for (const ref of options.b === undefined ? [options.ref] : [options.ref, options.b]) {
      builds.push(await buildRef(ref, { repository, current: ROOT, signal, progress }));
    }
  } catch (error) {
    for (const built of builds) built.remove();
    if (signal?.aborted) return 130;
    if (!(error instanceof BadRef)) throw error;
    process.stderr.write(`--ab ${error.message}\n`);
    return 2;
  }
  try {
    const [a, b] = builds as [RefBuild, RefBuild | undefined];
    const sides: [Side, Side] = [
      refSide('A', a),
      b
        ? refSide('B', b)
        : { name: 'B', label: await thisTree(), build: THIS_BUILD, memoryLimitMb: serviceMemoryLimitMb(ROOT) },
    ];
    return await compare(options, sides, signal);
  } finally {
    for (const built of builds) built.remove();
  }
}

/** A side whose service is a ref's, built in its temporary tree, with that tree's chart flags and memory limit. */
const refSide = (name: 'A' | 'B', built: RefBuild): Side => ({
  name,
  label: `${built.ref} (${built.commit.slice(0, 8)})`,
  build: { root: built.root, nodeFlags: serviceNodeFlags(built.root) },
  memoryLimitMb: serviceMemoryLimitMb(built.root),
  built,
});

/** The rounds, with everything they make tracked and removed at the end whatever happens. */
async function compare(options: AbOptions, sides: [Side, Side], signal?: AbortSignal): Promise<number> {
  await removeLeftDatabases();
  const suffix = randomBytes(3).toString('hex');
  // Each side's service in a memory cgroup of its own, with its chart's limit (both run at once).
  const cgroups = {
    A: memoryCgroup(`${CGROUP_PREFIX}${suffix}a`, sides[0].memoryLimitMb),
    B: memoryCgroup(`${CGROUP_PREFIX}${suffix}b`, sides[1].memoryLimitMb, false),
  };
  const made: Made = { databases: new Set(), exchanges: new Set(), children: new Set() };
  const aborted = new Promise<never>((_resolve, reject) => {
    const abort = (): void => reject(new Error('interrupted'));
    if (signal?.aborted) abort();
    signal?.addEventListener('abort', abort, { once: true });
  });
  aborted.catch(() => undefined);
  /** Waits for a step, or for an interruption, whichever comes first. */
  const step = <T>(work: Promise<T>): Promise<T> => Promise.race([work, aborted]);

  progress(
    `A: ${sides[0].label}; B: ${sides[1].label}; ${options.rounds} rounds of ` +
      `${options.seconds} s a side in slices of ${options.sliceSeconds} s, after ${options.warmUpSeconds} s of ` +
      `warm-up; ${options.connections} connections`,
  );
  const pairs: Pair[] = [];
  try {
    for (let round = 0; round < options.rounds; round++) {
      const order = round % 2 === 0 ? sides : ([sides[1], sides[0]] as const);
      const up: RunningSide[] = [];
      for (const side of order) {
        try {
          up.push(await bringUp(side, round, suffix, options, cgroups[side.name], made, step));
        } catch (error) {
          if (round === 0 && side.name === 'A' && !signal?.aborted) {
            throw new BadRef(
              `${side.label}: its service did not start as the benchmark runs it: ${(error as Error).message}`,
            );
          }
          throw error;
        }
      }
      const pair = await measureRound(up as [RunningSide, RunningSide], options, step);
      for (const running of up) await takeDown(running, made);
      pairs.push(pair);
      printPair(round + 1, pair);
    }
    printAbReport(options, sides, pairs, cgroups.B);
    return 0;
  } catch (error) {
    if (signal?.aborted) {
      progress('interrupted: stopping and dropping what the run made');
      return 130;
    }
    if (error instanceof BadRef) {
      process.stderr.write(`--ab ${error.message}\n`);
      return 2;
    }
    throw error;
  } finally {
    await Promise.all([...made.children].map((child) => stop(child)));
    await deleteExchanges(made.exchanges);
    for (const database of made.databases) await admin(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    for (const cgroup of Object.values(cgroups)) if ('remove' in cgroup) cgroup.remove();
  }
}

/** What a run makes, so that it can remove it whatever happens. */
interface Made {
  databases: Set<string>;
  exchanges: Set<string>;
  children: Set<ChildProcess>;
}

/** A side's service running in a round, with its consumer and its stream of notifications. */
interface RunningSide {
  side: Side;
  database: string;
  exchange: string;
  service: Service;
  consumer: ChildProcess;
  /** What the consumer has received so far. */
  consumed(): Promise<number>;
  stream: { next: () => Notification; freshShare: () => number };
}

/** A side's fresh database and exchange, its consumer bound, its service started on them and ready. */
async function bringUp(
  side: Side,
  round: number,
  suffix: string,
  options: AbOptions,
  cgroup: MemoryCgroup,
  made: Made,
  step: Step,
): Promise<RunningSide> {
  const database = `${DATABASE_PREFIX}${process.pid}_${suffix}_${round}${side.name.toLowerCase()}`;
  const exchange = `bench.ab.${suffix}.${round}.${side.name}`;
  made.databases.add(database);
  await admin(`CREATE DATABASE ${database}`);
  made.exchanges.add(exchange);
  const consumer = fork(path.join(__dirname, 'run.js'), ['--consumer', exchange], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  made.children.add(consumer);
  await step(new Promise((resolve) => consumer.once('message', resolve)));
  const service = await step(startService(`${PG}/${database}`, exchange, cgroup, { build: side.build }));
  made.children.add(service.child);
  const seed = `${suffix}${round}${side.name}`;
  return {
    side,
    database,
    exchange,
    service,
    consumer,
    consumed: () =>
      new Promise<number>((resolve) => {
        consumer.once('message', (count) => resolve(Number(count)));
        consumer.send('count');
      }),
    stream: counting(madeAhead(workload(seed, options.workload), AHEAD_PER_SECOND * options.seconds)),
  };
}

/** Stops a side's service and consumer, deletes its exchange and drops its database. */
async function takeDown(running: RunningSide, made: Made): Promise<void> {
  for (const child of [running.service.child, running.consumer]) {
    await stop(child);
    made.children.delete(child);
  }
  await deleteExchanges([running.exchange]);
  made.exchanges.delete(running.exchange);
  await admin(`DROP DATABASE IF EXISTS ${running.database} WITH (FORCE)`);
  made.databases.delete(running.database);
}

type Step = <T>(work: Promise<T>) => Promise<T>;

/** The CPU groups a side's slices take from what both sides share: whatever ran while the side was loaded. */
const SHARED = ['postgresServer', 'rabbitmq', 'loadGenerator', 'other'] as const;

/**
 * One round: both services warmed up, then measured in alternating slices of closed loop (first, second,
 * second, first, ...: each side's slices centred on the same moment), until each has had `--seconds`; then until
 * every event they caused has reached their consumers. A side's own processes (its service, its consumer, its
 * database's backends) are counted whenever they run; what both share (RabbitMQ, the load generator, Postgres's
 * own processes, the rest of the machine) goes to the side loaded at the time, and after the last slice to each
 * in proportion to the events it still published.
 */
async function measureRound(up: [RunningSide, RunningSide], options: AbOptions, step: Step): Promise<Pair> {
  for (const running of up) {
    if (options.warmUpSeconds > 0) {
      await step(
        closedLoop(running.service.port, warmUpStream(running, options), options.warmUpSeconds, options.connections),
      );
    }
  }
  const eventsBefore = await Promise.all(up.map((running) => step(running.consumed())));
  const meter = cpuMeter({
    pids: new Map(
      up.flatMap(({ side, service, consumer }) => [
        [service.child.pid as number, `${side.name}.receiver`],
        [consumer.pid as number, `${side.name}.consumer`],
      ]),
    ),
    databases: new Map(up.map(({ side, database }) => [database, `${side.name}.postgres`])),
  });
  const totals = up.map(() => ({ requests: 0, seconds: 0, non2xx: 0, shared: sharedZero() }));
  const all: Record<string, number> = {};
  /** Adds a lap: every group to the round's sums, and what both share to side `which` (`share` of it). */
  const addLap = (used: CpuUsed, shares: readonly number[]): void => {
    for (const [group, ticks] of Object.entries(used.groups)) all[group] = (all[group] ?? 0) + ticks;
    shares.forEach((share, which) => {
      const shared = (totals[which] as (typeof totals)[number]).shared;
      for (const group of SHARED) shared[group] += share * (used.groups[group] ?? 0);
      shared.machine += share * (used.machine.total - used.machine.idle);
    });
  };
  const slices = Math.ceil(options.seconds / options.sliceSeconds);
  const sliceSeconds = options.seconds / slices;
  for (let slice = 0; slice < 2 * slices; slice++) {
    const which = [0, 1, 1, 0][slice % 4] as number;
    const running = up[which] as RunningSide;
    const loop = await step(closedLoop(running.service.port, running.stream.next, sliceSeconds, options.connections));
    const total = totals[which] as (typeof totals)[number];
    total.requests += loop.requests;
    total.seconds += loop.seconds;
    total.non2xx += loop.non2xx;
    addLap(meter.lap(), which === 0 ? [1, 0] : [0, 1]);
  }
  // The events the last slices caused are published after them: wait until both consumers have had them all
  // (their counts stay put for a second), so that each side's CPU includes its relay's work.
  const drainStarted = performance.now();
  const atDrain = await Promise.all(up.map((running) => step(running.consumed())));
  const [last, lastEvent] = [[...atDrain], up.map(() => drainStarted)];
  for (let quiet = false; !quiet && performance.now() - drainStarted < 60_000;) {
    await step(sleep(200));
    const now = await Promise.all(up.map((running) => step(running.consumed())));
    now.forEach((count, i) => {
      if (count !== last[i]) [last[i], lastEvent[i]] = [count, performance.now()];
    });
    quiet = lastEvent.every((at) => performance.now() - at >= 1000);
  }
  const drainSeconds = (performance.now() - drainStarted) / 1000;
  const drained = up.map((_running, i) => (last[i] as number) - (atDrain[i] as number));
  const drainedAll = drained.reduce((x, y) => x + y, 0);
  const drainShares = drained.map((events) => (drainedAll === 0 ? 0.5 : events / drainedAll));
  addLap(meter.stop(), drainShares);

  const results = up.map((running, i): SideResult => {
    const { requests, seconds, non2xx, shared } = totals[i] as (typeof totals)[number];
    const newNotifications = Math.round(requests * running.stream.freshShare());
    const own = (group: string): number => all[`${running.side.name}.${group}`] ?? 0;
    const per = (ticks: number): number => perItemUs(ticks, newNotifications);
    const cpu: CpuByGroup = {
      receiver: per(own('receiver')),
      postgres: per(own('postgres') + shared.postgresServer),
      rabbitmq: per(shared.rabbitmq),
      consumer: per(own('consumer')),
      loadGenerator: per(shared.loadGenerator),
      other: per(shared.other),
      machine: per(shared.machine),
    };
    return {
      rps: requests / Math.max(0.01, seconds),
      requests,
      newNotifications,
      non2xx,
      events: (last[i] as number) - (eventsBefore[i] as number),
      drainMs: Math.round((lastEvent[i] as number) - drainStarted),
      cpu,
      // Ticks are hundredths of a second: per second, the share of one core in percent.
      othersCorePercent: Math.round(shared.other / (seconds + (drainShares[i] as number) * drainSeconds)),
    };
  });
  const of = (name: 'A' | 'B'): SideResult =>
    results[up.findIndex((running) => running.side.name === name)] as SideResult;
  return { first: up[0].side.name, a: of('A'), b: of('B') };
}

const sharedZero = () => ({ postgresServer: 0, rabbitmq: 0, loadGenerator: 0, other: 0, machine: 0 });

/** The warm-up's notifications: of the same workload, never the measured ones. */
const warmUpStream = (running: RunningSide, options: AbOptions): (() => Notification) =>
  workload(`${running.database}w`, options.workload);

/** A stream that counts what the load generator took of it: how many were new, how many repeats. */
function counting(stream: () => Notification): { next: () => Notification; freshShare: () => number } {
  let [fresh, repeats] = [0, 0];
  return {
    next: () => {
      const notification = stream();
      if (notification.repeat) repeats++;
      else fresh++;
      return notification;
    },
    freshShare: () => fresh / Math.max(1, fresh + repeats),
  };
}

/** This tree, in words: its HEAD, and whether it has changes not committed (they are in what runs). */
async function thisTree(): Promise<string> {
  const git = async (...args: string[]): Promise<string> =>
    (await promisify(execFile)('git', args, { cwd: ROOT })).stdout.trim();
  const [head, changes] = await Promise.all([git('rev-parse', '--short=8', 'HEAD'), git('status', '--porcelain')]);
  return `this tree (${head}${changes === '' ? '' : ' with changes not committed'})`;
}

async function deleteExchanges(exchanges: Iterable<string>): Promise<void> {
  const names = [...exchanges];
  if (names.length === 0) return;
  const connection = await amqp.connect(AMQP);
  try {
    const channel = await connection.createChannel();
    for (const exchange of names) await deleteExchangeOf(channel, exchange);
  } finally {
    await connection.close();
  }
}

/**
 * Drops the databases of earlier A/B runs that were killed before dropping their own: those whose pid, in the
 * name, no longer runs on this machine. Only where Postgres runs on this machine too (else the pid says nothing).
 */
async function removeLeftDatabases(): Promise<void> {
  if (!['127.0.0.1', 'localhost', '[::1]'].includes(new URL(PG).hostname)) return;
  const client = new pg.Client({ connectionString: `${PG}/postgres` });
  await client.connect();
  try {
    const { rows } = await client.query<{ datname: string }>(
      "SELECT datname FROM pg_database WHERE datname LIKE 'bench\\_ab\\_%'",
    );
    for (const { datname } of rows) {
      const pid = Number(/^bench_ab_(\d+)_[0-9a-f]+_\d+[ab]$/.exec(datname)?.[1]);
      if (pid && !isRunning(pid)) await client.query(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`);
    }
  } finally {
    await client.end();
  }
}

/** `--ab`: runs the A/B mode and exits with its status; Ctrl-C (or SIGTERM) stops it cleanly. */
export function abMain(args: readonly string[]): void {
  const controller = new AbortController();
  const interrupt = (): void => controller.abort();
  process.once('SIGINT', interrupt);
  process.once('SIGTERM', interrupt);
  runAb(args, ROOT, controller.signal).then(
    (status) => process.exit(status),
    (error: unknown) => {
      process.stderr.write(`benchmark failed: ${(error as Error).stack ?? String(error)}\n`);
      process.exit(1);
    },
  );
}
