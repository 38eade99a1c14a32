import type { Config } from '../../../config';
import {
  httpSender,
  PaymentServiceDouble,
  RETRY_SCHEDULE_MS,
  runSimulation,
  scaledClock,
  type Sender,
  type DoubleTruth,
  type SimulationReport,
} from '../../../simulator';
import { DoubleStateError, DoubleStateFile, readDoubleTruth } from '../../../simulator/doubleStateFile';
import { CliError, EXIT_FAILURE, EXIT_OK, UsageError, type CliIo, type ExitCode } from '../io';
import { emit, startProgress } from '../output';
import {
  adminBaseFor,
  describeDelivery,
  describeFailedAttempt,
  formatOffset,
  NETWORK_ERRORS,
  summaryLines,
} from '../../../simulation/simulationSummary';
import type { SimulateOptions, SimulationPlan } from '../../../simulation/simulationPlan';

/** Network errors that mean nothing listens there at all (as opposed to a slow or failing receiver). */
const CANNOT_CONNECT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);

/** The double running, and how to stop it: its state file (if any) written last. */
export interface RunningDouble {
  double: PaymentServiceDouble;
  stop(): Promise<void>;
}

/**
 * The payment-service double (beside the sender with --api-port, or alone with `simulate api`): it accepts the
 * clients of PAYMENT_API_CREDENTIALS, the same the receiver uses, so `npm start` with PAYMENT_API_URL pointing
 * here can repair what --drop lost. With a state file it starts knowing what the file holds and keeps the file
 * equal to what it knows, so it can be stopped and started again without forgetting.
 */
export async function startDouble(
  io: CliIo,
  config: Config,
  how: { port: number; portOption: string; stateFile: string | undefined; json: boolean },
): Promise<RunningDouble> {
  const clients = config.reconciliation?.credentials ?? [];
  if (clients.length === 0)
    throw new UsageError(
      `${how.portOption} needs PAYMENT_API_URL and PAYMENT_API_CREDENTIALS (the clients the double accepts)`,
    );
  const { stateFile } = how;
  const truth = stateFile === undefined ? null : await truthIn(stateFile);
  let file: DoubleStateFile | null = null;
  const double = new PaymentServiceDouble({ clients, onChange: () => file?.changed() });
  if (truth !== null) double.restoreTruth(truth);
  if (stateFile !== undefined) file = new DoubleStateFile(stateFile, () => double.truth());
  try {
    await double.start({ port: how.port });
  } catch (error) {
    throw new UsageError(`${how.portOption} ${how.port}: cannot listen (${(error as Error).message})`);
  }
  if (!how.json) {
    const known = truth === null ? '' : ` knowing ${truth.orders.length} order(s) from ${stateFile ?? ''}`;
    io.stderr.write(
      `Payment-service double answering at ${double.url} for POS ${clients.map((c) => c.posId).join(', ')}${known}.\n`,
    );
  }
  return {
    double,
    stop: async () => {
      await double.stop();
      await file?.flush();
    },
  };
}

/** What a state file holds (null: no file yet); one that is not a state file is a usage error. */
async function truthIn(stateFile: string): Promise<DoubleTruth | null> {
  try {
    return await readDoubleTruth(stateFile);
  } catch (error) {
    if (error instanceof DoubleStateError) throw new UsageError(error.message);
    throw error;
  }
}

/** `simulate api`: the double alone, answering until Ctrl-C (SIGINT) or SIGTERM. */
export async function serveDouble(
  io: CliIo,
  config: Config,
  options: { port: number; state?: string; json?: boolean },
): Promise<ExitCode> {
  const running = await startDouble(io, config, {
    port: options.port,
    portOption: '--port',
    stateFile: options.state,
    json: options.json === true,
  });
  try {
    emit(io, options.json === true, { url: running.double.url, state: options.state ?? null }, () => [
      'Ctrl-C stops it.',
    ]);
    await holdUntilInterrupted(null);
  } finally {
    await running.stop();
  }
  return EXIT_OK;
}

