import type { Command } from 'commander';
import { Registry } from 'prom-client';
import type { Config, ReconciliationConfig } from '../../config';
import type { Db } from '../../database/pool';
import { createLogger } from '../../observability/logger';
import { createPaymentApiMetrics, createReconciliationMetrics } from '../../observability/reconciliationMetrics';
import { GroupCommitStore } from '../../recording/groupCommit';
import type { OrderCheck } from '../../reconciliation/checkOrder';
import { createReconciliation, type PosProblem, type Reconciliation } from '../../reconciliation/reconciliation';
import { stuckOrders } from '../../reconciliation/scheduleQueries';
import { auditCommand } from './audit';
import { readConfig, withDatabase } from './database';
import { action, EXIT_FAILURE, EXIT_OK, UsageError, type CliIo, type CliState, type ExitCode } from './io';
import { idOption, withDatabaseUrl, withJson } from './options';
import { emit, startProgress, table } from './output';

interface ReconcileOptions {
  order?: string;
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
  posId: string | undefined,
  dryRun: boolean,
): Promise<ReconcileLine> {
  const checked = await reconciliation.reconcileOrder(orderId, { ...(posId === undefined ? {} : { posId }), dryRun });
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
    const store = new GroupCommitStore(
      transactions,
      { eventSource: config.eventSource },
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

async function reconcile(io: CliIo, options: ReconcileOptions): Promise<ExitCode> {
  if ((options.order === undefined) === (options.stuck !== true))
    throw new UsageError('give exactly one of --order <orderId> and --stuck');
  if (options.posId !== undefined && options.order === undefined) throw new UsageError('--pos-id goes with --order');
  const json = options.json === true;
  const dryRun = options.dryRun === true;
  const config = readConfig(io, { DATABASE_URL: options.databaseUrl });
  const lines = await withReconciliation(io, config, async (reconciliation, db, settings) => {
    // Each order checked (not a dry run) is an action on it, in the audit trail and on its page.
    const checked = async (orderId: string, posId: string | undefined): Promise<ReconcileLine> => {
      const line = await checkLine(reconciliation, orderId, posId, dryRun);
      if (!dryRun)
        await auditCommand(db, {
          action: 'reconcile',
          target: orderId,
          orderId,
          result: line.result,
          detail: `applied ${line.applied.length}, stale ${line.stale.length}, conflicts ${line.conflicts.length}`,
        });
      return line;
    };
    if (options.order !== undefined) return [await checked(options.order, options.posId)];
    const stuck = await stuckOrders(db, new Date(), settings.afterMs);
    const progress = startProgress(io, json, dryRun ? 'asking' : 'reconciling', stuck.length);
    const done: ReconcileLine[] = [];
    try {
      for (const orderId of stuck) {
        done.push(await checked(orderId, undefined));
        progress.increment();
      }
    } finally {
      progress.stop();
    }
    return done;
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
        'POS are configured); --stuck checks every order still open RECONCILE_AFTER after its last observation ' +
        '(given up ones included); --dry-run only shows what the API says.\n\n' +
        'Exit codes: 0 every order checked; 1 the API gave no usable answer for one (not found, refused, ' +
        'unavailable); 2 usage error.',
    )
    .option('--order <orderId>', 'the order to check', idOption)
    .option('--pos-id <posId>', 'the POS to ask with, for an order nothing was recorded for')
    .option('--stuck', 'check every open order past RECONCILE_AFTER')
    .option('--dry-run', 'ask the API, record nothing');
  withJson(withDatabaseUrl(command)).action(action(state, (options: ReconcileOptions) => reconcile(io, options)));
}
