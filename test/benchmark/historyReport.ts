/**
 * The history mode's report (history.ts): every figure in one object, the targets judged, printed as a
 * table and as one JSON line.
 */
import os from 'node:os';
import type { DatabaseSize } from './historyDatabases';
import type { AdminLookups, BodyPurges, IntakeRun, LookupFigures, RetentionUnderLoad } from './historyPhases';
import {
  BODY_PURGE_DAYS,
  CONNECTIONS,
  HISTORY_DAYS,
  HISTORY_RATE,
  HISTORY_RETENTION_DAYS,
  ROUNDS,
  SECONDS,
  SERVICE_NODE_FLAGS,
} from './options';
import { printTable } from './report';
import type { MemoryCgroup } from './resources';
import { median, round2 } from './stats';

export interface HistoryResults {
  orders: number;
  cgroup: MemoryCgroup;
  seed: { seconds: number; ordersPerSecond: number; settleSeconds: number };
  /** Both databases after seeding and settling, before any intake. */
  sizes: { empty: DatabaseSize; history: DatabaseSize };
  /** The seeded database right before retention (the rounds' intake added to it) and right after. */
  beforeRetention: DatabaseSize;
  afterRetention: DatabaseSize;
  intake: { empty: IntakeRun[]; history: IntakeRun[] };
  lookups: AdminLookups;
  purges: BodyPurges;
  retention: RetentionUnderLoad;
}

const MB = 1e6;
const mb = (bytes: number): number => Math.round(bytes / MB);
const ratio = (a: number, b: number): number => Number((a / Math.max(b, 1e-9)).toFixed(2));

/** The closed loop's throughput and the open loop's latency over the rounds on one database. */
function intakeFigures(runs: readonly IntakeRun[]) {
  return {
    closedLoopRps: Math.round(median(runs.map((r) => r.closed.rps))),
    p50Ms: round2(median(runs.map((r) => r.open.p50))),
    p99Ms: round2(median(runs.map((r) => r.open.p99))),
    runs: runs.map((r) => ({
      closedLoopRps: Math.round(r.closed.rps),
      p50Ms: round2(r.open.p50),
      p99Ms: round2(r.open.p99),
      maxMs: round2(r.open.max),
    })),
    non2xx: runs.reduce((sum, r) => sum + r.closed.non2xx + r.open.failures, 0),
  };
}

/** Each target of issue 30 (item 6, and item 4's body purge), with the value measured and whether it is met. */
function targets(figures: ReturnType<typeof historyFigures>) {
  const { intake, adminLookupP99Ms, purge, retention, orders } = figures;
  const during = retention.duringRetention;
  return [
    {
      target: 'throughput with history ≥ 0.9× empty',
      value: `${intake.throughputRatio.toFixed(2)}×`,
      met: intake.throughputRatio >= 0.9,
    },
    {
      target: `p99 at ${HISTORY_RATE}/s with history ≤ 1.5× empty`,
      value: `${intake.p99Ratio.toFixed(2)}×`,
      met: intake.p99Ratio <= 1.5,
    },
    {
      target: 'admin lookup p99 < 50 ms (old and recent, one at a time)',
      value: `${adminLookupP99Ms} ms`,
      met: adminLookupP99Ms < 50,
    },
    {
      target: `retention of half a year of ${orders === 2_000_000 ? '2 million' : orders} orders < 60 s`,
      value: `${retention.seconds} s`,
      met: retention.seconds < 60 && !retention.outlastedLoop,
    },
    {
      target: 'intake p99 during retention ≤ 3× idle, no non-2xx',
      value: `${during.p99Ratio.toFixed(2)}×, ${during.failures} non-2xx`,
      met: during.p99Ratio <= 3 && during.failures === 0,
    },
    {
      target: 'body purge with nothing left < 1 s',
      value: `${purge.again.seconds} s`,
      met: purge.again.seconds < 1,
    },
  ];
}

/** Every figure of the run, as the JSON line carries it. */
function historyFigures(results: HistoryResults) {
  const { orders, cgroup, seed, sizes, beforeRetention, afterRetention, lookups, purges, retention } = results;
  const empty = intakeFigures(results.intake.empty);
  const history = intakeFigures(results.intake.history);
  return {
    mode: 'history',
    machine: { cores: os.cpus().length, node: process.version },
    serviceNodeFlags: SERVICE_NODE_FLAGS,
    serviceMemoryLimitMb: 'limitMb' in cgroup ? cgroup.limitMb : null,
    orders,
    days: HISTORY_DAYS,
    rounds: ROUNDS,
    secondsPerRun: SECONDS,
    connections: CONNECTIONS,
    rate: HISTORY_RATE,
    seed: {
      seconds: round2(seed.seconds),
      ordersPerSecond: seed.ordersPerSecond,
      settleSeconds: round2(seed.settleSeconds),
    },
    size: {
      emptyMb: mb(sizes.empty.bytes),
      historyMb: mb(sizes.history.bytes),
      mbPerMillionOrders: Math.round(((sizes.history.bytes - sizes.empty.bytes) / MB / orders) * 1e6),
      // What retention gave back: its days' partitions are dropped, their files with them.
      retention: { beforeMb: mb(beforeRetention.bytes), afterMb: mb(afterRetention.bytes) },
      // The tables of a megabyte or more, with their indexes (partitions summed).
      tablesMb: Object.fromEntries(
        sizes.history.tables.filter((t) => t.bytes >= MB).map((t) => [t.table, mb(t.bytes)]),
      ),
    },
    intake: {
      empty,
      history,
      throughputRatio: ratio(history.closedLoopRps, empty.closedLoopRps),
      p99Ratio: ratio(history.p99Ms, empty.p99Ms),
      p50Ratio: ratio(history.p50Ms, empty.p50Ms),
    },
    adminLookups: lookups,
    // The target is judged on lookups one at a time, an operator's; four at a time share two cores' worth of work.
    adminLookupP99Ms: Math.max(lookups.old.sequential.p99Ms, lookups.recent.sequential.p99Ms),
    purge: { days: BODY_PURGE_DAYS, ...purges },
    retention: {
      days: HISTORY_RETENTION_DAYS,
      ...retention.retention,
      idle: retention.idle,
      duringRetention: { ...retention.during, p99Ratio: ratio(retention.during.p99Ms, retention.idle.p99Ms) },
      wholeLoop: retention.wholeLoop,
    },
  };
}

