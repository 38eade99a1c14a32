/**
 * The phases of a run, each on the warmed-up service with the reference beside it: closed-loop
 * throughput rounds, duplicates-only rounds (with the receiver that does nothing), and open-loop
 * latency at a fixed rate with the commit-to-confirm lag of the events it produced.
 */
import pg from 'pg';
import { closedLoop, cycle, madeAhead, openLoop, take, workload } from './load';
import { AHEAD_PER_SECOND, RATE, ROUNDS, SECONDS } from './options';
import type { Service } from './receivers';
import {
  cpuMeter,
  cpuPerRequest,
  idlePercent,
  receiverSubjects,
  type CpuByGroup,
  type ServiceWatcher,
} from './resources';
import { gcSoFar, metricsText, recorderFigures, serviceCounters } from './serviceMetrics';
import { sleep } from '../support/wait';

/** The benchmark's other processes, whose CPU the rounds account for beside the service's. */
export interface OtherReceivers {
  referencePort: number;
  referencePid: number;
  barePort: number;
  barePid: number;
  consumerPid: number;
  /** The service's and the reference's databases: their Postgres backends count, other databases' do not. */
  databases: string[];
}

/**
 * Closed-loop rounds, each the service then the reference on fresh notifications, with what bounds
 * each run: the machine's idle CPU, and how busy the service's recorder and event loop were.
 */
export async function throughputRounds(
  service: Service,
  others: OtherReceivers,
  watcher: ServiceWatcher,
  suffix: string,
) {
  const serviceRps: number[] = [];
  const referenceRps: number[] = [];
  // What bounds each run: the machine's idle CPU, and how busy the service's recorder and event loop were.
  const serviceIdle: number[] = [];
  const referenceIdle: number[] = [];
  const recorderBusy: number[] = [];
  const eventLoopBusy: number[] = [];
  const batchSizes: number[] = [];
  const keptState: number[] = [];
  // CPU per notification of every process involved, to tell how far each receiver is from what two cores allow.
  const servicePid = service.child.pid as number;
  const { referencePort, referencePid, consumerPid, databases } = others;
  const serviceCpu: CpuByGroup[] = [];
  const referenceCpu: CpuByGroup[] = [];
  let non2xx = 0;
  await watcher.enter('closed loop');
  for (let round = 0; round < ROUNDS; round++) {
    // Each receiver gets its own stream of the same lifecycles: fresh notifications however fast it goes.
    // Made (signed) before the counters are read, so that the measured window holds only the run.
    const stream = () => madeAhead(workload(`${suffix}${round}`), AHEAD_PER_SECOND * SECONDS);
    const [serviceStream, referenceStream] = [stream(), stream()];
    const countersBefore = await serviceCounters(service.adminPort);
    const serviceMeter = cpuMeter(receiverSubjects(servicePid, consumerPid, databases));
    const s = await closedLoop(service.port, serviceStream, SECONDS);
    const serviceUsed = serviceMeter.stop();
    const countersAfter = await serviceCounters(service.adminPort);
    const referenceMeter = cpuMeter(receiverSubjects(referencePid, consumerPid, databases));
    const r = await closedLoop(referencePort, referenceStream, SECONDS);
    const referenceUsed = referenceMeter.stop();
    serviceIdle.push(idlePercent(serviceUsed));
    referenceIdle.push(idlePercent(referenceUsed));
    serviceCpu.push(cpuPerRequest(serviceUsed, s.requests));
    referenceCpu.push(cpuPerRequest(referenceUsed, r.requests));
    const recorder = recorderFigures(countersBefore, countersAfter);
    recorderBusy.push(recorder.recorderBusyPercent);
    eventLoopBusy.push(recorder.eventLoopBusyPercent);
    batchSizes.push(recorder.notificationsPerTransaction);
    keptState.push(recorder.keptStatePercent);
    serviceRps.push(s.rps);
    referenceRps.push(r.rps);
    non2xx += s.non2xx + r.non2xx;
    process.stderr.write(
      `round ${round + 1}: service ${s.rps.toFixed(0)}/s (machine ${serviceIdle[round]} % idle, recorder busy ${recorderBusy[round]} %, event loop busy ${eventLoopBusy[round]} %, ` +
        `${(batchSizes[round] as number).toFixed(1)} per transaction, ${keptState[round]} % from kept state), reference ${r.rps.toFixed(0)}/s (machine ${referenceIdle[round]} % idle)\n`,
    );
  }
  return {
    serviceRps,
    referenceRps,
    serviceIdle,
    referenceIdle,
    recorderBusy,
    eventLoopBusy,
    batchSizes,
    keptState,
    serviceCpu,
    referenceCpu,
    non2xx,
  };
}

/**
 * Duplicates only: closed-loop rounds of notifications recorded already, on the service, the
 * reference and the receiver that does nothing (the floor of any receiver here).
 */
