/**
 * Resource accounting: the service's memory cgroup (the chart's limit), its resident memory by
 * phase, and the CPU time of every process involved (the receiver, Postgres, RabbitMQ, the
 * consumer, the load generator) from /proc.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { metricsText, metricTotal } from './serviceMetrics';
import { median } from './stats';

/** The names of the benchmark's memory cgroups start with this. */
export const CGROUP_PREFIX = 'bench_service_';

export type MemoryCgroup = { procs: string; limitMb: number; remove(): void } | { unavailable: string };

/**
 * A memory cgroup with a memory limit (by default the chart's, as the pod's container has). Node
 * sizes V8's heap from the memory it is constrained to: in a 384 MiB container a 259 MB heap with
 * 1 MiB semi-spaces, against 4 GB and 16 MiB on an unconstrained machine with 24 GiB, so without it
 * the benchmark would measure another heap than the deployed one. Needs a writable memory controller (cgroup v1's memory
 * hierarchy, or v2's with the memory controller enabled, as root); where there is none the service
 * runs unconstrained, and the table and the JSON line say so. First it removes the groups earlier runs left
 * (`sweep`): a run that makes two (the A/B mode) sweeps before its first only, or it would remove it.
 */
export function memoryCgroup(name: string, limitMb: number, sweep = true): MemoryCgroup {
  const hierarchies = [
    { root: '/sys/fs/cgroup/memory', limitFile: 'memory.limit_in_bytes' },
    { root: '/sys/fs/cgroup', limitFile: 'memory.max' },
  ];
  const hierarchy = hierarchies.find(({ root }) => existsSync(path.join(root, 'cgroup.procs')));
  if (!hierarchy) return { unavailable: 'no cgroup hierarchy with a memory controller' };
  const group = path.join(hierarchy.root, name);
  if (sweep) removeLeftCgroups(hierarchy.root);
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

export function memoryMb(pid: number, field: 'VmHWM' | 'VmRSS'): number {
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
export function watchService(pid: number, adminPort: number) {
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
        newSpaceMaxMb = Math.max(
          newSpaceMaxMb,
          metricTotal(text, 'nodejs_heap_space_size_total_bytes', 'space="new"') / 2 ** 20,
        );
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
      return {
        phase: phaseOfPeak,
        ...atPeak,
        rssMb: Math.round(atPeak.rssMb),
        newSpaceMaxMb: Math.round(newSpaceMaxMb),
      };
    },
  };
}

/** The machine's idle and total CPU time so far (/proc/stat, in ticks), to tell a run bound by CPU from one bound by waiting. */
function cpuTicks(): { idle: number; total: number } {
  const fields = (readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '').trim().split(/\s+/).slice(1).map(Number);
  return { idle: (fields[3] ?? 0) + (fields[4] ?? 0), total: fields.reduce((a, b) => a + b, 0) };
}

/**
 * Where a closed-loop run's CPU went: the receiver under load and what it drives, each a set of processes; the
 * rest of the machine (other work on it, other databases' Postgres backends); and the machine's busy time in all.
 */
const CPU_KEYS = ['receiver', 'postgres', 'rabbitmq', 'consumer', 'loadGenerator', 'other', 'machine'] as const;
type CpuKey = (typeof CPU_KEYS)[number];
export type CpuByGroup = Record<CpuKey, number>;
const cpuFigures = (value: (key: CpuKey) => number): CpuByGroup =>
  Object.fromEntries(CPU_KEYS.map((key) => [key, value(key)])) as CpuByGroup;

/** Linux's clock tick for /proc CPU times (USER_HZ), in microseconds. */
export const TICK_US = 10_000;

/**
 * Whose CPU a meter counts apart, each under a group's name: processes by pid (a receiver, its consumer), and the
 * Postgres backends of databases. Every meter also has the groups `postgresServer` (the server's own processes:
 * checkpointer, WAL writer, background writer, the postmaster's own time; they work for every database),
 * `rabbitmq`, `loadGenerator` (this process: autocannon runs in it) and `other` (the rest of the machine, other
 * databases' backends among it).
 */
export interface CpuSubjects {
  pids: ReadonlyMap<number, string>;
  databases: ReadonlyMap<string, string>;
}

/** The subjects of a run of the default mode: the receiver under load, the consumer, and the run's databases. */
export const receiverSubjects = (
  receiverPid: number,
  consumerPid: number,
  databases: readonly string[],
): CpuSubjects => ({
  pids: new Map([
    [receiverPid, 'receiver'],
    [consumerPid, 'consumer'],
  ]),
  databases: new Map(databases.map((database) => [database, 'postgres'])),
});

/**
 * What a Postgres process is, from its process title (/proc/<pid>/cmdline): the postmaster (its binary's path);
 * a backend of a database (its title names it: a client's, an autovacuum worker's); another database's backend
 * (a client address, `host(port)` or `[local]`); or else one of the server's own processes.
 */
export function postgresRole(
  title: string,
  databases: ReadonlyMap<string, string>,
): { backendOf: string } | 'postmaster' | 'elsewhere' | 'server' {
  if (!title.startsWith('postgres:')) return 'postmaster';
  const words = title.split(/\s+/);
  const database = words.find((word) => databases.has(word));
  if (database !== undefined) return { backendOf: database };
  return words.some((word) => /^\S+\(\d+\)$/.test(word) || word === '[local]') ? 'elsewhere' : 'server';
}

