import type { Command } from 'commander';
import type { Db } from '../../database/pool';
import { auditedCommand } from './audit';
import { readConfig, withDatabase } from './database';
import { action, CliError, EXIT_FAILURE, EXIT_OK, UsageError, type CliIo, type CliState, type ExitCode } from './io';
import { withDatabaseUrl, withJson } from './options';
import { emit, startProgress, type Progress } from './output';
import { comparePage, rebuildPage, type ProjectionDifference, type Rebuilt } from './reprojection';
import {
  countNotifications,
  deleteProjection,
  lockProjections,
  nextOrderPage,
  readReprojectPage,
  repairOrder,
  repairRefund,
} from './reprojectQueries';

export type { FieldDifference, ProjectionDifference } from './reprojection';

/**
 * `reproject` streams by order: a keyset page of orders at a time, whose history is read, folded (reprojection.ts)
 * and compared, and, with --apply, repaired, before the next page is read; so its memory is a page's, whatever
 * the history's length.
 */

/** Orders a page holds: a year of history is about 3.5 notifications an order. */
const PAGE_ORDERS = 2000;

export interface ReprojectResult {
  notifications: number;
  stored: { orders: number; refunds: number };
  rebuilt: { orders: number; refunds: number };
  /** Projections left as they are: history retention removed part of what they were built from. */
  partialHistory: { orders: number; refunds: number };
  differences: ProjectionDifference[];
}

/** Makes a page's stored projections equal the rebuilt ones, touching only the rows that differ. */
async function repair(db: Db, differences: ProjectionDifference[], rebuilt: Rebuilt): Promise<void> {
  for (const d of differences) {
    if (d.change === 'extra') await deleteProjection(db, d.table, d.id);
    // A missing projection gets the statuses it was rebuilt from, for dedup; a stored one keeps its own.
    else if (d.table === 'orders') {
      const stored = rebuilt.orders.get(d.id);
      if (stored) await repairOrder(db, stored);
    } else {
      const stored = rebuilt.refunds.get(d.id);
      if (stored) await repairRefund(db, stored);
    }
  }
}

/** Every page in turn: rebuilt, compared and, when `apply`, repaired. */
async function reprojectAll(db: Db, progress: Progress, apply: boolean): Promise<ReprojectResult> {
  const result: ReprojectResult = {
    notifications: 0,
    stored: { orders: 0, refunds: 0 },
    rebuilt: { orders: 0, refunds: 0 },
    partialHistory: { orders: 0, refunds: 0 },
    differences: [],
  };
  const unreadable: string[] = [];
  let after = '';
  for (;;) {
    const ids = await nextOrderPage(db, after, PAGE_ORDERS);
    const through = ids.length < PAGE_ORDERS ? null : (ids[ids.length - 1] as string);
    const { history, owners, stored } = await readReprojectPage(db, { after, through });
    const rebuilt = rebuildPage(history, owners);
    const { differences, partial } = comparePage(stored, rebuilt);
    result.notifications += history.length;
    result.stored.orders += stored.orders.size;
    result.stored.refunds += stored.refunds.size;
    result.rebuilt.orders += rebuilt.orders.size;
    result.rebuilt.refunds += rebuilt.refunds.size;
    result.partialHistory.orders += partial.orders;
    result.partialHistory.refunds += partial.refunds;
    result.differences.push(...differences);
    unreadable.push(...rebuilt.unreadable);
    if (apply && unreadable.length === 0) await repair(db, differences, rebuilt);
    progress.increment(history.length);
    if (through === null) break;
    after = through;
  }
  if (unreadable.length > 0) {
    throw new CliError(
      `${unreadable.length} stored notification(s) have a parsed column that is not a notification ` +
        `(ids ${unreadable.slice(0, 10).join(', ')}${unreadable.length > 10 ? ', ...' : ''}); nothing was compared or changed`,
    );
  }
  result.differences.sort((a, b) => a.table.localeCompare(b.table) || a.id.localeCompare(b.id));
  return result;
}

