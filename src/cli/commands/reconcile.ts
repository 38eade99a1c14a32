import type { Command } from 'commander';
import { Registry } from 'prom-client';
import { recordingContext, type Config, type ReconciliationConfig } from '../../config';
import type { Db } from '../../database/pool';
import { createLogger } from '../../observability/logger';
import { createPaymentApiMetrics, createReconciliationMetrics } from '../../observability/reconciliationMetrics';
import { Recorder } from '../../recording/recorder';
import type { OrderCheck } from '../../reconciliation/checkOrder';
import {
  createReconciliation,
  type PosProblem,
  type ReconcileOptions as CheckOptions,
  type Reconciliation,
} from '../../reconciliation/reconciliation';
import { stuckOrders } from '../../reconciliation/scheduleQueries';
import { AUDITED_ORDERS_MAX } from '../../audit/auditQueries';
import { readOrderIdLines } from '../../parsing/orderLists';
import { auditedCommand } from './audit';
import { readConfig, withDatabase } from './database';
import {
  action,
  EXIT_FAILURE,
  EXIT_OK,
  inputName,
  lineProblem,
  readInput,
  UsageError,
  type CliIo,
  type CliState,
  type ExitCode,
} from './io';
import { idOption, withDatabaseUrl, withJson } from './options';
import { emit, startProgress, table } from './output';

interface ReconcileOptions {
  order?: string;
  ordersFrom?: string;
  posId?: string;
  stuck?: boolean;
  dryRun?: boolean;
  json?: boolean;
  databaseUrl?: string;
}

/** One order's line: what the API said and what the check did (or, dry, would have been asked). */
export interface ReconcileLine {
  orderId: string;
  posId: string | null;
  result: OrderCheck['result'] | PosProblem;
  said: string[];
  applied: string[];
  stale: string[];
  conflicts: string[];
}

const statuses = (list: OrderCheck['said']): string[] =>
  list.map((s) => (s.kind === 'order' ? s.status : `refund ${s.id} ${s.status}`));

/** A check that learned what the API says, whether or not it changed anything. */
const succeeded = (line: ReconcileLine): boolean => line.result === 'unchanged' || line.result === 'repaired';

async function checkLine(
  reconciliation: Reconciliation,
  orderId: string,
  pos: Pick<CheckOptions, 'posId' | 'posIdIfNeverSeen'>,
  dryRun: boolean,
): Promise<ReconcileLine> {
  const checked = await reconciliation.reconcileOrder(orderId, { ...pos, dryRun });
  const posId = pos.posId ?? pos.posIdIfNeverSeen;
  if ('problem' in checked)
    return { orderId, posId: posId ?? null, result: checked.problem, said: [], applied: [], stale: [], conflicts: [] };
  return {
    orderId,
    posId: checked.posId,
    result: checked.result,
    said: statuses(checked.said),
    applied: statuses(checked.applied),
    stale: statuses(checked.stale),
    conflicts: statuses(checked.conflicts),
  };
}

/** The API client and the recorder on the command's own pool, with metrics nobody scrapes. */
function withReconciliation<T>(
  io: CliIo,
  config: Config,
  work: (reconciliation: Reconciliation, db: Db, settings: ReconciliationConfig) => Promise<T>,
): Promise<T> {
  const settings = config.reconciliation;
  if (!settings) throw new UsageError('PAYMENT_API_URL and PAYMENT_API_CREDENTIALS are required to reconcile');
  return withDatabase(io, config, (db, transactions) => {
    const logger = createLogger('silent');
    const store = new Recorder(
      transactions,
      recordingContext(config),
      { maxBatchSize: 64, lanes: 1, maxQueued: 1000, maxWaitMs: 60_000, answerWithinMs: 120_000 },
      logger,
    );
    const registry = new Registry();
    const metrics = {
      paymentApi: createPaymentApiMetrics(registry),
      reconciliation: createReconciliationMetrics(registry),
    };
    return work(createReconciliation(settings, { db, store, metrics, logger }), db, settings);
  });
}

/** A file of order ids this large at most: 10,000 lines of the longest ids. */
const ORDER_LIST_BYTES = 2 * 1024 * 1024;

/**
 * Runs `work` on every item, `atOnce` at a time (the payment API's limiter sets the pace), and answers the results
 * in the items' order. A failure stops taking new items and is thrown once those under way have ended.
 */
async function eachAtOnce<T, R>(items: readonly T[], atOnce: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = [];
  let next = 0;
  let failed = false;
  const worker = async (): Promise<void> => {
    while (!failed && next < items.length) {
      const index = next++;
      try {
        results[index] = await work(items[index] as T);
      } catch (error) {
        failed = true;
        throw error;
      }
    }
  };
  const outcomes = await Promise.allSettled(Array.from({ length: Math.min(atOnce, items.length) }, worker));
  const rejected = outcomes.find((o) => o.status === 'rejected');
  if (rejected) throw rejected.reason;
  return results;
}

