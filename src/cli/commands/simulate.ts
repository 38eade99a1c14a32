import { Option, type Command } from 'commander';
import {
  buildTraffic,
  freshSeed,
  httpSender,
  parseSimulatorAlgorithm,
  PaymentServiceDouble,
  PlanError,
  runSimulation,
  scaledClock,
  seededRandom,
  RETRY_SCHEDULE_MS,
  type AttemptReport,
  type Lifecycle,
  type LifecyclePlan,
  type NotificationDelivery,
  type PayMethodKind,
  type PlanBase,
  type RefundPlan,
  type Sender,
  type SignatureHeaders,
  type SimulatedNotification,
  type SimulationReport,
  type SimulatorAlgorithm,
} from '../../simulator';
import type { Config } from '../../config';
import { readConfig } from './database';
import { action, CliError, EXIT_FAILURE, EXIT_OK, UsageError, type CliIo, type CliState, type ExitCode } from './io';
import { choiceOption, collect, durationOption, integerOption, numberOption, withJson } from './options';
import { emit, startProgress } from './output';

interface RefundSpec {
  /** `full`, `partial` or minor units. */
  amount: string;
  status: 'FINALIZED' | 'CANCELED';
}

/** `full`, `partial` or an amount in minor units, optionally followed by `:canceled` (default `:finalized`). */
function refundSpec(value: string): RefundSpec {
  const match = /^(full|partial|\d{1,18})(?::(finalized|canceled))?$/i.exec(value.trim());
  if (!match)
    throw new UsageError(
      `--refund ${value}: must be full, partial or an amount, optionally with :finalized or :canceled`,
    );
  const amount = (match[1] as string).toLowerCase();
  return { amount, status: match[2]?.toLowerCase() === 'canceled' ? 'CANCELED' : 'FINALIZED' };
}

function algorithmOption(value: string): SimulatorAlgorithm {
  const algorithm = parseSimulatorAlgorithm(value);
  if (!algorithm) throw new UsageError(`--algorithm ${value}: must be MD5, SHA-1, SHA-256, SHA-384 or SHA-512`);
  return algorithm;
}

interface SimulateOptions {
  url?: string;
  posId?: string;
  key?: string;
  orders: number;
  random?: boolean;
  payMethod: PayMethodKind;
  autoReceive: boolean;
  cancel?: boolean;
  refund?: string[];
  amount: string;
  currency: string;
  algorithm: string;
  signatureHeader: SignatureHeaders;
  processingTime: boolean;
  basicAuth?: string;
  timeScale: number;
  gap: number;
  spread: number;
  duplicates: number;
  reorder: number;
  maxDelay: number;
  maxAttempts: number;
  timeout: number;
  concurrency: number;
  seed?: number;
  drop: number;
  apiPort?: number;
  apiHold: number;
  keepRetrying?: boolean;
  json?: boolean;
}

/** A simulated offset since the run started, always as `+H:MM:SS` (`+0:00:02`, `+72:00:00`). */
export function formatOffset(ms: number): string {
  const total = Math.max(0, Math.round(ms / 1000));
  const pad = (n: number): string => String(n).padStart(2, '0');
  return `+${Math.floor(total / 3600)}:${pad(Math.floor(total / 60) % 60)}:${pad(total % 60)}`;
}

/** Network errors that mean nothing listens there at all (as opposed to a slow or failing receiver). */
const CANNOT_CONNECT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);

const NETWORK_ERRORS: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  ENOTFOUND: 'host not found',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
};

/** What one attempt got, for humans: `connection refused`, `no answer within 10000 ms`, `503 busy`. */
export function describeAttemptResult(attempt: AttemptReport): string {
  if (attempt.status === null) {
    const error = attempt.answer ?? 'no answer';
    return NETWORK_ERRORS[error] ? `${NETWORK_ERRORS[error]} (${error})` : error;
  }
  return `${attempt.status}${attempt.answer ? ` ${attempt.answer}` : ''}`;
}

/** One failed attempt as it happens, and when the next one is due. */
function describeFailedAttempt(n: SimulatedNotification, attempt: AttemptReport, nextAtMs: number | null): string {
  const subject = n.kind === 'order' ? `order  ${n.orderId}` : `refund ${n.refundId} of ${n.orderId}`;
  const next = nextAtMs === null ? 'no more attempts' : `next attempt at ${formatOffset(nextAtMs)}`;
  return `${formatOffset(attempt.sentAtMs).padStart(9)}  ${subject}  ${n.status}  attempt ${attempt.attempt} failed: ${describeAttemptResult(attempt)}; ${next}`;
}

