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
 * Options (environment): BENCH_ROUNDS (3), BENCH_SECONDS (10), BENCH_RATE (1000),
 * BENCH_CONNECTIONS (32), BENCH_PROFILE=1 (write a CPU profile of the service to bench.cpuprofile),
 * BENCH_SERVICE_NODE_FLAGS (Node.js flags for the service's process only; default: the V8 heap flags
 * the chart gives the server, --max-semi-space-size=<heapSemiSpaceMb> and, when heapLimitMb is set,
 * --max-old-space-size=<heapLimitMb>), BENCH_SERVICE_MEMORY_LIMIT_MB (the service's memory limit; default:
 * the chart's resources.limits.memory; 0: none).
 */
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import amqp from 'amqplib';
import autocannon from 'autocannon';
import pg from 'pg';
import { parse } from 'yaml';
import { freePort } from '../support/net';
import { orderBody, refundBody, sign } from '../support/signing';
import { summarizeProfile } from './profileSummary';

const PG = process.env.TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432';
const AMQP = process.env.TEST_AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
const POS_ID = '300746';
const KEY = 'b6ca15b0d1020e8094d9b5f8d163db54';
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const RATE = Number(process.env.BENCH_RATE ?? 1000);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const ROOT = path.resolve(__dirname, '..', '..', '..');
/** The service's warm-up at the open loop's rate, before anything is measured. */
const WARM_UP_SECONDS = 15;
/** The names of the benchmark's memory cgroups start with this. */
const CGROUP_PREFIX = 'bench_service_';
/** The Helm chart's values: by default the service runs as the chart deploys it. */
const CHART_VALUES = chartValues();
/**
 * Node.js flags for the service's process only: by default the V8 heap flags the Helm chart gives
 * the server, so that the service runs as deployed; BENCH_SERVICE_NODE_FLAGS replaces them (an empty
 * value runs it with none), to measure other V8 settings.
 */
const SERVICE_NODE_FLAGS = (process.env.BENCH_SERVICE_NODE_FLAGS ?? chartNodeFlags(CHART_VALUES)).split(' ').filter(Boolean);
/** The service's memory limit, in MiB: the chart's resources.limits.memory unless BENCH_SERVICE_MEMORY_LIMIT_MB says otherwise (0: none). */
const SERVICE_MEMORY_LIMIT_MB = Number(process.env.BENCH_SERVICE_MEMORY_LIMIT_MB ?? chartMemoryLimitMb(CHART_VALUES));
/** Notifications made in advance per second of a closed-loop run: more than either receiver takes here. */
const AHEAD_PER_SECOND = 10_000;

interface Notification {
  body: string;
  signature: string;
}

interface ChartValues {
  heapLimitMb?: number;
  heapSemiSpaceMb?: number;
  resources?: { limits?: { memory?: string } };
}

/** The chart's values.yaml. */
function chartValues(): ChartValues {
  return parse(readFileSync(path.join(ROOT, 'helm', 'notification-receiver', 'values.yaml'), 'utf8')) as ChartValues;
}

/** The V8 flags the chart gives the server through NODE_OPTIONS (heapLimitMb, heapSemiSpaceMb). */
function chartNodeFlags({ heapLimitMb, heapSemiSpaceMb }: ChartValues): string {
  return [heapLimitMb ? `--max-old-space-size=${heapLimitMb}` : '', heapSemiSpaceMb ? `--max-semi-space-size=${heapSemiSpaceMb}` : ''].join(' ');
}

/** The chart's memory limit for the server container (resources.limits.memory), in MiB. */
function chartMemoryLimitMb(values: ChartValues): number {
  const limit = String(values.resources?.limits?.memory ?? '');
  const match = /^(\d+)(Mi|Gi)$/.exec(limit);
  if (!match) throw new Error(`resources.limits.memory "${limit}" in values.yaml: expected <n>Mi or <n>Gi`);
  return Number(match[1]) * (match[2] === 'Gi' ? 1024 : 1);
}

type MemoryCgroup = { procs: string; limitMb: number; remove(): void } | { unavailable: string };

/**
 * A memory cgroup with a memory limit (by default the chart's, as the pod's container has). Node
 * sizes V8's heap from the memory it is constrained to: in a 384 MiB container a 259 MB heap with
 * 1 MiB semi-spaces, against 4 GB and 16 MiB on an unconstrained machine with 24 GiB, so without it
 * the benchmark would measure another heap than the deployed one. Needs a writable memory controller (cgroup v1's memory
 * hierarchy, or v2's with the memory controller enabled, as root); where there is none the service
 * runs unconstrained, and the table and the JSON line say so.
 */
function memoryCgroup(name: string, limitMb: number): MemoryCgroup {
  const hierarchies = [
    { root: '/sys/fs/cgroup/memory', limitFile: 'memory.limit_in_bytes' },
    { root: '/sys/fs/cgroup', limitFile: 'memory.max' },
  ];
  const hierarchy = hierarchies.find(({ root }) => existsSync(path.join(root, 'cgroup.procs')));
  if (!hierarchy) return { unavailable: 'no cgroup hierarchy with a memory controller' };
  const group = path.join(hierarchy.root, name);
  removeLeftCgroups(hierarchy.root);
  try {
    mkdirSync(group);
    writeFileSync(path.join(group, hierarchy.limitFile), String(limitMb * 2 ** 20));
    const remove = (): void => {
      try {
        rmdirSync(group);
      } catch (error) {
        process.stderr.write(`could not remove ${group}: ${(error as Error).message}\n`);
      }
    };
    return { procs: path.join(group, 'cgroup.procs'), limitMb, remove };
  } catch (error) {
    if (existsSync(group)) rmdirSync(group);
    return { unavailable: `${group}: ${(error as Error).message}` };
  }
}

/**
 * Removes the memory cgroups of earlier benchmark runs that were killed before removing their own.
 * Only an empty cgroup can be removed, so a group with a service in it stays (its rmdir fails,
 * ignored); another benchmark running at the same time could lose its group between two starts of
 * its service, but two at once would spoil each other's figures anyway.
 */
function removeLeftCgroups(root: string): void {
  for (const entry of readdirSync(root)) {
    if (!entry.startsWith(CGROUP_PREFIX)) continue;
    try {
      rmdirSync(path.join(root, entry));
    } catch {
      // in use by a run still going
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The reference receiver: the floor cost of "verify and commit".

/**
 * A plain node:http receiver on 127.0.0.1:port that reads each request's body whole and hands it to
 * `handle`; on SIGTERM it stops listening, runs `close` and exits. What the benchmark's own
 * receivers share, so that they differ only in what they do with a body.
 */
function bodyReceiver(
  port: number,
  handle: (body: Buffer, req: http.IncomingMessage, res: http.ServerResponse) => void,
  close: () => Promise<void> = () => Promise.resolve(),
): void {
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => handle(Buffer.concat(chunks), req, res));
  });
  server.listen(port, '127.0.0.1');
  process.on('SIGTERM', () => server.close(() => void close().then(() => process.exit(0))));
}

async function runReference(port: number, databaseUrl: string): Promise<void> {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 10 });
  await pool.query('CREATE TABLE IF NOT EXISTS received (digest bytea PRIMARY KEY, body bytea NOT NULL)');
  bodyReceiver(
    port,
    (body, req, res) => {
      const header = String(req.headers['opensvc-signature'] ?? '');
      const signature = /signature=([0-9a-f]+)/i.exec(header)?.[1] ?? '';
      const expected = createHash('md5').update(body).update(KEY).digest('hex');
      if (signature.toLowerCase() !== expected) {
        res.writeHead(401).end();
        return;
      }
      const digest = createHash('sha256').update(body).digest();
      pool.query('INSERT INTO received (digest, body) VALUES ($1, $2) ON CONFLICT DO NOTHING', [digest, body]).then(
        () => res.writeHead(200, { 'Content-Type': 'application/json' }).end('{"ok":true}'),
        () => res.writeHead(503).end(),
      );
    },
    () => pool.end(),
  );
}

