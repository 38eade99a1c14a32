import type { Command } from 'commander';
import type { Db } from '../../database/pool';
import { auditedCommand } from './audit';
import { readConfig, withDatabase } from './database';
import { action, CliError, EXIT_FAILURE, EXIT_OK, UsageError, type CliIo, type CliState, type ExitCode } from './io';
import { withDatabaseUrl, withJson } from './options';
import { emit, startProgress } from './output';
import type { ProjectionDifference } from '../../recording/reprojection';
import { reprojectAll, UnreadableHistory, type ReprojectResult } from '../../recording/reprojectionPages';
import { countNotifications, lockProjections } from '../../recording/reprojectionQueries';

export type { FieldDifference, ProjectionDifference } from '../../recording/reprojection';

/**
 * `reproject`: the projections rebuilt from history and compared, and with --apply repaired
 * (src/recording/reprojectionPages.ts), in one transaction during which recording waits; the command reads the
 * options, holds the lock and the audit record, and writes the report.
 */

/** Unreadable history ends the command with exit code 1, its message said (inside the transaction: rolled back). */
const asCliError = <T>(work: Promise<T>): Promise<T> =>
  work.catch((error: unknown) => {
    throw error instanceof UnreadableHistory ? new CliError(error.message) : error;
  });

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
      if (!apply) return await asCliError(reprojectAll(db, progress, false));
      // Writers wait while the projections are rebuilt from what is committed now; a notification
      // recorded after the lock applies on top of the repaired projection through the usual rules.
      return await auditedCommand(
        db,
        { action: 'reproject', target: 'every order' },
        () =>
          db.transaction().execute(async (trx) => {
            await lockProjections(trx);
            return await asCliError(reprojectAll(trx, progress, true));
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
