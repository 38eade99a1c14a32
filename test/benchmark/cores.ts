/**
 * `npm run bench -- --cores`: how the service and the reference receiver grow from one core to two (issue 58's
 * item 6), so that "uses the machine" is a figure.
 *
 * One Postgres cluster of the run's own (benchCluster.ts), the service (as the default mode runs it) and the
 * reference receiver (receivers.ts) each on a database of it, warmed up (the service at the open loop's rate for
 * 10 s, the reference by 3 s of closed loop); then BENCH_ROUNDS rounds, each measuring every setting in turn (the
 * order rotated round by round, so that a drift of the host falls on every setting alike): the receivers' and the
 * cluster's processes moved to the setting's CPUs (`taskset -a -p`; backends forked later inherit the
 * postmaster's), then a closed loop of BENCH_SECONDS on the service and one on the reference, on fresh
 * notifications. Medians are reported.
 * - "1 core": the receiver and Postgres on CPU 0; the load generator (this process) and the consumer on CPU 1.
 * - "1 core*": the receiver and Postgres on CPU 0; the load generator and the consumer on both: only the
 *   receiver's allowance differs from "2 cores".
 * - "2 cores": everything on CPUs 0-1 (on a 2-core machine the load generator has no third).
 * RabbitMQ is the machine's, on every CPU throughout: the run does not pin a shared broker. The machine's
 * cluster (5432) is not used.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { freePort } from '../support/net';
import { sleep } from '../support/wait';
import { onOwnCluster } from './benchCluster';
import { closedLoop, madeAhead, openLoop, take, workload } from './load';
import { AHEAD_PER_SECOND, RATE, ROUNDS, SECONDS } from './options';
import { startService, stop, waitForPort } from './receivers';
import { cpuMeter, idlePercent, receiverSubjects } from './resources';
import { median } from './stats';

interface Setting {
  name: string;
  /** Where the receiver and Postgres run. */
  cpus: string;
  /** Where the load generator and the consumer run. */
  loadCpus: string;
}

const SETTINGS: readonly Setting[] = [
  { name: '1 core', cpus: '0', loadCpus: '1' },
  { name: '1 core*', cpus: '0', loadCpus: '0-1' },
  { name: '2 cores', cpus: '0-1', loadCpus: '0-1' },
];

interface SettingResult {
  setting: Setting;
  serviceRps: number[];
  referenceRps: number[];
  serviceIdle: number[];
  referenceIdle: number[];
}

const progress = (line: string): void => void process.stderr.write(`cores: ${line}\n`);

/** Moves a running process (and its threads) to `cpus`. */
const pin = (pid: number, cpus: string): void => void execFileSync('taskset', ['-a', '-p', '-c', cpus, String(pid)]);

export async function runCores(): Promise<void> {
  if (os.cpus().length < 2) throw new Error('the cores mode needs a machine of 2 CPUs or more');
  const all = `0-${os.cpus().length - 1}`;
  await onOwnCluster(false, async ({ cluster, suffix, exchange, consumer, cgroup }) => {
    const [serviceDb, referenceDb] = [`bench_cores_service_${suffix}`, `bench_cores_reference_${suffix}`];
    const children: ChildProcess[] = [];
    try {
      const admin = new pg.Client({ connectionString: cluster.url('postgres') });
      await admin.connect();
      await admin.query(`CREATE DATABASE ${referenceDb}`);
      await admin.end();
      const referencePort = await freePort();
      const reference = spawn(
        process.execPath,
        [path.join(__dirname, 'run.js'), '--reference', String(referencePort), cluster.url(referenceDb)],
        { stdio: ['ignore', 'inherit', 'inherit'] },
      );
      children.push(reference);
      const service = await startService(cluster.url(serviceDb), exchange, cgroup);
      children.push(service.child);
      await waitForPort(referencePort);
      await openLoop(service.port, take(workload(`${suffix}warm`), RATE * 10), RATE, 10);
      await closedLoop(referencePort, workload(`${suffix}warm`), 3);
      const results: SettingResult[] = SETTINGS.map((setting) => ({
        setting,
        serviceRps: [],
        referenceRps: [],
        serviceIdle: [],
        referenceIdle: [],
      }));
      const databases = [serviceDb, referenceDb];
      const receivers = [service.child.pid as number, reference.pid as number];
      for (let round = 0; round < ROUNDS; round++) {
        for (let turn = 0; turn < results.length; turn++) {
          const result = results[(round + turn) % results.length] as SettingResult;
          const { setting } = result;
          for (const pid of [...receivers, ...cluster.pids()]) pin(pid, setting.cpus);
          for (const pid of [process.pid, consumer.pid as number]) pin(pid, setting.loadCpus);
          await sleep(1000);
          const stream = () => madeAhead(workload(`${suffix}${round}${turn}`), AHEAD_PER_SECOND * SECONDS);
          const [serviceStream, referenceStream] = [stream(), stream()];
          const serviceMeter = cpuMeter(
            receiverSubjects(service.child.pid as number, consumer.pid as number, databases),
          );
          const s = await closedLoop(service.port, serviceStream, SECONDS);
          result.serviceIdle.push(idlePercent(serviceMeter.stop()));
          const referenceMeter = cpuMeter(receiverSubjects(reference.pid as number, consumer.pid as number, databases));
          const r = await closedLoop(referencePort, referenceStream, SECONDS);
          result.referenceIdle.push(idlePercent(referenceMeter.stop()));
          result.serviceRps.push(s.rps);
          result.referenceRps.push(r.rps);
          progress(
            `round ${round + 1}, ${setting.name}: service ${s.rps.toFixed(0)}/s (machine ${result.serviceIdle[result.serviceIdle.length - 1]} % idle, ` +
              `${s.non2xx} not 2xx), reference ${r.rps.toFixed(0)}/s (${r.non2xx} not 2xx)`,
          );
        }
      }
      printCores(results);
    } finally {
      pin(process.pid, all);
      await Promise.all(children.map((child) => stop(child)));
    }
  });
}

function printCores(results: readonly SettingResult[]): void {
  const lines = [
    '',
    `Cores (medians of ${ROUNDS} closed loops of ${SECONDS} s, ${os.cpus().length}-CPU machine)`,
    `${'setting'.padEnd(10)}${'service/s'.padStart(11)}${'idle'.padStart(7)}${'reference/s'.padStart(13)}${'idle'.padStart(7)}${'ratio'.padStart(8)}`,
  ];
  const figures = results.map(({ setting, serviceRps, referenceRps, serviceIdle, referenceIdle }) => {
    const [service, reference] = [median(serviceRps), median(referenceRps)];
    lines.push(
      `${setting.name.padEnd(10)}${service.toFixed(0).padStart(11)}${`${median(serviceIdle)} %`.padStart(7)}` +
        `${reference.toFixed(0).padStart(13)}${`${median(referenceIdle)} %`.padStart(7)}${(service / reference).toFixed(2).padStart(8)}`,
    );
    return { setting: setting.name, cpus: setting.cpus, service, reference, ratio: service / reference };
  });
  const [, one, two] = figures;
  if (one !== undefined && two !== undefined) {
    lines.push(
      `from 1 core* to 2 cores (the load anywhere in both): service ×${(two.service / one.service).toFixed(2)}, reference ×${(two.reference / one.reference).toFixed(2)}`,
    );
  }
  process.stdout.write(`${lines.join('\n')}\n${JSON.stringify({ cores: figures })}\n`);
}