/**
 * A receiver that does nothing: reads the body and answers 200, with no check and no database. Not
 * a competitor: the floor of any Node receiver on this machine and load generator, against which
 * the duplicates-only target (twice the reference's rate) can be read.
 */
function runBare(port: number): void {
  const answer = JSON.stringify({ outcome: 'duplicate' });
  bodyReceiver(port, (_body, _req, res) => void res.writeHead(200, { 'Content-Type': 'application/json' }).end(answer));
}

/** The downstream consumer: a queue bound to the whole exchange; answers "count" with what it received. */
async function runConsumer(exchange: string): Promise<void> {
  const connection = await amqp.connect(AMQP);
  const channel = await connection.createChannel();
  await channel.assertExchange(exchange, 'topic', { durable: true });
  const { queue } = await channel.assertQueue('', { exclusive: true });
  await channel.bindQueue(queue, exchange, '#');
  let consumed = 0;
  await channel.consume(queue, () => void consumed++, { noAck: true });
  process.on('message', () => process.send?.(consumed));
  process.on('disconnect', () => void connection.close().finally(() => process.exit(0)));
  process.send?.('ready');
}

// ---------------------------------------------------------------------------------------------
// Workload: realistic lifecycles, signed; 20 % of the requests repeat an earlier one.

/**
 * An endless stream of fresh notifications: order lifecycles, each step followed a quarter of the
 * time by a repeat of an earlier notification (so 20 % of the stream are duplicates, however much
 * of it a run takes).
 */
function workload(seed: string): () => Notification {
  const sent: Notification[] = [];
  const ready: Notification[] = [];
  let n = 0;
  const push = (notification: Notification): void => {
    sent.push(notification);
    ready.push(notification);
  };
  const nextLifecycle = (): void => {
    const orderId = `B${seed}${(n++).toString(36).toUpperCase()}`;
    const steps = [orderBody({ orderId, status: 'PENDING', paymentId: String(n) })];
    if (n % 5 === 0) steps.push(orderBody({ orderId, status: 'WAITING_FOR_CONFIRMATION', paymentId: String(n) }));
    steps.push(
      orderBody({
        orderId,
        status: 'COMPLETED',
        paymentId: String(n),
        payMethodType: 'PBL',
        localReceiptDateTime: '2026-11-22T10:00:00.000+01:00',
        buyer: { email: 'buyer@example.com', firstName: 'Ann', lastName: 'Buyer', language: 'pl' },
      }),
    );
    if (n % 4 === 0) steps.push(refundBody({ orderId, refundId: `R${orderId}`, status: 'FINALIZED' }));
    for (const body of steps) {
      push({ body, signature: sign(body, KEY) });
      if (Math.random() < 0.25 && sent.length > 1) push(sent[Math.floor(Math.random() * sent.length)] as Notification);
    }
  };
  let next = 0;
  return () => {
    if (next === ready.length) {
      ready.length = next = 0;
      nextLifecycle();
    }
    return ready[next++] as Notification;
  };
}

/** The first `count` notifications of a stream. */
const take = (stream: () => Notification, count: number): Notification[] => Array.from({ length: count }, stream);

/**
 * A stream with its first `count` notifications made in advance, so that signing them does not
 * take the load generator's time during a run (a run that gets further makes the rest as it goes).
 */
const madeAhead = (stream: () => Notification, count: number): (() => Notification) => {
  const made = take(stream, count);
  let next = 0;
  return () => (next < made.length ? (made[next++] as Notification) : stream());
};

/** The same notifications over and over. */
const cycle = (notifications: readonly Notification[]): (() => Notification) => {
  let next = 0;
  return () => notifications[next++ % notifications.length] as Notification;
};

// ---------------------------------------------------------------------------------------------
// Processes and helpers.