/** A process's CPU as a meter counts it. */
interface Counted {
  group: string;
  ticks: number;
  /** A Postgres process: its own time only, and its last reading kept should it exit. */
  postgres: boolean;
}

/** The CPU time a meter counted, in ticks: the machine's idle and total, and every group's. */
export interface CpuUsed {
  machine: { idle: number; total: number };
  groups: Record<string, number>;
}

export interface CpuMeter {
  /** What was spent since the meter started or since the last lap, and a new lap begins. */
  lap(): CpuUsed;
  /** The last lap; the meter stops reading. */
  stop(): CpuUsed;
}

/**
 * Counts the CPU time (user and system) spent from now on, lap by lap: the machine's (/proc/stat), and every
 * process's by group (CpuSubjects).
 *
 * A process counts its own time and its reaped children's: a process that exits between two readings (a pool's
 * idle connection closed, say: its backend's whole life) leaves the sum and comes back in its parent's count, so
 * the difference between two readings is the time spent between them. Not so for Postgres: its postmaster reaps
 * every database's backends, so it counts its own time only, and the Postgres processes are read every `everyMs`
 * and counted up to their last reading should they exit.
 */
export function cpuMeter(subjects: CpuSubjects, everyMs = 500): CpuMeter {
  const counted = new Map<string, Counted>();
  const classify = (pid: number, comm: string): string => {
    const named = subjects.pids.get(pid);
    if (named !== undefined) return named;
    if (pid === process.pid) return 'loadGenerator';
    if (comm === 'beam.smp') return 'rabbitmq';
    if (comm !== 'postgres') return 'other';
    let title: string;
    try {
      title = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0+/g, ' ').trim();
    } catch {
      return 'other';
    }
    const role = postgresRole(title, subjects.databases);
    if (typeof role === 'object') return subjects.databases.get(role.backendOf) as string;
    return role === 'elsewhere' ? 'other' : 'postgresServer';
  };
  /** Reads every process (all: true), or only the Postgres processes known and any new one. */
  const read = (all: boolean): void => {
    const alive = new Set<string>();
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      let stat: string;
      try {
        stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      } catch {
        continue; // exited meanwhile
      }
      // pid (comm) state ...: comm may hold spaces and parentheses, so fields are counted after the last ')'.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const key = `${entry}@${fields[19]}`; // pid and start time: a pid reused is another process
      alive.add(key);
      const known = counted.get(key);
      if (known && !known.postgres && !all) continue; // between full readings, Postgres only
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const [own, children] = [Number(fields[11]) + Number(fields[12]), Number(fields[13]) + Number(fields[14])];
      const postgres = comm === 'postgres';
      const group = known?.group ?? classify(Number(entry), comm);
      counted.set(key, { group, postgres, ticks: postgres ? own : own + children });
    }
    if (!all) return;
    for (const [key, { postgres }] of counted) if (!alive.has(key) && !postgres) counted.delete(key);
  };
  const reading = () => {
    const groups: Record<string, number> = { postgresServer: 0, rabbitmq: 0, loadGenerator: 0, other: 0 };
    for (const group of [...subjects.pids.values(), ...subjects.databases.values()]) groups[group] = 0;
    for (const { group, ticks } of counted.values()) groups[group] = (groups[group] ?? 0) + ticks;
    return { machine: cpuTicks(), groups };
  };
  read(true);
  let last = reading();
  const sampler = setInterval(() => read(false), everyMs);
  const lap = (): CpuUsed => {
    read(true);
    const now = reading();
    const groups: Record<string, number> = {};
    for (const [group, ticks] of Object.entries(now.groups)) groups[group] = ticks - (last.groups[group] ?? 0);
    const machine = { idle: now.machine.idle - last.machine.idle, total: now.machine.total - last.machine.total };
    last = now;
    return { machine, groups };
  };
  return {
    lap,
    stop(): CpuUsed {
      clearInterval(sampler);
      return lap();
    },
  };
}

/** Percent of the machine's CPU time left idle while a meter ran. */
export const idlePercent = ({ machine }: CpuUsed): number =>
  Math.round((100 * machine.idle) / Math.max(1, machine.total));

/** Microseconds of CPU per item (µs = ticks × TICK_US / count). */
export const perItemUs = (ticks: number, count: number): number => Math.round((ticks * TICK_US) / Math.max(1, count));

/**
 * Microseconds of CPU per request (or per whatever `count` counts) of a default-mode meter (receiverSubjects), by
 * group (Postgres: the run's databases' backends and the server's own processes), and of the machine's busy time.
 */
export function cpuPerRequest({ machine, groups }: CpuUsed, count: number): CpuByGroup {
  const ticks = (key: CpuKey): number =>
    key === 'machine'
      ? machine.total - machine.idle
      : key === 'postgres'
        ? (groups.postgres ?? 0) + (groups.postgresServer ?? 0)
        : (groups[key] ?? 0);
  return cpuFigures((key) => perItemUs(ticks(key), count));
}

/** The median of each group over runs. */
export const medianCpu = (runs: readonly CpuByGroup[]): CpuByGroup =>
  cpuFigures((key) => median(runs.map((r) => r[key])));

/** What watchService returns: the phase switch, the worst lag by phase and the peak. */
export type ServiceWatcher = ReturnType<typeof watchService>;
/** The service's memory at its highest sample. */
export type ServicePeak = ReturnType<ServiceWatcher['peak']>;