export async function duplicatesRounds(
  service: Service,
  others: OtherReceivers,
  watcher: ServiceWatcher,
  suffix: string,
) {
  const servicePid = service.child.pid as number;
  const { referencePort, referencePid, barePort, barePid, consumerPid, databases } = others;
  await watcher.enter('duplicates only');
  // Everything below was recorded already.
  const recorded = take(workload(`${suffix}dup`), 2000);
  await closedLoop(service.port, cycle(recorded), 2);
  await closedLoop(referencePort, cycle(recorded), 2);
  const dupService: number[] = [];
  const dupReference: number[] = [];
  const dupServiceCpu: CpuByGroup[] = [];
  const dupReferenceCpu: CpuByGroup[] = [];
  /** One duplicates-only run of a receiver: its throughput, and the CPU per request it took. */
  const duplicatesRun = async (port: number, pid: number, rps: number[], cpu: CpuByGroup[]): Promise<void> => {
    const meter = cpuMeter(receiverSubjects(pid, consumerPid, databases));
    const run = await closedLoop(port, cycle(recorded), Math.max(3, SECONDS / 2));
    cpu.push(cpuPerRequest(meter.stop(), run.requests));
    rps.push(run.rps);
  };
  const dupBare: number[] = [];
  const dupBareCpu: CpuByGroup[] = [];
  await closedLoop(barePort, cycle(recorded), 2);
  for (let round = 0; round < ROUNDS; round++) {
    await duplicatesRun(service.port, servicePid, dupService, dupServiceCpu);
    await duplicatesRun(referencePort, referencePid, dupReference, dupReferenceCpu);
    await duplicatesRun(barePort, barePid, dupBare, dupBareCpu);
  }
  return { dupService, dupReference, dupServiceCpu, dupReferenceCpu, dupBare, dupBareCpu };
}

/**
 * Open loop at RATE on fresh notifications, then the commit-to-confirm lag of the events it produced,
 * with what could make its tail: the service's longest event-loop delay and its garbage collections
 * during the loop, beside the load generator's own longest delay.
 */
export async function latencyPhase(
  service: Service,
  watcher: ServiceWatcher,
  phase: string,
  databaseUrl: string,
  seed: string,
) {
  const notifications = take(workload(seed), RATE * SECONDS);
  await watcher.enter(phase);
  const [gcBefore, countersBefore] = [
    gcSoFar(await metricsText(service.adminPort)),
    await serviceCounters(service.adminPort),
  ];
  const since = new Date();
  const open = await openLoop(service.port, notifications, RATE, SECONDS);
  const until = new Date();
  const [gcAfter, countersAfter] = [
    gcSoFar(await metricsText(service.adminPort)),
    await serviceCounters(service.adminPort),
  ];
  await watcher.enter(`${phase}, publishing`);
  const stalls = {
    serviceLagMaxMs: watcher.worstLagMs(phase),
    loadGeneratorLagMaxMs: open.loadGeneratorLagMaxMs,
    gcMs: gcAfter.ms - gcBefore.ms,
    gcOver10Ms: gcAfter.over10Ms - gcBefore.over10Ms,
    gcOver100Ms: gcAfter.over100Ms - gcBefore.over100Ms,
    gcMajor: gcAfter.major - gcBefore.major,
  };
  return {
    open,
    stalls,
    recorder: recorderFigures(countersBefore, countersAfter),
    lag: await commitToConfirmLag(databaseUrl, since, until),
  };
}

/**
 * The reference at the same fixed rate, on fresh notifications, right after the service's phase:
 * the latency a receiver that only verifies and inserts gets from this machine and this load
 * generator at that moment, the floor under the service's figure.
 */
export async function referenceLatencyPhase(port: number, seed: string) {
  await sleep(2000);
  return openLoop(port, take(workload(seed), RATE * SECONDS), RATE, SECONDS);
}

/** The commit-to-confirm lag of the events committed between two times, once all are published. */
async function commitToConfirmLag(databaseUrl: string, since: Date, until: Date) {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    return await lagOf(client, since, until);
  } finally {
    await client.end();
  }
}

/** The lag itself, on a connection of the caller's: when each event was committed, and when it was published. */
async function lagOf(client: pg.Client, since: Date, until: Date) {
  // Publishing may still be catching up: wait until everything committed so far is confirmed.
  for (let i = 0; i < 300; i++) {
    const { rows } = await client.query<{ n: string }>(
      `SELECT (SELECT count(*) FROM outbox_events WHERE xid > (SELECT xid FROM outbox_cursor) AND published_at IS NULL) + (SELECT count(*) FROM outbox_held) AS n`,
    );
    if (rows[0]?.n === '0') break;
    await sleep(100);
  }
  // When each was published, as the relay's cursor history says it (docs/decisions/0023): the end of the cursor's
  // second that passed it, so within a second after (the figure reads up to a second high).
  const { rows } = await client.query<{ p50: number; p99: number; n: string }>(
    `SELECT count(*) AS n,
            1000 * percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM published - created_at)) AS p50,
            1000 * percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM published - created_at)) AS p99
       FROM (SELECT e.created_at,
                    coalesce(e.published_at,
                             (SELECT h.reached_at FROM outbox_cursor_history h
                               WHERE h.opened_at > e.created_at - interval '1 second' AND h.xid >= e.xid
                               ORDER BY h.opened_at LIMIT 1)) AS published
               FROM outbox_events e WHERE e.created_at >= $1 AND e.created_at <= $2) AS events`,
    [since, until],
  );
  return { events: Number(rows[0]?.n ?? 0), p50: Number(rows[0]?.p50 ?? 0), p99: Number(rows[0]?.p99 ?? 0) };
}

/** What a latency phase measured. */
export type LatencyPhaseResult = Awaited<ReturnType<typeof latencyPhase>>;
/** The commit-to-confirm lag of a latency phase's events. */
export type LagResult = Awaited<ReturnType<typeof commitToConfirmLag>>;
/** What the closed-loop rounds measured. */
export type ThroughputRounds = Awaited<ReturnType<typeof throughputRounds>>;
/** What the duplicates-only rounds measured. */
export type DuplicatesRounds = Awaited<ReturnType<typeof duplicatesRounds>>;
