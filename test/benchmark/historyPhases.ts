/**
 * The phases of the history mode (history.ts): the intake on one database, the admin port's order lookups, the
 * body purge, and the intake while retention removes half the history.
 */
import http from 'node:http';
import { ADMIN_ADMISSION } from '../../src/admin/adminListener';
import type { PurgeReport } from '../../src/cli/commands/purge';
import { cli } from './historyDatabases';
import {
  BENCH_WORKLOAD,
  closedLoop,
  latencySummary,
  madeAhead,
  openLoop,
  openLoopSamples,
  take,
  workload,
} from './load';
import {
  AHEAD_PER_SECOND,
  BODY_PURGE_DAYS,
  HISTORY_RATE,
  HISTORY_RETENTION_DAYS,
  SECONDS,
  WARM_UP_SECONDS,
} from './options';
import type { Service } from './receivers';
import { quantile, round2 } from './stats';
import { sleep } from '../support/wait';

/** The history mode's traffic: random order ids, as a shop's are, whose new orders land all over large indexes. */
const traffic = (seed: string) => workload(seed, { ...BENCH_WORKLOAD, randomIds: true });

/** The service warmed up at the history rate, as the default mode warms it (JIT, pools, caches). */
export async function warmUp(service: Service, seed: string): Promise<void> {
  const warm = take(traffic(seed), HISTORY_RATE * WARM_UP_SECONDS);
  await openLoop(service.port, warm, HISTORY_RATE, WARM_UP_SECONDS);
  await sleep(2000);
}

/**
 * The intake on a warmed-up service: the open loop at the history rate first (before a burst leaves Postgres
 * work to do), then the closed loop's throughput.
 */
export async function intakeRun(service: Service, seed: string) {
  const open = await openLoop(service.port, take(traffic(`${seed}o`), HISTORY_RATE * SECONDS), HISTORY_RATE, SECONDS);
  // Made (signed) before the run, so that the load generator spends the run sending.
  const stream = madeAhead(traffic(`${seed}c`), AHEAD_PER_SECOND * SECONDS);
  const closed = await closedLoop(service.port, stream, SECONDS);
  return { open, closed };
}

/** What one intake run measured. */
export type IntakeRun = Awaited<ReturnType<typeof intakeRun>>;

/** GET /orders/{id} on the admin port with the token: its status and how long it took, in ms. */
function lookup(agent: http.Agent, adminPort: number, token: string, orderId: string) {
  const started = performance.now();
  return new Promise<{ status: number; ms: number }>((resolve) => {
    http
      .get(
        {
          host: '127.0.0.1',
          port: adminPort,
          path: `/orders/${encodeURIComponent(orderId)}`,
          agent,
          headers: { Authorization: `Bearer ${token}` },
        },
        (res) => {
          res.resume();
          res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - started }));
        },
      )
      .on('error', () => resolve({ status: 0, ms: performance.now() - started }));
  });
}

/**
 * The lookups' pace, all workers together: half what the admin port admits (ADMIN_ADMISSION, a token bucket).
 * Back to back they would outrun it after its burst, and measure its wait for a token rather than the lookup.
 */
const LOOKUPS_PER_SECOND = ADMIN_ADMISSION.perSecond / 2;

/**
 * Each id looked up once, `concurrency` at a time at LOOKUPS_PER_SECOND in all: the latency's quantiles (ms)
 * and the answers not 200.
 */
async function lookups(adminPort: number, token: string, ids: readonly string[], concurrency: number) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const results: Array<{ status: number; ms: number }> = [];
  const everyMs = (concurrency * 1000) / LOOKUPS_PER_SECOND;
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < ids.length) {
      const started = performance.now();
      results.push(await lookup(agent, adminPort, token, ids[next++] as string));
      await sleep(Math.max(0, started + everyMs - performance.now()));
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  agent.destroy();
  const sorted = results.map((r) => r.ms).sort((a, b) => a - b);
  return {
    lookups: results.length,
    concurrency,
    non200: results.filter((r) => r.status !== 200).length,
    p50Ms: round2(quantile(sorted, 0.5)),
    p99Ms: round2(quantile(sorted, 0.99)),
    maxMs: round2(sorted[sorted.length - 1] ?? 0),
  };
}

/** What a series of lookups measured. */
export type LookupFigures = Awaited<ReturnType<typeof lookups>>;

/** The lookups at once: as many as the admin port works on at once by default (ADMIN_CONCURRENCY). */
const LOOKUP_CONCURRENCY = 4;
/** Recent ids the lookups warm up on, not measured. */
const LOOKUP_WARM_UP = 20;

/**
 * The admin port's order lookups, old orders apart from recent ones: half of each sample one at a time, the
 * other half LOOKUP_CONCURRENCY at a time; every id is looked up once (its pages are read cold, as an operator's
 * lookup of an old order would).
 */
