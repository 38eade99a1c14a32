/**
 * What a benchmark run is asked to do (environment variables, see run.ts) and what it runs the
 * service with: by default the Helm chart's V8 flags and memory limit, so that it runs as deployed.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';

export const PG = process.env.TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432';
export const AMQP = process.env.TEST_AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
export const POS_ID = '300746';
export const KEY = 'b6ca15b0d1020e8094d9b5f8d163db54';
export const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
export const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
export const RATE = Number(process.env.BENCH_RATE ?? 1000);
export const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
/** The project's root: the nearest folder above this file with a package.json (run from dist-bench/ or by jest). */
export const ROOT = projectRoot(__dirname);
/** The service's warm-up at the open loop's rate, before anything is measured. */
export const WARM_UP_SECONDS = 15;
/**
 * Node.js flags for the service's process only: by default the V8 heap flags the Helm chart gives
 * the server, so that the service runs as deployed; BENCH_SERVICE_NODE_FLAGS replaces them (an empty
 * value runs it with none), to measure other V8 settings.
 */
export const serviceNodeFlags = (root: string): string[] =>
  (process.env.BENCH_SERVICE_NODE_FLAGS ?? chartNodeFlags(chartValues(root))).split(' ').filter(Boolean);
/** The service's memory limit, in MiB: the chart's resources.limits.memory unless BENCH_SERVICE_MEMORY_LIMIT_MB says otherwise (0: none). */
export const serviceMemoryLimitMb = (root: string): number =>
  Number(process.env.BENCH_SERVICE_MEMORY_LIMIT_MB ?? chartMemoryLimitMb(chartValues(root)));
/** This tree's service's flags and memory limit (the A/B mode reads another tree's with the functions above). */
export const SERVICE_NODE_FLAGS = serviceNodeFlags(ROOT);
export const SERVICE_MEMORY_LIMIT_MB = serviceMemoryLimitMb(ROOT);
/** The history mode's open-loop rate (`--history`): a busy shop's peak, well under what the service takes here. */
export const HISTORY_RATE = Number(process.env.BENCH_HISTORY_RATE ?? 500);
/** The history mode seeds a year; retention then removes half of it. */
export const HISTORY_DAYS = 365;
export const HISTORY_RETENTION_DAYS = 182;
/**
 * The history mode's body purge: the seeding keeps the bodies of the last 30 days (the service's default
 * BODY_RETENTION), so a purge at 23 days removes a week's, as when the service's purge was off for a week.
 */
export const BODY_PURGE_DAYS = 23;
/** Seeded order ids the history mode looks up on the admin port: half from the oldest month, half from the newest. */
export const HISTORY_SAMPLE = 2000;
/** Notifications made in advance per second of a closed-loop run: more than either receiver takes here. */
export const AHEAD_PER_SECOND = 10_000;

interface ChartValues {
  heapLimitMb?: number;
  heapSemiSpaceMb?: number;
  resources?: { limits?: { memory?: string } };
}

/** The chart's values.yaml in a tree: by default the service runs as the chart deploys it. */
function chartValues(root: string): ChartValues {
  return parse(readFileSync(path.join(root, 'helm', 'notification-receiver', 'values.yaml'), 'utf8')) as ChartValues;
}

/** The V8 flags the chart gives the server through NODE_OPTIONS (heapLimitMb, heapSemiSpaceMb). */
function chartNodeFlags({ heapLimitMb, heapSemiSpaceMb }: ChartValues): string {
  return [
    // The chart's container command (and the Dockerfile's CMD) always give this one.
    '--no-allocation-site-pretenuring',
    heapLimitMb ? `--max-old-space-size=${heapLimitMb}` : '',
    heapSemiSpaceMb ? `--max-semi-space-size=${heapSemiSpaceMb}` : '',
  ].join(' ');
}

/** The chart's memory limit for the server container (resources.limits.memory), in MiB. */
function chartMemoryLimitMb(values: ChartValues): number {
  const limit = String(values.resources?.limits?.memory ?? '');
  const match = /^(\d+)(Mi|Gi)$/.exec(limit);
  if (!match) throw new Error(`resources.limits.memory "${limit}" in values.yaml: expected <n>Mi or <n>Gi`);
  return Number(match[1]) * (match[2] === 'Gi' ? 1024 : 1);
}

function projectRoot(from: string): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, 'package.json'))) return dir;
    if (dir === path.dirname(dir)) throw new Error(`no package.json above ${from}`);
  }
}
