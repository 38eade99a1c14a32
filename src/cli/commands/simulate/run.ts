import type { Config } from '../../../config';
import {
  httpSender,
  PaymentServiceDouble,
  RETRY_SCHEDULE_MS,
  runSimulation,
  scaledClock,
  type Sender,
  type SimulationReport,
} from '../../../simulator';
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

/**
 * The payment-service double beside the sender (--api-port): it accepts the clients of
 * PAYMENT_API_CREDENTIALS, the same the receiver uses, so `npm start` with PAYMENT_API_URL pointing
 * here can repair what --drop lost.
 */
export async function startDouble(
  io: CliIo,
  config: Config,
  port: number,
  json: boolean,
): Promise<PaymentServiceDouble> {
  const clients = config.reconciliation?.credentials ?? [];
  if (clients.length === 0)
    throw new UsageError(
      '--api-port needs PAYMENT_API_URL and PAYMENT_API_CREDENTIALS (the clients the double accepts)',
    );
  const double = new PaymentServiceDouble({ clients });
  try {
    await double.start({ port });
  } catch (error) {
    throw new UsageError(`--api-port ${port}: cannot listen (${(error as Error).message})`);
  }
  if (!json)
    io.stderr.write(
      `Payment-service double answering at ${double.url} for POS ${clients.map((c) => c.posId).join(', ')}.\n`,
    );
  return double;
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

function holdUntilInterrupted(ms: number): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      process.off('SIGINT', done);
      process.off('SIGTERM', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    process.once('SIGINT', done);
    process.once('SIGTERM', done);
  });
}