export async function adminLookups(service: Service, token: string, sampled: { old: string[]; recent: string[] }) {
  // The route's code warms up first, on recent ids kept out of the figures.
  const warm = sampled.recent.slice(-LOOKUP_WARM_UP);
  for (let i = 0; i < 3; i++) await lookups(service.adminPort, token, warm, 1);
  const recent = sampled.recent.slice(0, -LOOKUP_WARM_UP);
  const series = async (ids: readonly string[]) => {
    const half = Math.floor(ids.length / 2);
    return {
      sequential: await lookups(service.adminPort, token, ids.slice(0, half), 1),
      concurrent: await lookups(service.adminPort, token, ids.slice(half), LOOKUP_CONCURRENCY),
    };
  };
  return { old: await series(sampled.old), recent: await series(recent) };
}

/** What the admin lookups measured. */
export type AdminLookups = Awaited<ReturnType<typeof adminLookups>>;

/** `purge … --json` on the database: what it reports (its own `seconds` included), and its wall time. */
async function purge(args: readonly string[], databaseUrl: string) {
  const run = await cli(['purge', ...args, '--json'], databaseUrl);
  return { report: JSON.parse(run.stdout) as PurgeReport, wallSeconds: run.wallSeconds };
}

/**
 * The body purge of the week before BODY_PURGE_DAYS ago (the seeding keeps the bodies of the last 30 days,
 * as the service's purge leaves them: a purge at that age finds nothing), then again with nothing left to
 * purge: what that costs must not grow with history.
 */
export async function bodyPurges(databaseUrl: string) {
  const args = ['--days', String(BODY_PURGE_DAYS)];
  const first = await purge(args, databaseUrl);
  const again = await purge(args, databaseUrl);
  const figures = ({ report, wallSeconds }: Awaited<ReturnType<typeof purge>>) => ({
    seconds: round2(report.seconds),
    wallSeconds: round2(wallSeconds),
    purgedDays: report.bodies?.purgedDays.length ?? 0,
    bodies: report.bodies?.bodies.notifications ?? 0,
    variants: report.bodies?.bodies.notification_variants ?? 0,
  });
  return { first: figures(first), again: figures(again) };
}

/** What the body purges measured. */
export type BodyPurges = Awaited<ReturnType<typeof bodyPurges>>;

/** The open loop's longest run around retention; retention slower than that is reported over part of its time. */
const RETENTION_LOOP_MAX_SECONDS = 180;
/** Seconds of open loop before retention starts, and after it ends. */
const AROUND_RETENTION_SECONDS = 3;

/**
 * The intake's latency at the history rate while retention (`purge --history-days`) removes half the history:
 * an open loop on the idle service first, then one that runs from AROUND_RETENTION_SECONDS before retention
 * starts to as long after it ends. "During" counts the requests due while it ran.
 */
export async function retentionUnderLoad(service: Service, databaseUrl: string, seed: string) {
  const idle = await openLoop(service.port, take(traffic(`${seed}i`), HISTORY_RATE * SECONDS), HISTORY_RATE, SECONDS);
  await sleep(2000);
  const notifications = take(traffic(`${seed}r`), HISTORY_RATE * RETENTION_LOOP_MAX_SECONDS);
  const stop = new AbortController();
  const loop = openLoopSamples(service.port, notifications, HISTORY_RATE, RETENTION_LOOP_MAX_SECONDS, stop.signal);
  await sleep(AROUND_RETENTION_SECONDS * 1000);
  const startedAt = performance.now();
  const retention = await purge(['--history-days', String(HISTORY_RETENTION_DAYS)], databaseUrl);
  const endedAt = performance.now();
  await sleep(AROUND_RETENTION_SECONDS * 1000);
  stop.abort();
  const { samples } = await loop;
  const during = latencySummary(samples.filter((s) => s.dueMs >= startedAt && s.dueMs <= endedAt));
  const whole = latencySummary(samples);
  const history = retention.report.history;
  return {
    retention: {
      seconds: round2(retention.report.seconds),
      wallSeconds: round2(retention.wallSeconds),
      removedDays: history?.removedDays.length ?? 0,
      rows: history?.rows ?? null,
      // The loop ended before retention did: "during" covers only its first part.
      outlastedLoop: samples.length >= HISTORY_RATE * RETENTION_LOOP_MAX_SECONDS,
    },
    idle: { failures: idle.failures, sent: idle.sent, p50Ms: round2(idle.p50), p99Ms: round2(idle.p99) },
    during: {
      failures: during.failures,
      sent: during.sent,
      p50Ms: round2(during.p50),
      p99Ms: round2(during.p99),
      maxMs: round2(during.max),
    },
    wholeLoop: { failures: whole.failures, sent: whole.sent, p99Ms: round2(whole.p99) },
  };
}

/** What the intake measured around retention. */
export type RetentionUnderLoad = Awaited<ReturnType<typeof retentionUnderLoad>>;
