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
 * runs unconstrained, and the table and the JSON line say so.
 */
export function memoryCgroup(name: string, limitMb: number): MemoryCgroup {
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

/** Percent of the machine's CPU time left idle between two readings. */
export const idlePercent = (from: ReturnType<typeof cpuTicks>, to: ReturnType<typeof cpuTicks>): number =>
  Math.round((100 * (to.idle - from.idle)) / Math.max(1, to.total - from.total));

/** Where a closed-loop run's CPU went: the receiver under load and what it drives, each a set of processes; and the machine's busy time in all. */
const CPU_KEYS = ['receiver', 'postgres', 'rabbitmq', 'consumer', 'loadGenerator', 'other', 'machine'] as const;
type CpuKey = (typeof CPU_KEYS)[number];
type CpuGroup = Exclude<CpuKey, 'machine'>;
export type CpuByGroup = Record<CpuKey, number>;
const cpuFigures = (value: (key: CpuKey) => number): CpuByGroup =>
  Object.fromEntries(CPU_KEYS.map((key) => [key, value(key)])) as CpuByGroup;

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
export function cpuReading(receiverPid: number, consumerPid: number): CpuReading {
  const groups: Record<CpuGroup, number> = {
    receiver: 0,
    postgres: 0,
    rabbitmq: 0,
    consumer: 0,
    loadGenerator: 0,
    other: 0,
  };
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
      pid === receiverPid
        ? 'receiver'
        : pid === consumerPid
          ? 'consumer'
          : pid === process.pid
            ? 'loadGenerator'
            : comm === 'postgres'
              ? 'postgres'
              : comm === 'beam.smp'
                ? 'rabbitmq'
                : 'other';
    groups[group] += ticks;
  }
  return { machine: cpuTicks(), groups };
}

/** Microseconds of CPU per request between two readings, by group, and of the machine's busy time in all. */
export function cpuPerRequest(from: CpuReading, to: CpuReading, requests: number): CpuByGroup {
  const busy = ({ machine }: CpuReading): number => machine.total - machine.idle;
  const ticks = (key: CpuKey): number =>
    key === 'machine' ? busy(to) - busy(from) : to.groups[key] - from.groups[key];
  return cpuFigures((key) => Math.round((ticks(key) * TICK_US) / Math.max(1, requests)));
}

/** The median of each group over runs. */
export const medianCpu = (runs: readonly CpuByGroup[]): CpuByGroup =>
  cpuFigures((key) => median(runs.map((r) => r[key])));

/** What watchService returns: the phase switch, the worst lag by phase and the peak. */
export type ServiceWatcher = ReturnType<typeof watchService>;
/** The service's memory at its highest sample. */
export type ServicePeak = ReturnType<ServiceWatcher['peak']>;