function describeDelivery(d: NotificationDelivery): string {
  const subject = d.kind === 'order' ? `order  ${d.orderId}` : `refund ${d.refundId} of ${d.orderId}`;
  const last = d.attempts[d.attempts.length - 1];
  const answers = d.attempts.map((a) => (a.status === null ? 'no answer' : String(a.status)));
  const tries = `${d.attempts.length} attempt${d.attempts.length === 1 ? '' : 's'}`;
  const result = d.delivered
    ? `${last?.answer ?? '200'}`
    : `GAVE UP (${last?.status ?? 'no answer'} ${last?.answer ?? ''})`.replace(' )', ')');
  const history = d.attempts.length > 1 ? ` [${answers.join(', ')}]` : '';
  const flags = [d.copy > 1 ? 'duplicate copy' : '', d.reordered ? 'reordered' : ''].filter(Boolean).join(', ');
  return `${formatOffset(last?.sentAtMs ?? d.firstAttemptAtMs).padStart(9)}  ${subject}  ${d.status}  -> ${result}  (${tries}${history})${flags ? `  {${flags}}` : ''}`;
}

function summaryLines(report: SimulationReport, adminBase: string | null, seed: number): string[] {
  const s = report.summary;
  const lines = [
    '',
    `${s.orders} order(s), ${s.notifications} notification(s), ${s.deliveries} deliver${s.deliveries === 1 ? 'y' : 'ies'}: ` +
      `${s.delivered} answered 200, ${s.gaveUp} given up; ${s.attempts} attempt(s) in all.`,
    `Receiver outcomes: ${
      Object.entries(s.outcomes)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ') || 'none'
    }.`,
    `HTTP statuses: ${
      Object.entries(s.httpStatuses)
        .map(([k, v]) => `${k === 'none' ? 'no answer' : k} x${v}`)
        .join(', ') || 'none'
    }.`,
    `Seed ${seed} (repeat this run with --seed ${seed}).`,
  ];
  if (s.dropped > 0)
    lines.splice(
      2,
      0,
      `${s.dropped} notification(s) lost for good (--drop): ${report.dropped
        .slice(0, 10)
        .map((d) => `${d.kind === 'order' ? 'order' : `refund ${d.refundId} of`} ${d.orderId} ${d.status}`)
        .join(', ')}${s.dropped > 10 ? ', ...' : ''}.`,
    );
  for (const order of report.orders.slice(0, 20)) {
    const refunds = order.refunds.map((r) => `refund ${r.refundId} ${r.amount} ${r.status}`).join(', ');
    lines.push(
      `Order ${order.orderId} (${order.payMethod}, auto-receive ${order.autoReceive ? 'on' : 'off'}): should end ${order.expectedStatus}${refunds ? `; ${refunds}` : ''}` +
        (adminBase ? `\n  ${adminBase}/orders/${encodeURIComponent(order.orderId)}` : ''),
    );
  }
  if (report.orders.length > 20) lines.push(`... and ${report.orders.length - 20} more order(s) (--json lists all).`);
  return lines;
}

/** The admin API beside a local target, for the "look here" hint. */
function adminBaseFor(url: string, adminPort: number): string | null {
  try {
    const target = new URL(url);
    return ['127.0.0.1', 'localhost', '[::1]'].includes(target.hostname)
      ? `http://${target.hostname}:${adminPort}`
      : null;
  } catch {
    return null;
  }
}

