/**
 * The report: every figure of a run in one object, printed as a table for the reader and as one
 * JSON line for comparing runs.
 */
import os from 'node:os';
import path from 'node:path';
import type { OpenLoopResult } from './load';
import { CONNECTIONS, RATE, ROOT, ROUNDS, SECONDS, SERVICE_NODE_FLAGS } from './options';
import type { DuplicatesRounds, LagResult, LatencyPhaseResult, ThroughputRounds } from './phases';
import { summarizeProfile } from './profileSummary';
import { medianCpu, type CpuByGroup, type MemoryCgroup, type ServicePeak } from './resources';
import { median, round2 } from './stats';

/** What a run measured, phase by phase. */
export interface RunResults {
  cgroup: MemoryCgroup;
  readyTimes: number[];
  steady: LatencyPhaseResult;
  referenceSteady: OpenLoopResult;
  throughput: ThroughputRounds;
  duplicates: DuplicatesRounds;
  afterBursts: LatencyPhaseResult;
  referenceAfterBursts: OpenLoopResult;
  /** The service's peak resident memory (the kernel's VmHWM), in MB. */
  rss: number;
  peak: ServicePeak;
  consumed: number;
}

/** Prints the table, the CPU profile's summary when one was taken, and the JSON line. */
export function printReport(results: RunResults): void {
  const { cgroup, readyTimes, steady, referenceSteady, afterBursts, referenceAfterBursts, rss, peak, consumed } =
    results;
  const { serviceRps, referenceRps, serviceIdle, referenceIdle, recorderBusy, eventLoopBusy, batchSizes, keptState } =
    results.throughput;
  const { serviceCpu, referenceCpu, non2xx } = results.throughput;
  const { dupService, dupReference, dupServiceCpu, dupReferenceCpu, dupBare, dupBareCpu } = results.duplicates;
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
      keptStatePercent: median(keptState),
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
    afterBursts: {
      openLoop: openLoopFigures(afterBursts, referenceAfterBursts),
      commitToConfirm: lagFigures(afterBursts.lag),
    },
    eventsConsumed: consumed,
    peakRssMb: Math.round(rss),
    peakRssPhase: peak.phase,
    highestRssSample: { rssMb: peak.rssMb, v8HeapTotalMb: peak.heapTotalMb, externalMb: peak.externalMb },
    v8NewSpaceMaxMb: peak.newSpaceMaxMb,
    readyMs: { median: median(readyTimes), runs: readyTimes },
  };

  const rows: Array<[string, string, string]> = [
    [
      'closed-loop throughput, 32 conns (median)',
      `${figures.throughput.serviceMedian}/s`,
      `reference ${figures.throughput.referenceMedian}/s, ratio ${figures.throughput.ratio}`,
    ],
    [
      'what bounds the closed loop (median)',
      `${figures.throughput.recorderBusyPercent} % recorder busy`,
      `event loop busy ${figures.throughput.eventLoopBusyPercent} %; ` +
        `${figures.throughput.notificationsPerTransaction} per transaction, ${figures.throughput.keptStatePercent} % from kept state; machine idle ${figures.throughput.machineIdlePercent.service} % (reference ${figures.throughput.machineIdlePercent.reference} %)`,
    ],
    ...cpuRows('closed loop', figures.throughput.cpuPerNotificationUs),
    [
      'duplicates-only throughput (median)',
      `${figures.duplicatesOnly.serviceMedian}/s`,
      `reference ${figures.duplicatesOnly.referenceMedian}/s, ratio ${figures.duplicatesOnly.ratio}`,
    ],
    ...cpuRows('duplicates only', figures.duplicatesOnly.cpuPerNotificationUs),
    bareRow(figures.duplicatesOnly.referenceMedian, figures.duplicatesOnly.bareReceiver),
    ...latencyRows('steady', figures.openLoop, figures.commitToConfirm),
    ...latencyRows('after the bursts', figures.afterBursts.openLoop, figures.afterBursts.commitToConfirm),
    [
      'peak RSS of the service',
      `${figures.peakRssMb} MB`,
      `highest sample ${peak.rssMb} MB during: ${peak.phase} (V8 heap ${peak.heapTotalMb} MB, external ${peak.externalMb} MB); ` +
        `V8 new space at most ${peak.newSpaceMaxMb} MB; service flags: ${SERVICE_NODE_FLAGS.join(' ') || 'none'}; ` +
        ('limitMb' in cgroup
          ? `memory limit ${cgroup.limitMb} MiB (in a cgroup)`
          : `no memory limit (${cgroup.unavailable})`),
    ],
    ['start to ready (migrations applied)', `${figures.readyMs.median} ms`, `runs ${readyTimes.join(', ')} ms`],
  ];
  printTable(rows);
  if (process.env.BENCH_PROFILE === '1') {
    process.stdout.write('\nwhere the service spent its CPU samples (whole run, self time by layer):\n');
    for (const { layer, percent } of summarizeProfile(path.join(ROOT, 'bench.cpuprofile'))) {
      process.stdout.write(`  ${String(percent).padStart(5)} %  ${layer}\n`);
    }
  }
  process.stdout.write(`${JSON.stringify(figures)}\n`);
}

/** A report's table: a figure, its value and a note a row. */
export function printTable(rows: ReadonlyArray<readonly [string, string, string]>): void {
  const width = Math.max(...rows.map((r) => r[0].length));
  process.stdout.write(`\n${'figure'.padEnd(width)}  value                     note\n`);
  for (const [name, value, note] of rows) process.stdout.write(`${name.padEnd(width)}  ${value.padEnd(24)}  ${note}\n`);
}

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
function bareRow(
  referenceMedian: number,
  bare: { median: number; cpuPerNotificationUs: CpuByGroup },
): [string, string, string] {
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
    [
      `open loop ${RATE}/s, ${phase}: p50 / p99 / max`,
      `${open.p50Ms} / ${open.p99Ms} / ${open.maxMs} ms`,
      `${open.failures} non-200 of ${open.sent}`,
    ],
    [
      `  recorder, ${phase}`,
      `${open.recorder.transactionMs} ms a transaction`,
      `${open.recorder.notificationsPerTransaction} per transaction, ${open.recorder.keptStatePercent} % from kept state (${open.recorder.guardFailedPercent} % guards failed); recorder busy ${open.recorder.recorderBusyPercent} %, event loop busy ${open.recorder.eventLoopBusyPercent} %`,
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
