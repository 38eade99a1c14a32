import { Option, type Command } from 'commander';
import { PlanError, RETRY_SCHEDULE_MS } from '../../../simulator';
import { readConfig } from '../database';
import { action, UsageError, type CliIo, type CliState, type ExitCode } from '../io';
import { choiceOption, collect, durationOption, integerOption, numberOption, withJson } from '../options';
import { planSimulation, type SimulateOptions } from '../../../simulation/simulationPlan';
import { runPlan, serveDouble, startDouble } from './run';

/**
 * `simulate`: plays the payment service. Its options (here), the plan they make
 * (src/simulation/simulationPlan.ts), the run that sends it (run.ts) and what it prints
 * (src/simulation/simulationSummary.ts).
 */

/** A plan that does not fit is a usage error (exit code 2), its message said. */
function asUsageError<T>(plan: () => T): T {
  try {
    return plan();
  } catch (error) {
    if (error instanceof PlanError) throw new UsageError(error.message);
    throw error;
  }
}
export async function simulate(io: CliIo, options: SimulateOptions): Promise<ExitCode> {
  // Without --key, the service's own SECOND_KEYS, or its local default outside production.
  const config = readConfig(io, {}, { receiving: options.key === undefined });
  const plan = asUsageError(() => planSimulation(config, options));
  if (options.apiState !== undefined && options.apiPort === undefined)
    throw new UsageError('--api-state needs --api-port: it is the state of the double that --api-port runs');
  const double =
    options.apiPort === undefined
      ? null
      : await startDouble(io, config, {
          port: options.apiPort,
          portOption: '--api-port',
          stateFile: options.apiState,
          json: options.json === true,
        });
  try {
    return await runPlan(io, options, config, plan, double?.double ?? null);
  } finally {
    await double?.stop();
  }
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
        'WAITING_FOR_CONFIRMATION, then COMPLETED or CANCELED; then one notification per --refund (two with ' +
        ':pending or :conflict); with --conflict, last, the other final status (an order.status_conflict event); ' +
        'with --disagreement, the final status states another total (its event carries disagreements).\n\n' +
        'Every event type on demand: --every-type plays two orders that between them make the receiver publish ' +
        'each of the nine event types and a disagreement: watch them with `events watch` or your own queue.\n\n' +
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
      'refund the completed order: full, partial or an amount, with :canceled for a rejected refund, :pending for a ' +
        'PENDING notification first, :conflict for CANCELED after FINALIZED (repeatable)',
      collect((v: string) => v),
    )
    .option('--conflict', 'after the final status, the other one arrives too (order.status_conflict)')
    .option('--disagreement', "the final status's notification states another total amount (data.disagreements)")
    .option('--every-type', 'two orders that make the receiver publish every event type, and a disagreement')
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
    .option(
      '--api-state <file>',
      'with --api-port, the double starts knowing what this file holds and keeps it up to date, so `simulate api --state <file>` can answer for the same orders later',
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
  const api = command
    .command('api')
    .summary('run the payment-service double alone, its truth kept in a file across restarts')
    .description(
      'Runs the payment-service double alone (OAuth, order retrieval, refund list) for the clients of ' +
        'PAYMENT_API_CREDENTIALS, answering until Ctrl-C. With --state it starts knowing what the file holds ' +
        '(written by `simulate --api-port <port> --api-state <file>`, or by an earlier `simulate api`) and keeps it, ' +
        "so reconciliation can be tried across the double's restarts: point the receiver's PAYMENT_API_URL at it.\n\n" +
        'Exit codes: 0 stopped; 2 usage error (a state file that is not one, a port taken).',
    )
    .requiredOption('--port <port>', 'the port to answer on (0: any free one)', integerOption(0, 65535))
    .option('--state <file>', 'the file the double keeps its truth in (created when absent)');
  withJson(api).action(
    action(state, (options: { port: number; state?: string; json?: boolean }) =>
      serveDouble(io, readConfig(io, {}, { receiving: false }), options),
    ),
  );
}