/** Prints the table, the targets, and the JSON line. */
export function printHistoryReport(results: HistoryResults): void {
  const figures = historyFigures(results);
  const judged = targets(figures);
  const { seed, size, intake, adminLookups, purge, retention } = figures;
  const lookupRow = (label: string, f: { sequential: LookupFigures; concurrent: LookupFigures }) =>
    [
      `admin lookup, ${label} orders: p50 / p99`,
      `${f.sequential.p50Ms} / ${f.sequential.p99Ms} ms`,
      `${f.sequential.lookups} one at a time; ${f.concurrent.lookups} ${f.concurrent.concurrency} at a time: ` +
        `${f.concurrent.p50Ms} / ${f.concurrent.p99Ms} ms; ${f.sequential.non200 + f.concurrent.non200} non-200`,
    ] as const;
  const purgeNote = (p: BodyPurges['first']) =>
    `${p.purgedDays} day(s), ${p.bodies} bodies; ${p.wallSeconds} s with the process's start`;
  const during = retention.duringRetention;
  const rows: Array<readonly [string, string, string]> = [
    [
      `seeding ${figures.orders} orders over ${HISTORY_DAYS} days`,
      `${seed.seconds} s`,
      `${seed.ordersPerSecond} orders/s; then vacuum, analyze and checkpoint ${seed.settleSeconds} s`,
    ],
    [
      'database size per million orders',
      `${size.mbPerMillionOrders} MB`,
      `seeded ${size.historyMb} MB, empty ${size.emptyMb} MB; retention took the seeded one from ${size.retention.beforeMb} to ${size.retention.afterMb} MB`,
    ],
    [
      '  of it, by table (with indexes)',
      '',
      Object.entries(size.tablesMb)
        .map(([table, tableMb]) => `${table} ${tableMb}`)
        .join(', ') + ' MB',
    ],
    [
      'closed-loop throughput: history / empty (median)',
      `${intake.history.closedLoopRps} / ${intake.empty.closedLoopRps}/s`,
      `ratio ${intake.throughputRatio}; runs history ${intake.history.runs.map((r) => r.closedLoopRps).join(', ')}, ` +
        `empty ${intake.empty.runs.map((r) => r.closedLoopRps).join(', ')}`,
    ],
    [
      `open loop ${HISTORY_RATE}/s, p99: history / empty (median)`,
      `${intake.history.p99Ms} / ${intake.empty.p99Ms} ms`,
      `ratio ${intake.p99Ratio}; p50 ${intake.history.p50Ms} / ${intake.empty.p50Ms} ms; ` +
        `runs history ${intake.history.runs.map((r) => r.p99Ms).join(', ')}, empty ${intake.empty.runs.map((r) => r.p99Ms).join(', ')}; ` +
        `${intake.history.non2xx + intake.empty.non2xx} non-2xx`,
    ],
    lookupRow('old', adminLookups.old),
    lookupRow('recent', adminLookups.recent),
    [`body purge (--days ${purge.days})`, `${purge.first.seconds} s`, purgeNote(purge.first)],
    [`  again, nothing left`, `${purge.again.seconds} s`, purgeNote(purge.again)],
    [
      `retention (--history-days ${retention.days})`,
      `${retention.seconds} s`,
      `${retention.removedDays} day(s) removed; ${retention.wallSeconds} s with the process's start` +
        (retention.outlastedLoop ? '; it outlasted the open loop' : ''),
    ],
    [
      `open loop ${HISTORY_RATE}/s during retention: p99`,
      `${during.p99Ms} ms`,
      `idle just before ${retention.idle.p99Ms} ms (ratio ${during.p99Ratio}); p50 ${during.p50Ms} ms, max ${during.maxMs} ms; ` +
        `${during.failures} non-2xx of ${during.sent} (whole loop ${retention.wholeLoop.failures} of ${retention.wholeLoop.sent})`,
    ],
  ];
  printTable(rows);
  const width = Math.max(...judged.map((t) => t.target.length));
  process.stdout.write(`\n${'target'.padEnd(width)}  ${'value'.padEnd(20)}  met\n`);
  for (const t of judged)
    process.stdout.write(`${t.target.padEnd(width)}  ${t.value.padEnd(20)}  ${t.met ? 'yes' : 'NO'}\n`);
  process.stdout.write(`${JSON.stringify({ ...figures, targets: judged })}\n`);
}
