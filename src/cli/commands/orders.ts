import type { Command } from 'commander';
import { receivedPos } from '../../config';
import { EXPECTED_ORDERS_MAX, readExpectedOrderLines } from '../../parsing/orderLists';
import { expectOrders } from '../../reconciliation/scheduleQueries';
import { auditCommand } from './audit';
import { readConfig, withDatabase } from './database';
import {
  action,
  EXIT_OK,
  inputName,
  lineProblem,
  readInput,
  UsageError,
  type CliIo,
  type CliState,
  type ExitCode,
} from './io';
import { withDatabaseUrl, withJson } from './options';
import { emit, startProgress } from './output';

interface ExpectOptions {
  file: string;
  json?: boolean;
  databaseUrl?: string;
}

/** A file of expected orders this large at most: 100,000 lines of the longest ids and a margin. */
const EXPECTED_FILE_BYTES = 32 * 1024 * 1024;

async function expectFromFile(io: CliIo, options: ExpectOptions): Promise<ExitCode> {
  const json = options.json === true;
  const config = readConfig(io, { DATABASE_URL: options.databaseUrl });
  const settings = config.reconciliation;
  if (!settings)
    throw new UsageError(
      'PAYMENT_API_URL and PAYMENT_API_CREDENTIALS are required: reconciliation checks expected orders',
    );
  const text = (await readInput(options.file, 'the file', EXPECTED_FILE_BYTES)).toString('utf8');
  const read = readExpectedOrderLines(text, {
    knownPos: receivedPos(config),
    now: new Date(),
    oldestMs: settings.giveUpMs,
  });
  if (!read.ok) throw new UsageError(lineProblem(read.problem, 'nothing was recorded'));
  const orders = read.value;
  const added = await withDatabase(io, config, async (db) => {
    const progress = startProgress(io, json, 'recording', orders.length);
    let count = 0;
    try {
      for (let start = 0; start < orders.length; start += EXPECTED_ORDERS_MAX) {
        const chunk = orders.slice(start, start + EXPECTED_ORDERS_MAX);
        count += await expectOrders(db, chunk);
        progress.increment(chunk.length);
      }
    } finally {
      progress.stop();
    }
    const [only] = orders;
    await auditCommand(db, {
      action: 'orders_expected',
      target: orders.length === 1 && only ? only.orderId : `${orders.length} orders`,
      orderId: orders.length === 1 && only ? only.orderId : null,
      result: 'recorded',
      detail: `${count} new, from ${inputName(options.file)}`,
    });
    return count;
  });
  emit(io, json, { received: orders.length, new: added }, () => [
    `${orders.length} expected order(s) read, ${added} new: one no notification names RECONCILE_AFTER after its ` +
      'creation is reconciled like an open order',
  ]);
  return EXIT_OK;
}

export function registerOrders(program: Command, io: CliIo, state: CliState): void {
  const orders = program
    .command('orders')
    .summary('tell the service of orders it cannot see')
    .description('Orders the service knows of only because it is told: see each subcommand.');
  const command = orders
    .command('expect')
    .summary('tell the service of orders the shop created, from a file')
    .description(
      'Records orders the shop created, as POST /orders/expected does: an expected order that no notification ' +
        'names RECONCILE_AFTER after its creation is reconciled like an open one (asked for with its POS, on the ' +
        'usual schedule, until heard of or RECONCILE_GIVE_UP has passed). This covers a wrong notifyUrl, a sender ' +
        'that gave up after 72 hours and a database failover that lost the order.\n\n' +
        'The file (- for stdin) holds JSON lines: one object a line, {"orderId": "...", "posId": "...", ' +
        '"createdAt": "2026-11-28T10:00:00+01:00"} (other fields ignored; blank lines skipped), at most 100,000 ' +
        'lines. posId is one of SECOND_KEYS; createdAt has an offset, is at most 5 minutes ahead and not older than ' +
        'RECONCILE_GIVE_UP. Every line is checked before anything is recorded: a bad one is named by its number ' +
        'and nothing is recorded. Orders already expected are left as they were. Recorded in the audit trail.\n\n' +
        'Exit codes: 0 recorded; 2 usage error (a bad line, a file that cannot be read, reconciliation off).',
    )
    .requiredOption('--file <file>', 'JSON lines of {orderId, posId, createdAt}; - for stdin');
  withJson(withDatabaseUrl(command)).action(action(state, (options: ExpectOptions) => expectFromFile(io, options)));
}