export async function simulate(io: CliIo, options: SimulateOptions): Promise<ExitCode> {
  // Without --key, the service's own SECOND_KEYS, or its local default outside production.
  const config = readConfig(io, {}, { receiving: options.key === undefined });
  const url = options.url ?? `http://127.0.0.1:${config.port}/notifications`;
  try {
    new URL(url);
  } catch {
    throw new UsageError(`--url ${url}: not a URL`);
  }

  // POS and key: the flags, else the service's own SECOND_KEYS (the POS's first key, or the first entry).
  let posId = options.posId;
  let key = options.key;
  if (key === undefined) {
    const configured = config.secondKeys.find((k) => posId === undefined || k.posId === posId);
    if (!configured) {
      throw new UsageError(
        posId === undefined
          ? 'no second key: pass --pos-id and --key, or set SECOND_KEYS'
          : `no second key for POS ${posId} in SECOND_KEYS: pass --key`,
      );
    }
    posId ??= configured.posId;
    key = configured.key.toString('utf8');
  }
  if (posId === undefined) throw new UsageError('--key needs --pos-id');

  let basicAuth = config.notifyBasicAuth;
  if (options.basicAuth !== undefined) {
    const colon = options.basicAuth.indexOf(':');
    if (colon <= 0) throw new UsageError('--basic-auth must be user:password');
    basicAuth = { user: options.basicAuth.slice(0, colon), password: options.basicAuth.slice(colon + 1) };
  }
  const algorithm = algorithmOption(options.algorithm);
  if (!/^\d{1,18}$/.test(options.amount) || BigInt(options.amount) < 1n)
    throw new UsageError('--amount must be a positive whole number of minor units');
  if (!/^[A-Z]{3}$/.test(options.currency)) throw new UsageError('--currency must be an ISO 4217 code such as PLN');
  if (options.random && (options.refund?.length || options.cancel || options.autoReceive === false)) {
    throw new UsageError('--random chooses the lifecycle itself: drop --refund, --cancel and --no-auto-receive');
  }

  const refunds: RefundPlan[] = (options.refund ?? []).map(refundSpec).map((spec) => {
    if (spec.amount === 'full') return { status: spec.status };
    const amount = spec.amount === 'partial' ? String((BigInt(options.amount) * 3n) / 10n || 1n) : spec.amount;
    return { amount, status: spec.status };
  });
  const seed = options.seed ?? freshSeed();
  const random = seededRandom(seed);
  const base: Omit<PlanBase, 'startMs'> = {
    posId,
    notifyUrl: url,
    gapMs: options.gap,
    runStartedAt: new Date(),
    currencyCode: options.currency,
  };
  const plan: Omit<LifecyclePlan, keyof PlanBase> | 'random' = options.random
    ? 'random'
    : {
        payMethod: options.payMethod,
        autoReceive: options.autoReceive,
        outcome: options.cancel ? 'CANCELED' : 'COMPLETED',
        totalAmount: options.amount,
        refunds,
      };

  let lifecycles: Lifecycle[];
  try {
    lifecycles = buildTraffic({ orders: options.orders, plan, base, spreadMs: options.spread, random });
  } catch (error) {
    if (error instanceof PlanError) throw new UsageError(error.message);
    throw error;
  }

  const json = options.json === true;
  const double = options.apiPort === undefined ? null : await startDouble(io, config, options.apiPort, json);
  try {
    return await send(io, options, {
      config,
      url,
      posId,
      key,
      basicAuth,
      algorithm,
      seed,
      random,
      lifecycles,
      json,
      double,
    });
  } finally {
    await double?.stop();
  }
}

/**
 * The payment-service double beside the sender (--api-port): it accepts the clients of
 * PAYMENT_API_CREDENTIALS, the same the receiver uses, so `npm start` with PAYMENT_API_URL pointing
 * here can repair what --drop lost.
 */
async function startDouble(io: CliIo, config: Config, port: number, json: boolean): Promise<PaymentServiceDouble> {
  const clients = config.reconciliation?.credentials ?? [];
  if (clients.length === 0)
    throw new UsageError(
      '--api-port needs PAYMENT_API_URL and PAYMENT_API_CREDENTIALS (the clients the double accepts)',
    );
  const double = new PaymentServiceDouble({ clients });
  try {
    await double.start(port);
  } catch (error) {
    throw new UsageError(`--api-port ${port}: cannot listen (${(error as Error).message})`);
  }
  if (!json)
    io.stderr.write(
      `Payment-service double answering at ${double.url} for POS ${clients.map((c) => c.posId).join(', ')}.\n`,
    );
  return double;
}

interface Run {
  config: Config;
  url: string;
  posId: string;
  key: string;
  basicAuth: { user: string; password: string } | null;
  algorithm: SimulatorAlgorithm;
  seed: number;
  random: ReturnType<typeof seededRandom>;
  lifecycles: Lifecycle[];
  json: boolean;
  double: PaymentServiceDouble | null;
}