async function waitFor(url: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      http.get(url, (res) => {
        res.resume();
        resolve(res.statusCode === 200);
      }).on('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`${url} not ready`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function waitForPort(port: number): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, '127.0.0.1', () => {
        socket.destroy();
        resolve(true);
      });
      socket.on('error', () => resolve(false));
    });
    if (open) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`port ${port} never opened`);
}

async function admin(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: `${PG}/postgres` });
  await client.connect();
  await client.query(sql);
  await client.end();
}

interface Service {
  child: ChildProcess;
  port: number;
  adminPort: number;
  readyMs: number;
}

/** Starts the built service; inside the memory cgroup when there is one (it enters it before node starts). */
async function startService(databaseUrl: string, exchange: string, cgroup: MemoryCgroup, profile = false): Promise<Service> {
  const [port, adminPort] = [await freePort(), await freePort()];
  const started = Date.now();
  const nodeFlags = [...SERVICE_NODE_FLAGS, ...(profile ? ['--cpu-prof', '--cpu-prof-name=bench.cpuprofile'] : [])];
  const command = [process.execPath, ...nodeFlags, 'dist/main.js'];
  const [file, args] = 'procs' in cgroup ? ['/bin/sh', ['-c', 'echo $$ > "$0" && exec "$@"', cgroup.procs, ...command]] : [command[0] as string, command.slice(1)];
  const child = spawn(file, args, {
    cwd: ROOT,
    env: {
      ...process.env,
      NODE_ENV: 'production',
      PORT: String(port),
      ADMIN_PORT: String(adminPort),
      HOST: '127.0.0.1',
      DATABASE_URL: databaseUrl,
      SECOND_KEYS: `${POS_ID}:${KEY}`,
      ALLOWED_SOURCE_IPS: '127.0.0.1',
      AMQP_URL: AMQP,
      AMQP_EXCHANGE: exchange,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  await waitFor(`http://127.0.0.1:${adminPort}/readyz`);
  return { child, port, adminPort, readyMs: Date.now() - started };
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  await new Promise<void>((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

function memoryMb(pid: number, field: 'VmHWM' | 'VmRSS'): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0) / 1024;
}

/**
 * Samples the service's resident memory every 100 ms and keeps the highest sample of each phase,
 * to tell which phase sets the peak (the peak itself is the kernel's VmHWM, which misses nothing).
 * Reads its /metrics every second: its V8 heap and external memory, to tell what the highest sample
 * was made of, and the longest event-loop delay it measured since the reading before (prom-client
 * resets that histogram at every scrape), to tell a stall of the service's thread from one elsewhere.
 */
function watchService(pid: number, adminPort: number) {
  const highest = new Map<string, number>();
  const worstLagMs = new Map<string, number>();
  let phase = 'warm-up';
  let heap = { heapTotalMb: 0, externalMb: 0 };
  let atPeak = { rssMb: 0, ...heap };
  let newSpaceMaxMb = 0;
  const sampler = setInterval(() => {
    const rssMb = memoryMb(pid, 'VmRSS');
    highest.set(phase, Math.max(highest.get(phase) ?? 0, rssMb));
    if (rssMb > atPeak.rssMb) atPeak = { rssMb, ...heap };
  }, 100);
  const read = (): Promise<void> => {
    const readFor = phase;
    return metricsText(adminPort).then(
      (text) => {
        const mb = (name: string): number => Math.round(metricTotal(text, name) / 2 ** 20);
        heap = { heapTotalMb: mb('nodejs_heap_size_total_bytes'), externalMb: mb('nodejs_external_memory_bytes') };
        newSpaceMaxMb = Math.max(newSpaceMaxMb, metricTotal(text, 'nodejs_heap_space_size_total_bytes', 'space="new"') / 2 ** 20);
        const lagMs = 1000 * metricTotal(text, 'nodejs_eventloop_lag_max_seconds');
        worstLagMs.set(readFor, Math.max(worstLagMs.get(readFor) ?? 0, lagMs));
      },
      () => undefined,
    );
  };
  const reader = setInterval(() => void read(), 1000);
  return {
    /** Reads /metrics now, so that what the service measured until now counts for the current phase, and enters the next. */
    async enter(next: string): Promise<void> {
      await read();
      phase = next;
    },
    /** The longest event-loop delay the service measured during a phase, in ms. */
    worstLagMs(of: string): number {
      return worstLagMs.get(of) ?? 0;
    },
    /**
     * The phase whose highest sample was the highest of all, and what that sample was made of; and the
     * largest the V8 young generation's new space got (twice the semi-space size in effect).
     */
    peak(): { phase: string; rssMb: number; heapTotalMb: number; externalMb: number; newSpaceMaxMb: number } {
      clearInterval(sampler);
      clearInterval(reader);
      const phaseOfPeak = [...highest].reduce((top, entry) => (entry[1] > top[1] ? entry : top), ['', 0])[0];
      return { phase: phaseOfPeak, ...atPeak, rssMb: Math.round(atPeak.rssMb), newSpaceMaxMb: Math.round(newSpaceMaxMb) };
    },
  };
}

/** The machine's idle and total CPU time so far (/proc/stat, in ticks), to tell a run bound by CPU from one bound by waiting. */
function cpuTicks(): { idle: number; total: number } {
  const fields = (readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '').trim().split(/\s+/).slice(1).map(Number);
  return { idle: (fields[3] ?? 0) + (fields[4] ?? 0), total: fields.reduce((a, b) => a + b, 0) };
}

/** Percent of the machine's CPU time left idle between two readings. */
const idlePercent = (from: ReturnType<typeof cpuTicks>, to: ReturnType<typeof cpuTicks>): number =>
  Math.round((100 * (to.idle - from.idle)) / Math.max(1, to.total - from.total));

/** Where a closed-loop run's CPU went: the receiver under load and what it drives, each a set of processes; and the machine's busy time in all. */
const CPU_KEYS = ['receiver', 'postgres', 'rabbitmq', 'consumer', 'loadGenerator', 'other', 'machine'] as const;
type CpuKey = (typeof CPU_KEYS)[number];
type CpuGroup = Exclude<CpuKey, 'machine'>;
type CpuByGroup = Record<CpuKey, number>;
const cpuFigures = (value: (key: CpuKey) => number): CpuByGroup => Object.fromEntries(CPU_KEYS.map((key) => [key, value(key)])) as CpuByGroup;

/** Linux's clock tick for /proc CPU times (USER_HZ), in microseconds. */
const TICK_US = 10_000;

/** One reading of the CPU time spent so far, in ticks: the machine's (/proc/stat), and every process's by group. */
interface CpuReading {
  machine: ReturnType<typeof cpuTicks>;
  groups: Record<CpuGroup, number>;
}

/**
 * Reads the CPU time of the machine and of every process (user and system). `receiver` is the
 * process under load (the idle receiver counts as other); the load generator is this process
 * (autocannon runs in it).
 */
function cpuReading(receiverPid: number, consumerPid: number): CpuReading {
  const groups: Record<CpuGroup, number> = { receiver: 0, postgres: 0, rabbitmq: 0, consumer: 0, loadGenerator: 0, other: 0 };
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // exited meanwhile
    }
    // pid (comm) state ...: comm may hold spaces and parentheses, so fields are counted after the last ')'.
    const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // Its own time and its reaped children's: a process that exits between two readings (a pool's
    // idle connection closed, say: its backend's whole life) leaves the sum, and comes back in its
    // parent's count, so the difference between two readings is the time spent between them.
    const ticks = Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]);
    const pid = Number(entry);
    const group: CpuGroup =
      pid === receiverPid ? 'receiver'
      : pid === consumerPid ? 'consumer'
      : pid === process.pid ? 'loadGenerator'
      : comm === 'postgres' ? 'postgres'
      : comm === 'beam.smp' ? 'rabbitmq'
      : 'other';
    groups[group] += ticks;
  }
  return { machine: cpuTicks(), groups };
}