async function reconcile(io: CliIo, options: ReconcileOptions): Promise<ExitCode> {
  const ways = [options.order !== undefined, options.ordersFrom !== undefined, options.stuck === true];
  if (ways.filter(Boolean).length !== 1)
    throw new UsageError('give exactly one of --order <orderId>, --orders-from <file> and --stuck');
  if (options.posId !== undefined && options.stuck === true)
    throw new UsageError('--pos-id goes with --order or --orders-from');
  const json = options.json === true;
  const dryRun = options.dryRun === true;
  const config = readConfig(io, { DATABASE_URL: options.databaseUrl });
  // A list is read and checked whole before anything is asked: a bad line reconciles nothing.
  let listed: string[] | null = null;
  if (options.ordersFrom !== undefined) {
    const read = readOrderIdLines((await readInput(options.ordersFrom, 'the file', ORDER_LIST_BYTES)).toString('utf8'));
    if (!read.ok) throw new UsageError(lineProblem(read.problem, 'nothing was reconciled'));
    listed = read.value;
  }
  const lines = await withReconciliation(io, config, async (reconciliation, db, settings) => {
    // Each order checked (not a dry run) is an action on it, in the audit trail and on its page, recorded before it
    // is asked about; past AUDITED_ORDERS_MAX, the whole run is one row, written before the first and completed after.
    const checked = (
      orderId: string,
      pos: Pick<CheckOptions, 'posId' | 'posIdIfNeverSeen'>,
      each: boolean,
    ): Promise<ReconcileLine> =>
      dryRun || !each
        ? checkLine(reconciliation, orderId, pos, dryRun)
        : auditedCommand(
            db,
            { action: 'reconcile', target: orderId, orderId },
            () => checkLine(reconciliation, orderId, pos, dryRun),
            (line) => ({
              result: line.result,
              detail: `applied ${line.applied.length}, stale ${line.stale.length}, conflicts ${line.conflicts.length}`,
            }),
          );
    const { posId } = options;
    if (options.order !== undefined) return [await checked(options.order, posId === undefined ? {} : { posId }, true)];
    // A list's --pos-id asks for the orders never seen only: a known one is asked with its own POS.
    if (posId !== undefined && !settings.credentials.some((c) => c.posId === posId))
      throw new UsageError('--pos-id: no PAYMENT_API_CREDENTIALS are configured for that POS');
    const orders = listed ?? (await stuckOrders(db, new Date(), settings.afterMs));
    const each = orders.length <= AUDITED_ORDERS_MAX;
    const checkAll = async (): Promise<ReconcileLine[]> => {
      const progress = startProgress(io, json, dryRun ? 'asking' : 'reconciling', orders.length);
      try {
        return await eachAtOnce(orders, settings.maxInFlight, async (orderId) => {
          const line = await checked(orderId, posId === undefined ? {} : { posIdIfNeverSeen: posId }, each);
          progress.increment();
          return line;
        });
      } finally {
        progress.stop();
      }
    };
    if (each || dryRun) return checkAll();
    return auditedCommand(
      db,
      {
        action: 'reconcile',
        target: `${orders.length} orders`,
        detail: options.ordersFrom === undefined ? 'the stuck orders' : `from ${inputName(options.ordersFrom)}`,
      },
      checkAll,
      // The detail keeps naming where the orders came from; the result says how the run ended.
      (done) => ({
        result: `${done.filter(succeeded).length} of ${done.length} answered, ${done.filter((l) => l.applied.length > 0).length} repaired`,
      }),
    );
  });
  emit(io, json, { dryRun, orders: lines }, () => [
    ...table([
      ['ORDER', 'POS', 'API SAYS', 'RESULT', dryRun ? '' : 'APPLIED'],
      ...lines.map((l) => [
        l.orderId,
        l.posId ?? '-',
        l.said.join(', ') || '-',
        l.result,
        dryRun ? '' : l.applied.join(', ') || '-',
      ]),
    ]),
    `${lines.length} order(s) checked${dryRun ? ' (dry run: nothing recorded)' : `, ${lines.filter((l) => l.applied.length > 0).length} repaired`}; ${lines.filter((l) => !succeeded(l)).length} without a usable answer`,
  ]);
  return lines.every(succeeded) ? EXIT_OK : EXIT_FAILURE;
}

export function registerReconcile(program: Command, io: CliIo, state: CliState): void {
  const command = program
    .command('reconcile')
    .summary('check orders against the payment API and record what it says')
    .description(
      "Asks the payment API (PAYMENT_API_URL, with the credentials of each order's own POS from " +
        'PAYMENT_API_CREDENTIALS) for an order and its refunds, and records what it says through the recorder, as ' +
        'notifications would be: a status the projection lacked is applied and published with observedVia ' +
        'reconciliation, a lagging answer is stale and changes nothing.\n\n' +
        '--order checks one order (--pos-id: the POS to ask with, needed only for an order never seen when several ' +
        'POS are configured); --orders-from checks every order of a file (- for stdin): one order id a line, blank ' +
        "lines skipped, at most 10,000, for what no record covers (ids from a consumer's events, the shop's " +
        'database), final here or not, known here or not (--pos-id for those never seen); every line is checked ' +
        'first, and a bad one is named by its number and nothing is reconciled; --stuck checks every order still ' +
        'open RECONCILE_AFTER after its last observation (given up ones included); --dry-run only shows what the ' +
        'API says. Up to PAYMENT_API_MAX_IN_FLIGHT orders are checked at once, at most PAYMENT_API_MAX_PER_SECOND ' +
        'requests a second, with a progress bar on a terminal. Each order checked is in the audit trail; more ' +
        'than 100 in one run are one row.\n\n' +
        'Exit codes: 0 every order checked; 1 the API gave no usable answer for one (not found, refused, ' +
        'unavailable); 2 usage error (a bad line included).',
    )
    .option('--order <orderId>', 'the order to check', idOption)
    .option('--orders-from <file>', 'check the orders of a file, one id a line (- for stdin)')
    .option('--pos-id <posId>', 'the POS to ask with, for an order nothing was recorded for')
    .option('--stuck', 'check every open order past RECONCILE_AFTER')
    .option('--dry-run', 'ask the API, record nothing');
  withJson(withDatabaseUrl(command)).action(action(state, (options: ReconcileOptions) => reconcile(io, options)));
}