async function send(io: CliIo, options: SimulateOptions, run: Run): Promise<ExitCode> {
  const { config, url, posId, key, basicAuth, algorithm, seed, random, lifecycles, json, double } = run;
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

export function registerSimulate(program: Command, io: CliIo, state: CliState): void {
  const command = program
    .command('simulate')
    .summary('play the payment service: send signed notifications of realistic order and refund lifecycles')
    .description(
      'Plays the payment service: sends signed notifications for realistic order lifecycles (and refunds) to the ' +
        "receiver, each on the sender's retry schedule (20 attempts over 72 hours, from the status change) until it is " +
        'answered 200, optionally with duplicates, reordering and delays, and reports every attempt and answer. ' +
        'The POS and key default to the first entry of SECOND_KEYS (or the first key of --pos-id).\n\n' +
        'Lifecycles: auto-receive on: PENDING, COMPLETED (or CANCELED with --cancel); --no-auto-receive: PENDING, ' +
        'WAITING_FOR_CONFIRMATION, then COMPLETED or CANCELED; then one notification per --refund.\n\n' +
        'Lost notifications: --drop 0.3 never sends 30 % of them, while the payment-service double (--api-port) ' +
        'knows every status, so a receiver with PAYMENT_API_URL pointing at it can repair what was lost.\n\n' +
        'Exit codes: 0 every notification was answered 200; 1 some were given up; 2 usage error.',
    )
    .option('--url <url>', 'the receiver (default http://127.0.0.1:$PORT/notifications)')
    .option('--pos-id <posId>', 'POS the notifications come from (default: from SECOND_KEYS)')
    .option('--key <secondKey>', 'second key to sign with (default: from SECOND_KEYS; prefer that: a flag shows in ps)')
    .option('--orders <n>', 'number of orders', integerOption(1, 100_000), 1)
    .option('--random', 'a random realistic lifecycle per order (pay method, auto-receive, outcome, refunds)')
    .addOption(
      new Option('--pay-method <method>', 'pbl (hosted bank transfer), card (CARD_TOKEN) or blik (code, PBL blik)')
        .argParser(choiceOption(['pbl', 'card', 'blik'] as const))
        .default('pbl'),
    )
    .option('--no-auto-receive', 'auto-receive off: WAITING_FOR_CONFIRMATION before the final status')
    .option('--cancel', 'the payment ends CANCELED instead of COMPLETED')
    .option(
      '--refund <spec>',
      'refund the completed order: full, partial or an amount, with :canceled for a rejected refund (repeatable)',
      collect((v: string) => v),
    )
    .option('--amount <minor>', 'order total in minor units', '15000')
    .option('--currency <code>', 'ISO 4217 currency', 'PLN')
    .option('--algorithm <name>', 'signature algorithm: MD5, SHA-1, SHA-256, SHA-384, SHA-512', 'MD5')
    .addOption(
      new Option('--signature-header <which>', 'signature header spelling to send')
        .argParser(choiceOption(['both', 'OpenSvc-Signature', 'X-OpenSvc-Signature'] as const))
        .default('both'),
    )
    .option('--no-processing-time', 'never send Svc-Processing-Time (sent by default for statuses after PENDING)')
    .option('--basic-auth <user:password>', 'Authorization: Basic to send (default NOTIFY_BASIC_AUTH)')
    .option(
      '--time-scale <factor>',
      'simulated time runs this many times faster (3600: an hour per second)',
      numberOption(0, 1e9, { exclusiveMin: true }),
      1,
    )
    .addOption(
      new Option('--gap <duration>', 'simulated time between status changes of one order')
        .argParser(durationOption)
        .default(2000, '2s'),
    )
    .addOption(
      new Option('--spread <duration>', 'start the orders evenly over this simulated time')
        .argParser(durationOption)
        .default(0, '0s'),
    )
    .option('--duplicates <probability>', 'chance that a notification is sent twice (0..1)', numberOption(0, 1), 0)
    .option(
      '--reorder <probability>',
      'chance that two statuses of an order go out in the wrong order (0..1)',
      numberOption(0, 1),
      0,
    )
    .addOption(
      new Option('--max-delay <duration>', 'delay each first attempt by a random simulated time up to this')
        .argParser(durationOption)
        .default(0, '0s'),
    )
    .option(
      '--max-attempts <n>',
      'give up after this many attempts (the spec: 20)',
      integerOption(1, RETRY_SCHEDULE_MS.length),
      RETRY_SCHEDULE_MS.length,
    )
    .addOption(
      new Option('--timeout <duration>', 'real time an attempt may take before it counts as unanswered')
        .argParser(durationOption)
        .default(10_000, '10s'),
    )
    .option('--concurrency <n>', 'requests in flight at once', integerOption(1, 1000), 8)
    .option('--seed <n>', 'random seed, to repeat a run exactly', integerOption(0, 2 ** 31 - 1))
    .option(
      '--drop <share>',
      'share of notifications lost for good, never sent (0..1); the payment API (--api-port) still knows them',
      numberOption(0, 1),
      0,
    )
    .option(
      '--api-port <port>',
      'run the payment-service double (OAuth, order retrieval, refund list) on this port, learning every status as it happens; it accepts PAYMENT_API_CREDENTIALS',
      integerOption(0, 65535),
    )
    .addOption(
      new Option(
        '--api-hold <duration>',
        'with --api-port, keep the double answering this long after the last notification',
      )
        .argParser(durationOption)
        .default(600_000, '10m'),
    )
    .option(
      '--keep-retrying',
      "keep the sender's full retry schedule even when the very first attempt cannot connect (default: stop at once)",
    );
  withJson(command).action(action(state, (options: SimulateOptions) => simulate(io, options)));
}