/** Microseconds of CPU per request between two readings, by group, and of the machine's busy time in all. */
function cpuPerRequest(from: CpuReading, to: CpuReading, requests: number): CpuByGroup {
  const busy = ({ machine }: CpuReading): number => machine.total - machine.idle;
  const ticks = (key: CpuKey): number => (key === 'machine' ? busy(to) - busy(from) : to.groups[key] - from.groups[key]);
  return cpuFigures((key) => Math.round((ticks(key) * TICK_US) / Math.max(1, requests)));
}

/** The median of each group over runs. */
const medianCpu = (runs: readonly CpuByGroup[]): CpuByGroup => cpuFigures((key) => median(runs.map((r) => r[key])));

interface ServiceCounters {
  /** When they were read (performance.now(), in ms): busy shares are taken over the time between two readings. */
  readAt: number;
  busySeconds: number;
  /** The service's event loop active (running callbacks), in seconds since it started. */
  eventLoopSeconds: number;
  transactions: number;
  notifications: number;
}

/** The text of the service's /metrics. */
function metricsText(adminPort: number): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    http
      .get(`http://127.0.0.1:${adminPort}/metrics`, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve(body));
      })
      .on('error', reject);
  });
}

/**
 * The sum of every series of a metric whose labels include `label` (all of them when none is given;
 * for an unlabelled metric, its value), 0 when absent.
 */
function metricTotal(text: string, name: string, label = ''): number {
  let total = 0;
  for (const [, labels = '', value] of text.matchAll(new RegExp(`^${name}(?:\\{([^}]*)\\})? (\\S+)$`, 'gm'))) {
    if (labels.split(',').includes(label) || !label) total += Number(value);
  }
  return total;
}

/**
 * The service's garbage collections so far, all kinds together, from prom-client's histogram (which
 * records the first collection of each batch its observer is handed, so it may miss a few).
 */
function gcSoFar(text: string) {
  const name = 'nodejs_gc_duration_seconds';
  const count = metricTotal(text, `${name}_count`);
  return {
    ms: 1000 * metricTotal(text, `${name}_sum`),
    over10Ms: count - metricTotal(text, `${name}_bucket`, 'le="0.01"'),
    over100Ms: count - metricTotal(text, `${name}_bucket`, 'le="0.1"'),
    major: metricTotal(text, `${name}_count`, 'kind="major"'),
  };
}

/** The service's recorder and event-loop counters, from its /metrics. */
/** How busy the recorder and the event loop were between two readings, and the transactions' size and length. */
function recorderFigures(before: ServiceCounters, after: ServiceCounters) {
  const windowSeconds = (after.readAt - before.readAt) / 1000;
  const busySeconds = after.busySeconds - before.busySeconds;
  const transactions = Math.max(1, after.transactions - before.transactions);
  return {
    recorderBusyPercent: Math.round((100 * busySeconds) / windowSeconds),
    eventLoopBusyPercent: Math.round((100 * (after.eventLoopSeconds - before.eventLoopSeconds)) / windowSeconds),
    notificationsPerTransaction: round2((after.notifications - before.notifications) / transactions),
    transactionMs: round2((1000 * busySeconds) / transactions),
  };
}

async function serviceCounters(adminPort: number): Promise<ServiceCounters> {
  const text = await metricsText(adminPort);
  return {
    readAt: performance.now(),
    busySeconds: metricTotal(text, 'recorder_busy_seconds_total'),
    eventLoopSeconds: metricTotal(text, 'nodejs_eventloop_active_seconds_total'),
    transactions: metricTotal(text, 'recorder_batch_notifications_count'),
    notifications: metricTotal(text, 'recorder_batch_notifications_sum'),
  };
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
};

const quantile = (sorted: number[], q: number): number => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;