/**
 * Sends the plan's notifications on the sender's schedule, printing each answer as it comes, then the
 * summary; with the double, keeps it answering for --api-hold. Exit 0 when every notification got 200.
 */
export async function runPlan(
  io: CliIo,
  options: SimulateOptions,
  config: Config,
  plan: SimulationPlan,
  double: PaymentServiceDouble | null,
): Promise<ExitCode> {
  const { url, posId, key, basicAuth, algorithm, seed, random, lifecycles } = plan;
  const json = options.json === true;
  const total = lifecycles.reduce((sum, l) => sum + l.notifications.length, 0);
  const progress = startProgress(io, json, 'notifications', total);
  if (!json) {
    progress.log(
      `Sending ${total} notification(s) of ${lifecycles.length} order(s) to ${url} as POS ${posId} (${algorithm}, ` +
        `time x${options.timeScale}; retries up to ${options.maxAttempts} attempts over ${formatOffset(RETRY_SCHEDULE_MS[options.maxAttempts - 1] ?? 0).slice(1)}).`,
    );
  }
  // Nothing listening at the very first attempt is almost always a receiver not started: say so at
  // once rather than retry for 72 hours (--keep-retrying keeps the sender's schedule).
  let firstAttempt = true;
  const send: Sender = async (...args) => {
    const result = await httpSender(...args);
    const first = firstAttempt;
    firstAttempt = false;
    if (first && options.keepRetrying !== true && result.status === null && CANNOT_CONNECT.has(result.error)) {
      throw new CliError(
        `cannot connect to ${url}: ${NETWORK_ERRORS[result.error] ?? result.error} (${result.error}). Is the ` +
          'receiver running (npm start)? --keep-retrying retries on the 72-hour schedule instead',
      );
    }
    return result;
  };
  let report: SimulationReport;
  try {
    report = await runSimulation({
      send,
      url,
      lifecycles,
      secondKey: key,
      algorithm,
      signatureHeaders: options.signatureHeader,
      basicAuth,
      processingTime: options.processingTime,
      faults: {
        duplicates: options.duplicates,
        reorder: options.reorder,
        maxDelayMs: options.maxDelay,
        drop: options.drop,
      },
      random,
      clock: scaledClock(options.timeScale),
      maxAttempts: options.maxAttempts,
      timeoutMs: options.timeout,
      concurrency: options.concurrency,
      onAttempt: (n, attempt, nextAtMs) => {
        if (attempt.status !== 200 && !json) progress.log(describeFailedAttempt(n, attempt, nextAtMs));
      },
      onDelivery: (delivery) => {
        progress.log(describeDelivery(delivery));
        if (delivery.copy === 1) progress.increment();
      },
      ...(double ? { onStatusChange: (n: { body: Buffer }) => double.learn(n.body) } : {}),
    });
  } finally {
    progress.stop();
  }

  const adminBase = adminBaseFor(url, config.adminPort);
  emit(io, json, { seed, target: url, posId, algorithm, timeScale: options.timeScale, ...report }, () =>
    summaryLines(report, adminBase, seed),
  );
  if (double && options.apiHold > 0) {
    // The receiver's reconciler needs the truth after the last notification: keep answering.
    if (!json)
      io.stderr.write(
        `Payment-service double keeps answering for ${formatOffset(options.apiHold)} (Ctrl-C stops it).\n`,
      );
    await holdUntilInterrupted(options.apiHold);
  }
  return report.summary.gaveUp === 0 ? EXIT_OK : EXIT_FAILURE;
}

/** Until `ms` have passed (null: no end) or the process is asked to stop. */
function holdUntilInterrupted(ms: number | null): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      if (timer !== null) clearTimeout(timer);
      process.off('SIGINT', done);
      process.off('SIGTERM', done);
      resolve();
    };
    const timer = ms === null ? null : setTimeout(done, ms);
    process.once('SIGINT', done);
    process.once('SIGTERM', done);
  });
}
