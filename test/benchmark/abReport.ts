/**
 * The A/B mode's report: each pair as its round ends (stderr), then every pair, their summary on the log scale,
 * each side's CPU per new notification, and one JSON line with every figure (stdout).
 */
import os from 'node:os';
import { describeWorkload, type AbOptions } from './abOptions';
import type { RefBuild } from './abRef';
import type { ServiceBuild } from './receivers';
import { medianCpu, type CpuByGroup, type MemoryCgroup } from './resources';
import { median, pairedRatios, round2, type PairedRatios } from './stats';

/** One side of the comparison: its build, and the memory limit its chart gives the service. */
export interface Side {
  name: 'A' | 'B';
  label: string;
  build: ServiceBuild;
  memoryLimitMb: number;
  /** A ref's side: its commit and temporary tree (this tree's side has none). */
  built?: RefBuild;
}

/** What one side measured in one round. */
export interface SideResult {
  /** The closed loop's answers per second, and how many. */
  rps: number;
  requests: number;
  /** The requests that were not repeats. */
  newNotifications: number;
  non2xx: number;
  /** Events the consumer received for the loop, and how long after the loop the last came. */
  events: number;
  drainMs: number;
  /** CPU per new notification by process, from the loop's start until its events were all consumed, in µs. */
  cpu: CpuByGroup;
  /** What processes outside the run took meanwhile, in percent of one core (other work on the machine). */
  othersCorePercent: number;
}

export interface Pair {
  first: 'A' | 'B';
  a: SideResult;
  b: SideResult;
}

/** The run's own processes' CPU: the receiver and what it drives, and the load generator (not the rest of the machine). */
export const runCpu = (cpu: CpuByGroup): number =>
  cpu.receiver + cpu.postgres + cpu.rabbitmq + cpu.consumer + cpu.loadGenerator;

const rate = (value: number): string => Math.round(value).toLocaleString('en-US');
const cpuShort = (cpu: CpuByGroup): string => `${cpu.receiver} / ${cpu.postgres} / ${runCpu(cpu)}`;
const percent = (ratio: number): string => `${ratio >= 1 ? '+' : '−'}${Math.abs(100 * (ratio - 1)).toFixed(1)} %`;

/** One pair, as its round ends. */
export function printPair(round: number, { first, a, b }: Pair): void {
  process.stderr.write(
    `ab: round ${round} (${first} first): A ${rate(a.rps)}/s, B ${rate(b.rps)}/s, B/A ${(b.rps / a.rps).toFixed(3)}; ` +
      `µs per new notification (receiver / Postgres / run) A ${cpuShort(a.cpu)}, B ${cpuShort(b.cpu)}; ` +
      `others took ${a.othersCorePercent} / ${b.othersCorePercent} % of a core\n`,
  );
}

/** What the confidence interval says, in words. */
export function verdict(summary: PairedRatios, what: string, higherIsBetter: boolean): string {
  const differs = `B's ${what} differs from A's by ${percent(summary.geometricMean)} (95 % CI ${percent(summary.low)} to ${percent(summary.high)})`;
  if (summary.low <= 1 && summary.high >= 1) return `not resolved: ${differs}, an interval that holds no difference`;
  return `resolved: ${differs}: B is ${summary.low > 1 === higherIsBetter ? 'better' : 'worse'}`;
}

function summaryLines(summary: PairedRatios, what: string, higherIsBetter: boolean): string[] {
  const [betterB, betterA] = higherIsBetter ? [summary.above, summary.below] : [summary.below, summary.above];
  return [
    `B/A ${what}: geometric mean ${summary.geometricMean.toFixed(3)}, 95 % CI ${summary.low.toFixed(3)} to ` +
      `${summary.high.toFixed(3)} (t on the log-ratios, ${summary.pairs} pairs); median ${summary.median.toFixed(3)}`,
    `  B better in ${betterB} rounds, A in ${betterA}${summary.even ? `, even in ${summary.even}` : ''}; pairs from ` +
      `${summary.min.toFixed(3)} to ${summary.max.toFixed(3)}; a pair scatters by ${(100 * summary.spread).toFixed(1)} % ` +
      `(SD of the log-ratios), so ±3 % takes about ${summary.pairsToResolve} pairs`,
    `  ${verdict(summary, what, higherIsBetter)}`,
  ];
}