function differenceLine(d: ProjectionDifference): string {
  const what = d.table === 'orders' ? 'order' : 'refund';
  if (d.change === 'missing')
    return `  ${what} ${d.id}: missing from the projection; rebuilt as ${d.fields.find((f) => f.column === 'status')?.rebuilt ?? '?'}`;
  if (d.change === 'extra')
    return `  ${what} ${d.id}: in the projection (${d.fields.find((f) => f.column === 'status')?.stored ?? '?'}) but no notification supports it`;
  return `  ${what} ${d.id}: ${d.fields.map((f) => `${f.column} ${f.stored ?? 'null'} -> ${f.rebuilt ?? 'null'}`).join('; ')}`;
}

interface ReprojectOptions {
  dryRun?: boolean;
  apply?: boolean;
  databaseUrl?: string;
  json?: boolean;
}

export async function reproject(io: CliIo, options: ReprojectOptions): Promise<ExitCode> {
  if (options.dryRun && options.apply) throw new UsageError('--dry-run and --apply exclude each other');
  const apply = options.apply === true;
  const json = options.json === true;
  const config = readConfig(io, { DATABASE_URL: options.databaseUrl });
  const report = await withDatabase(io, config, async (db: Db): Promise<ReprojectResult> => {
    const progress = startProgress(io, json, 'notifications', await countNotifications(db));
    try {
      if (!apply) return await reprojectAll(db, progress, false);
      // Writers wait while the projections are rebuilt from what is committed now; a notification
      // recorded after the lock applies on top of the repaired projection through the usual rules.
      return await auditedCommand(
        db,
        { action: 'reproject', target: 'every order' },
        () =>
          db.transaction().execute(async (trx) => {
            await lockProjections(trx);
            return await reprojectAll(trx, progress, true);
          }),
        (applied) => ({
          result: `repaired ${applied.differences.length}`,
          detail: `from ${applied.notifications} notification(s)`,
        }),
      );
    } finally {
      progress.stop();
    }
  });
  const differences = report.differences;
  emit(io, json, { applied: apply, ...report }, () => [
    `Rebuilt from ${report.notifications} notification(s): ${report.rebuilt.orders} order(s), ${report.rebuilt.refunds} refund(s); ` +
      `stored: ${report.stored.orders} order(s), ${report.stored.refunds} refund(s).`,
    ...(report.partialHistory.orders + report.partialHistory.refunds > 0
      ? [
          `Left as they are: ${report.partialHistory.orders} order(s) and ${report.partialHistory.refunds} refund(s) ` +
            'whose history retention removed in part (HISTORY_RETENTION).',
        ]
      : []),
    ...(differences.length === 0
      ? ['No differences: the projections equal what the notifications imply.']
      : [`${differences.length} difference(s) (stored -> rebuilt):`, ...differences.map(differenceLine)]),
    ...(differences.length > 0
      ? [
          apply
            ? `Repaired ${differences.length} row(s) in one transaction.`
            : 'Dry run: nothing changed. Run with --apply to repair.',
        ]
      : []),
  ]);
  return differences.length > 0 && !apply ? EXIT_FAILURE : EXIT_OK;
}

export function registerReproject(program: Command, io: CliIo, state: CliState): void {
  const command = program
    .command('reproject')
    .summary('rebuild the order and refund projections from the stored notifications')
    .description(
      'Rebuilds the order and refund projections from the stored notifications (their parsed fields, in arrival ' +
        'order) with the same status rules and field merging as live recording, and compares them with the stored ' +
        'projections. By default (--dry-run) it only shows the differences; --apply repairs exactly the rows that ' +
        'differ (inserts missing ones, deletes ones no notification supports) in one transaction, during which ' +
        'recording waits. Timestamps (created_at, updated_at) are not compared. A projection whose history retention ' +
        'removed in part is left as it is.\n\n' +
        'Exit codes: 0 no differences (or, with --apply, repaired); 1 differences found (dry run) or stored data ' +
        'that cannot be read; 2 usage error.',
    )
    .option('--dry-run', 'show the differences, change nothing (the default)')
    .option('--apply', 'repair the differences in one transaction');
  withJson(withDatabaseUrl(command)).action(action(state, (options: ReprojectOptions) => reproject(io, options)));
}