/** Closed loop: CONNECTIONS connections, each sending its next notification as soon as the last was answered. */
async function closedLoop(port: number, nextNotification: () => Notification, seconds: number): Promise<{ rps: number; requests: number; non2xx: number }> {
  const result = await autocannon({
    url: `http://127.0.0.1:${port}/notifications`,
    connections: CONNECTIONS,
    duration: seconds,
    requests: [
      {
        method: 'POST',
        setupRequest: (request) => {
          const n = nextNotification();
          return {
            ...request,
            method: 'POST',
            path: '/notifications',
            headers: { 'content-type': 'application/json;charset=UTF-8', 'opensvc-signature': n.signature },
            body: n.body,
          };
        },
      },
    ],
  });
  return { rps: result.requests.average, requests: result.requests.total, non2xx: result.non2xx };
}

/** Open loop: requests leave on schedule whatever the answers; latency counts from the scheduled time. */
async function openLoop(port: number, notifications: Notification[], rate: number, seconds: number) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 512 });
  const latencies: number[] = [];
  let failures = 0;
  const total = rate * seconds;
  // The load generator's own stalls: a request that leaves late is counted late, whoever stalled.
  const ownLag = monitorEventLoopDelay({ resolution: 10 });
  ownLag.enable();
  const start = performance.now();
  const inFlight: Array<Promise<void>> = [];
  for (let i = 0; i < total; i++) {
    const due = start + (i * 1000) / rate;
    // Never before its time (timers fire on whole milliseconds, and a request sent early would
    // count less than it took); a request that leaves late counts from its scheduled time.
    while (performance.now() < due) await new Promise((r) => setTimeout(r, Math.ceil(due - performance.now())));
    const n = notifications[i % notifications.length] as Notification;
    inFlight.push(
      new Promise<void>((resolve) => {
        const req = http.request(
          {
            host: '127.0.0.1',
            port,
            path: '/notifications',
            method: 'POST',
            agent,
            headers: { 'Content-Type': 'application/json;charset=UTF-8', 'OpenSvc-Signature': n.signature, 'Content-Length': Buffer.byteLength(n.body) },
          },
          (res) => {
            res.resume();
            res.on('end', () => {
              latencies.push(performance.now() - due);
              if (res.statusCode !== 200) failures++;
              resolve();
            });
          },
        );
        req.on('error', () => {
          failures++;
          resolve();
        });
        req.end(n.body);
      }),
    );
  }
  await Promise.all(inFlight);
  ownLag.disable();
  agent.destroy();
  const sorted = latencies.sort((a, b) => a - b);
  return {
    sent: total,
    failures,
    p50: quantile(sorted, 0.5),
    p99: quantile(sorted, 0.99),
    max: sorted[sorted.length - 1] ?? 0,
    loadGeneratorLagMaxMs: ownLag.max / 1e6,
  };
}

/**
 * Open loop at RATE on fresh notifications, then the commit-to-confirm lag of the events it produced,
 * with what could make its tail: the service's longest event-loop delay and its garbage collections
 * during the loop, beside the load generator's own longest delay.
 */
async function latencyPhase(service: Service, watcher: ReturnType<typeof watchService>, phase: string, databaseUrl: string, seed: string) {
  const notifications = take(workload(seed), RATE * SECONDS);
  await watcher.enter(phase);
  const [gcBefore, countersBefore] = [gcSoFar(await metricsText(service.adminPort)), await serviceCounters(service.adminPort)];
  const since = new Date();
  const open = await openLoop(service.port, notifications, RATE, SECONDS);
  const until = new Date();
  const [gcAfter, countersAfter] = [gcSoFar(await metricsText(service.adminPort)), await serviceCounters(service.adminPort)];
  await watcher.enter(`${phase}, publishing`);
  const stalls = {
    serviceLagMaxMs: watcher.worstLagMs(phase),
    loadGeneratorLagMaxMs: open.loadGeneratorLagMaxMs,
    gcMs: gcAfter.ms - gcBefore.ms,
    gcOver10Ms: gcAfter.over10Ms - gcBefore.over10Ms,
    gcOver100Ms: gcAfter.over100Ms - gcBefore.over100Ms,
    gcMajor: gcAfter.major - gcBefore.major,
  };
  return { open, stalls, recorder: recorderFigures(countersBefore, countersAfter), lag: await commitToConfirmLag(databaseUrl, since, until) };
}

/**
 * The reference at the same fixed rate, on fresh notifications, right after the service's phase:
 * the latency a receiver that only verifies and inserts gets from this machine and this load
 * generator at that moment, the floor under the service's figure.
 */
async function referenceLatencyPhase(port: number, seed: string) {
  await new Promise((r) => setTimeout(r, 2000));
  return openLoop(port, take(workload(seed), RATE * SECONDS), RATE, SECONDS);
}