/** Every pair, the summary and the JSON line. */
export function printAbReport(
  options: AbOptions,
  sides: readonly [Side, Side],
  pairs: readonly Pair[],
  cgroup: MemoryCgroup,
): void {
  const out = (line = ''): void => void process.stdout.write(`${line}\n`);
  const [sideA, sideB] = sides;
  const throughput = pairedRatios(pairs.map((p) => p.b.rps / p.a.rps));
  const cpu = pairedRatios(pairs.map((p) => runCpu(p.b.cpu) / runCpu(p.a.cpu)));
  // The side that ran second against the first, over all rounds: what flipping the order cancels.
  // Where a difference in CPU comes from: each process's own paired ratio.
  const byProcess = (['receiver', 'postgres', 'rabbitmq'] as const).flatMap((key) => {
    const ratios = pairs.map((p) => p.b.cpu[key] / p.a.cpu[key]).filter((r) => r > 0 && Number.isFinite(r));
    return ratios.length < 2 ? [] : [{ key, summary: pairedRatios(ratios) }];
  });
  const secondOverFirst = pairedRatios(pairs.map((p) => (p.first === 'A' ? p.b.rps / p.a.rps : p.a.rps / p.b.rps)));
  const perSide = (pick: (p: Pair) => SideResult) => {
    const results = pairs.map(pick);
    const cpuMedian = medianCpu(results.map((r) => r.cpu));
    return {
      rpsMedian: Math.round(median(results.map((r) => r.rps))),
      cpuPerNewNotificationUs: { ...cpuMedian, run: runCpu(cpuMedian) },
      eventsPerNewNotification: round2(median(results.map((r) => r.events / Math.max(1, r.newNotifications)))),
      newShare: round2(median(results.map((r) => r.newNotifications / Math.max(1, r.requests)))),
      non2xx: results.reduce((sum, r) => sum + r.non2xx, 0),
      drainMsMedian: median(results.map((r) => r.drainMs)),
      othersCorePercentMedian: median(results.map((r) => r.othersCorePercent)),
    };
  };
  const [a, b] = [perSide((p) => p.a), perSide((p) => p.b)];
  const limit = (side: Side): string =>
    'limitMb' in cgroup ? `memory limit ${side.memoryLimitMb} MiB` : 'no memory limit';

  out();
  out(`A/B: A = ${sideA.label}, B = ${sideB.label}`);
  out(
    `  ${pairs.length} rounds of ${options.seconds} s (after ${options.warmUpSeconds} s of warm-up), each side on a fresh ` +
      `database with a consumer bound; ${options.connections} connections; workload ${describeWorkload(options)}`,
  );
  for (const side of sides)
    if (side.built) out(`  ${side.name} built in a temporary tree with ${side.built.nodeModules}`);
  out(
    `  A's service: ${sideA.build.nodeFlags.join(' ') || 'no flags'}, ${limit(sideA)}; B's: ${sideB.build.nodeFlags.join(' ') || 'no flags'}, ${limit(sideB)}`,
  );
  if ('unavailable' in cgroup) out(`  (no memory cgroup: ${cgroup.unavailable})`);
  out();
  out(
    'round  first     A /s     B /s    B/A   A µs per new: recv / Postgres / run   B µs per new: recv / Postgres / run   others, % of a core',
  );
  pairs.forEach((p, i) => {
    out(
      `${String(i + 1).padStart(5)}  ${p.first.padEnd(5)} ${rate(p.a.rps).padStart(8)} ${rate(p.b.rps).padStart(8)} ` +
        `${(p.b.rps / p.a.rps).toFixed(3).padStart(6)}   ${cpuShort(p.a.cpu).padEnd(36)}  ${cpuShort(p.b.cpu).padEnd(36)}  ` +
        `${p.a.othersCorePercent} / ${p.b.othersCorePercent}`,
    );
  });
  out();
  for (const line of summaryLines(throughput, 'throughput', true)) out(line);
  for (const line of summaryLines(cpu, "CPU per new notification (the run's processes)", false)) out(line);
  out(
    `  by process, B/A: ${byProcess
      .map(
        ({ key, summary }) =>
          `${key} ${summary.geometricMean.toFixed(3)} (${summary.low.toFixed(3)} to ${summary.high.toFixed(3)})`,
      )
      .join(', ')}`,
  );
  out(
    `  the side that ran second made ${secondOverFirst.geometricMean.toFixed(3)} of the first's throughput ` +
      `(95 % CI ${secondOverFirst.low.toFixed(3)} to ${secondOverFirst.high.toFixed(3)}); flipping the order each round cancels it`,
  );
  out();
  for (const [name, side] of [
    ['A', a],
    ['B', b],
  ] as const) {
    const c = side.cpuPerNewNotificationUs;
    out(
      `${name}, medians: ${rate(side.rpsMedian)}/s; CPU per new notification ${c.run} µs for the run's processes ` +
        `(receiver ${c.receiver}, Postgres ${c.postgres}, RabbitMQ ${c.rabbitmq}, consumer ${c.consumer}, load generator ` +
        `${c.loadGenerator}), machine ${c.machine} µs (with others' work: ${side.othersCorePercentMedian} % of a core); ` +
        `${side.eventsPerNewNotification} events per new notification, the last ${side.drainMsMedian} ms after the last slice; ` +
        `${side.non2xx} non-2xx`,
    );
  }
  out(
    JSON.stringify({
      mode: 'ab',
      machine: { cores: os.cpus().length, node: process.version },
      a: { label: sideA.label, commit: sideA.built?.commit, nodeModules: sideA.built?.nodeModules, ...a },
      b: { label: sideB.label, commit: sideB.built?.commit, nodeModules: sideB.built?.nodeModules, ...b },
      rounds: pairs.length,
      secondsPerRound: options.seconds,
      warmUpSeconds: options.warmUpSeconds,
      connections: options.connections,
      workload: { name: options.workloadName, ...options.workload },
      throughputRatio: rounded(throughput),
      cpuRatio: rounded(cpu),
      cpuRatioByProcess: Object.fromEntries(byProcess.map(({ key, summary }) => [key, rounded(summary)])),
      secondOverFirst: rounded(secondOverFirst),
      pairs: pairs.map((p) => ({ first: p.first, a: p.a, b: p.b, ratio: round3(p.b.rps / p.a.rps) })),
    }),
  );
}

const round3 = (value: number): number => Math.round(value * 1000) / 1000;

function rounded(summary: PairedRatios) {
  return {
    ...summary,
    geometricMean: round3(summary.geometricMean),
    low: round3(summary.low),
    high: round3(summary.high),
    median: round3(summary.median),
    spread: round3(summary.spread),
    min: round3(summary.min),
    max: round3(summary.max),
  };
}