async function commitToConfirmLag(databaseUrl: string, since: Date, until: Date) {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  // Publishing may still be catching up: wait until everything committed so far is confirmed.
  for (let i = 0; i < 300; i++) {
    const { rows } = await client.query<{ n: string }>('SELECT count(*) AS n FROM outbox_events WHERE published_at IS NULL');
    if (rows[0]?.n === '0') break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const { rows } = await client.query<{ p50: number; p99: number; n: string }>(
    `SELECT count(*) AS n,
            1000 * percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM published_at - created_at)) AS p50,
            1000 * percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM published_at - created_at)) AS p99
       FROM outbox_events WHERE created_at >= $1 AND created_at <= $2`,
    [since, until],
  );
  await client.end();
  return { events: Number(rows[0]?.n ?? 0), p50: Number(rows[0]?.p50 ?? 0), p99: Number(rows[0]?.p99 ?? 0) };
}

// ---------------------------------------------------------------------------------------------

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
  const reference = spawn(process.execPath, [__filename, '--reference', String(referencePort), `${PG}/${referenceDb}`], {
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const barePort = await freePort();
  const bare = spawn(process.execPath, [__filename, '--bare', String(barePort)], { stdio: ['ignore', 'inherit', 'inherit'] });
  const serviceUrl = `${PG}/${serviceDb}`;
  // The service runs with the pod's memory limit, as deployed (Node sizes its heap from it).
  const cgroup: MemoryCgroup = SERVICE_MEMORY_LIMIT_MB > 0 ? memoryCgroup(`${CGROUP_PREFIX}${suffix}`, SERVICE_MEMORY_LIMIT_MB) : { unavailable: 'BENCH_SERVICE_MEMORY_LIMIT_MB=0' };

  try {
    // First start creates the database and applies migrations; the time to ready is measured on restarts.
    await stop((await startService(serviceUrl, exchange, cgroup)).child);
    const readyTimes: number[] = [];
    for (let i = 0; i < 3; i++) {
      const s = await startService(serviceUrl, exchange, cgroup);
      readyTimes.push(s.readyMs);
      await stop(s.child);
    }
    const service = await startService(serviceUrl, exchange, cgroup, process.env.BENCH_PROFILE === '1');
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
    await new Promise((r) => setTimeout(r, 2000));
    const steady = await latencyPhase(service, watcher, 'open loop, steady', serviceUrl, `${suffix}steady`);
    const referenceSteady = await referenceLatencyPhase(referencePort, `${suffix}refsteady`);

    const serviceRps: number[] = [];
    const referenceRps: number[] = [];
    // What bounds each run: the machine's idle CPU, and how busy the service's recorder and event loop were.
    const serviceIdle: number[] = [];
    const referenceIdle: number[] = [];
    const recorderBusy: number[] = [];
    const eventLoopBusy: number[] = [];
    const batchSizes: number[] = [];
    // CPU per notification of every process involved, to tell how far each receiver is from what two cores allow.
    const [servicePid, referencePid, consumerPid] = [service.child.pid as number, reference.pid as number, consumer.pid as number];
    const serviceCpu: CpuByGroup[] = [];
    const referenceCpu: CpuByGroup[] = [];
    let non2xx = 0;
    await watcher.enter('closed loop');
    for (let round = 0; round < ROUNDS; round++) {
      // Each receiver gets its own stream of the same lifecycles: fresh notifications however fast it goes.
      // Made (signed) before the counters are read, so that the measured window holds only the run.
      const stream = () => madeAhead(workload(`${suffix}${round}`), AHEAD_PER_SECOND * SECONDS);
      const [serviceStream, referenceStream] = [stream(), stream()];
      const [countersBefore, serviceBefore] = [await serviceCounters(service.adminPort), cpuReading(servicePid, consumerPid)];
      const s = await closedLoop(service.port, serviceStream, SECONDS);
      const [countersAfter, serviceAfter] = [await serviceCounters(service.adminPort), cpuReading(servicePid, consumerPid)];
      const referenceBefore = cpuReading(referencePid, consumerPid);
      const r = await closedLoop(referencePort, referenceStream, SECONDS);
      const referenceAfter = cpuReading(referencePid, consumerPid);
      serviceIdle.push(idlePercent(serviceBefore.machine, serviceAfter.machine));
      referenceIdle.push(idlePercent(referenceBefore.machine, referenceAfter.machine));
      serviceCpu.push(cpuPerRequest(serviceBefore, serviceAfter, s.requests));
      referenceCpu.push(cpuPerRequest(referenceBefore, referenceAfter, r.requests));
      const recorder = recorderFigures(countersBefore, countersAfter);
      recorderBusy.push(recorder.recorderBusyPercent);
      eventLoopBusy.push(recorder.eventLoopBusyPercent);
      batchSizes.push(recorder.notificationsPerTransaction);
      serviceRps.push(s.rps);
      referenceRps.push(r.rps);
      non2xx += s.non2xx + r.non2xx;
      process.stderr.write(
        `round ${round + 1}: service ${s.rps.toFixed(0)}/s (machine ${serviceIdle[round]} % idle, recorder busy ${recorderBusy[round]} %, event loop busy ${eventLoopBusy[round]} %, ` +
          `${(batchSizes[round] as number).toFixed(1)} per transaction), reference ${r.rps.toFixed(0)}/s (machine ${referenceIdle[round]} % idle)\n`,
      );
    }

    // Duplicates only: everything below was recorded already.
    await watcher.enter('duplicates only');
    const recorded = take(workload(`${suffix}dup`), 2000);
    await closedLoop(service.port, cycle(recorded), 2);
    await closedLoop(referencePort, cycle(recorded), 2);
    const dupService: number[] = [];
    const dupReference: number[] = [];
    const dupServiceCpu: CpuByGroup[] = [];
    const dupReferenceCpu: CpuByGroup[] = [];
    /** One duplicates-only run of a receiver: its throughput, and the CPU per request it took. */
    const duplicatesRun = async (port: number, pid: number, rps: number[], cpu: CpuByGroup[]): Promise<void> => {
      const before = cpuReading(pid, consumerPid);
      const run = await closedLoop(port, cycle(recorded), Math.max(3, SECONDS / 2));
      cpu.push(cpuPerRequest(before, cpuReading(pid, consumerPid), run.requests));
      rps.push(run.rps);
    };
    const dupBare: number[] = [];
    const dupBareCpu: CpuByGroup[] = [];
    await closedLoop(barePort, cycle(recorded), 2);
    for (let round = 0; round < ROUNDS; round++) {
      await duplicatesRun(service.port, servicePid, dupService, dupServiceCpu);
      await duplicatesRun(referencePort, referencePid, dupReference, dupReferenceCpu);
      await duplicatesRun(barePort, bare.pid as number, dupBare, dupBareCpu);
    }

    await new Promise((r) => setTimeout(r, 2000));
    const afterBursts = await latencyPhase(service, watcher, 'open loop, after the bursts', serviceUrl, `${suffix}after`);
    const referenceAfterBursts = await referenceLatencyPhase(referencePort, `${suffix}refafter`);
    const rss = memoryMb(service.child.pid as number, 'VmHWM');
    const peak = watcher.peak();
    const consumed = await new Promise<number>((resolve) => {
      consumer.once('message', (count) => resolve(Number(count)));
      consumer.send('count');
    });
    await stop(service.child);

    const figures = {
      machine: { cores: os.cpus().length, node: process.version },
      serviceNodeFlags: SERVICE_NODE_FLAGS,
      serviceMemoryLimitMb: 'limitMb' in cgroup ? cgroup.limitMb : null,
      rounds: ROUNDS,
      secondsPerRun: SECONDS,
      connections: CONNECTIONS,
      throughput: {
        serviceMedian: Math.round(median(serviceRps)),
        referenceMedian: Math.round(median(referenceRps)),
        ratio: Number((median(serviceRps) / median(referenceRps)).toFixed(2)),
        serviceRuns: serviceRps.map(Math.round),
        referenceRuns: referenceRps.map(Math.round),
        non2xx,
        machineIdlePercent: { service: median(serviceIdle), reference: median(referenceIdle) },
        recorderBusyPercent: median(recorderBusy),
        eventLoopBusyPercent: median(eventLoopBusy),
        notificationsPerTransaction: round2(median(batchSizes)),
        cpuPerNotificationUs: { service: medianCpu(serviceCpu), reference: medianCpu(referenceCpu) },
      },
      duplicatesOnly: {
        serviceMedian: Math.round(median(dupService)),
        referenceMedian: Math.round(median(dupReference)),
        ratio: Number((median(dupService) / median(dupReference)).toFixed(2)),
        cpuPerNotificationUs: { service: medianCpu(dupServiceCpu), reference: medianCpu(dupReferenceCpu) },
        // The floor: a receiver that reads the body and answers 200, nothing else.
        bareReceiver: { median: Math.round(median(dupBare)), cpuPerNotificationUs: medianCpu(dupBareCpu) },
      },
      openLoop: openLoopFigures(steady, referenceSteady),
      commitToConfirm: lagFigures(steady.lag),
      afterBursts: { openLoop: openLoopFigures(afterBursts, referenceAfterBursts), commitToConfirm: lagFigures(afterBursts.lag) },
      eventsConsumed: consumed,
      peakRssMb: Math.round(rss),
      peakRssPhase: peak.phase,
      highestRssSample: { rssMb: peak.rssMb, v8HeapTotalMb: peak.heapTotalMb, externalMb: peak.externalMb },
      v8NewSpaceMaxMb: peak.newSpaceMaxMb,
      readyMs: { median: median(readyTimes), runs: readyTimes },
    };

    const rows: Array<[string, string, string]> = [
      ['closed-loop throughput, 32 conns (median)', `${figures.throughput.serviceMedian}/s`, `reference ${figures.throughput.referenceMedian}/s, ratio ${figures.throughput.ratio}`],
      [
        'what bounds the closed loop (median)',
        `${figures.throughput.recorderBusyPercent} % recorder busy`,
        `event loop busy ${figures.throughput.eventLoopBusyPercent} %; ` +
          `${figures.throughput.notificationsPerTransaction} per transaction; machine idle ${figures.throughput.machineIdlePercent.service} % (reference ${figures.throughput.machineIdlePercent.reference} %)`,
      ],
      ...cpuRows('closed loop', figures.throughput.cpuPerNotificationUs),
      ['duplicates-only throughput (median)', `${figures.duplicatesOnly.serviceMedian}/s`, `reference ${figures.duplicatesOnly.referenceMedian}/s, ratio ${figures.duplicatesOnly.ratio}`],
      ...cpuRows('duplicates only', figures.duplicatesOnly.cpuPerNotificationUs),
      bareRow(figures.duplicatesOnly.referenceMedian, figures.duplicatesOnly.bareReceiver),
      ...latencyRows('steady', figures.openLoop, figures.commitToConfirm),
      ...latencyRows('after the bursts', figures.afterBursts.openLoop, figures.afterBursts.commitToConfirm),
      [
        'peak RSS of the service',
        `${figures.peakRssMb} MB`,
        `highest sample ${peak.rssMb} MB during: ${peak.phase} (V8 heap ${peak.heapTotalMb} MB, external ${peak.externalMb} MB); ` +
          `V8 new space at most ${peak.newSpaceMaxMb} MB; service flags: ${SERVICE_NODE_FLAGS.join(' ') || 'none'}; ` +
          ('limitMb' in cgroup ? `memory limit ${cgroup.limitMb} MiB (in a cgroup)` : `no memory limit (${cgroup.unavailable})`),
      ],
      ['start to ready (migrations applied)', `${figures.readyMs.median} ms`, `runs ${readyTimes.join(', ')} ms`],
    ];
    const width = Math.max(...rows.map((r) => r[0].length));
    process.stdout.write(`\n${'figure'.padEnd(width)}  value                     note\n`);
    for (const [name, value, note] of rows) process.stdout.write(`${name.padEnd(width)}  ${value.padEnd(24)}  ${note}\n`);
    if (process.env.BENCH_PROFILE === '1') {
      process.stdout.write('\nwhere the service spent its CPU samples (whole run, self time by layer):\n');
      for (const { layer, percent } of summarizeProfile(path.join(ROOT, 'bench.cpuprofile'))) {
        process.stdout.write(`  ${String(percent).padStart(5)} %  ${layer}\n`);
      }
    }
    process.stdout.write(`${JSON.stringify(figures)}\n`);
  } finally {
    await Promise.all([stop(reference), stop(bare)]);
    consumer.disconnect();
    await new Promise((resolve) => (consumer.exitCode === null ? consumer.once('exit', resolve) : resolve(undefined)));
    const cleanup = await amqp.connect(AMQP);
    await (await cleanup.createChannel()).deleteExchange(exchange).catch(() => undefined);
    await cleanup.close();
    await admin(`DROP DATABASE IF EXISTS ${serviceDb} WITH (FORCE)`);
    await admin(`DROP DATABASE IF EXISTS ${referenceDb} WITH (FORCE)`);
    if ('remove' in cgroup) cgroup.remove();
  }
}

function round2(value: number): number {
  return Math.round(value * 100) / 100;
}

type LatencyPhaseResult = Awaited<ReturnType<typeof latencyPhase>>;
type LagResult = Awaited<ReturnType<typeof commitToConfirmLag>>;

type OpenLoopResult = Awaited<ReturnType<typeof openLoop>>;

function openLoopFigures({ open, stalls, recorder }: LatencyPhaseResult, reference: OpenLoopResult) {
  return {
    rate: RATE,
    sent: open.sent,
    failures: open.failures,
    p50Ms: round2(open.p50),
    p99Ms: round2(open.p99),
    maxMs: round2(open.max),
    // The recorder at this rate: how busy, and its transactions' size and length (busy time per transaction).
    recorder,
    // The reference's open loop at the same rate, right after: what the machine allowed a minimal receiver.
    reference: {
      failures: reference.failures,
      p50Ms: round2(reference.p50),
      p99Ms: round2(reference.p99),
      maxMs: round2(reference.max),
      loadGeneratorLagMaxMs: round2(reference.loadGeneratorLagMaxMs),
    },
    // What could have made the tail (the service's GC counts are the collections of 10 and 100 ms or more).
    stalls: {
      serviceLagMaxMs: round2(stalls.serviceLagMaxMs),
      loadGeneratorLagMaxMs: round2(stalls.loadGeneratorLagMaxMs),
      serviceGcMs: round2(stalls.gcMs),
      serviceGcOver10Ms: stalls.gcOver10Ms,
      serviceGcOver100Ms: stalls.gcOver100Ms,
      serviceGcMajor: stalls.gcMajor,
    },
  };
}

/**
 * CPU per notification by process, and the rate at which the whole machine's cores would be spent
 * on it: the throughput that CPU alone would allow.
 */
function cpuRows(phase: string, cpu: { service: CpuByGroup; reference: CpuByGroup }): Array<[string, string, string]> {
  const row = (who: 'service' | 'reference'): [string, string, string] => {
    const c = cpu[who];
    const ceiling = Math.round((os.cpus().length * 1e6) / Math.max(1, c.machine));
    return [
      `  CPU per notification, ${phase}, ${who} (median)`,
      `${c.machine} µs`,
      `${who} ${c.receiver}, Postgres ${c.postgres}, RabbitMQ ${c.rabbitmq}, consumer ${c.consumer}, load generator ${c.loadGenerator}, other ${c.other} µs; ` +
        `the cores would allow ${ceiling}/s`,
    ];
  };
  return [row('service'), row('reference')];
}

/** The receiver that does nothing, and what twice the reference's duplicates rate would be of its rate. */
function bareRow(referenceMedian: number, bare: { median: number; cpuPerNotificationUs: CpuByGroup }): [string, string, string] {
  const c = bare.cpuPerNotificationUs;
  return [
    '  a receiver that does nothing (body read, 200), same load',
    `${bare.median}/s`,
    `twice the reference's duplicates rate is ${Math.round((200 * referenceMedian) / Math.max(1, bare.median))} % of its rate; ` +
      `CPU per request: it ${c.receiver}, load generator ${c.loadGenerator}, machine ${c.machine} µs`,
  ];
}

function lagFigures(lag: LagResult) {
  return { events: lag.events, p50Ms: round2(lag.p50), p99Ms: round2(lag.p99) };
}

function latencyRows(
  phase: string,
  open: ReturnType<typeof openLoopFigures>,
  lag: ReturnType<typeof lagFigures>,
): Array<[string, string, string]> {
  return [
    [`open loop ${RATE}/s, ${phase}: p50 / p99 / max`, `${open.p50Ms} / ${open.p99Ms} / ${open.maxMs} ms`, `${open.failures} non-200 of ${open.sent}`],
    [
      `  recorder, ${phase}`,
      `${open.recorder.transactionMs} ms a transaction`,
      `${open.recorder.notificationsPerTransaction} per transaction; recorder busy ${open.recorder.recorderBusyPercent} %, event loop busy ${open.recorder.eventLoopBusyPercent} %`,
    ],
    [
      `  the reference right after: p50 / p99 / max`,
      `${open.reference.p50Ms} / ${open.reference.p99Ms} / ${open.reference.maxMs} ms`,
      `${open.reference.failures} non-200; load generator's longest stall ${open.reference.loadGeneratorLagMaxMs} ms`,
    ],
    [
      `  longest stall, ${phase}: service / load generator`,
      `${open.stalls.serviceLagMaxMs} / ${open.stalls.loadGeneratorLagMaxMs} ms`,
      `service GC ${open.stalls.serviceGcMs} ms in all, ${open.stalls.serviceGcMajor} major (mark-compact), ${open.stalls.serviceGcOver10Ms} of 10 ms or more, ${open.stalls.serviceGcOver100Ms} of 100 ms or more`,
    ],
    [`commit-to-confirm lag, ${phase}: p50 / p99`, `${lag.p50Ms} / ${lag.p99Ms} ms`, `${lag.events} events`],
  ];
}

if (process.argv[2] === '--reference') {
  void runReference(Number(process.argv[3]), process.argv[4] as string);
} else if (process.argv[2] === '--bare') {
  runBare(Number(process.argv[3]));
} else if (process.argv[2] === '--consumer') {
  void runConsumer(process.argv[3] as string);
} else {
  main().catch((error: unknown) => {
    process.stderr.write(`benchmark failed: ${(error as Error).stack ?? String(error)}\n`);
    process.exit(1);
  });
}
