import type { Command } from 'commander';
import {
  makeDays,
  purgeBodiesPast,
  removeDaysPast,
  withWorkLock,
  type PurgedBodies,
  type RemovedHistory,
} from '../../partitions/partitionMaintenance';
import { deleteAuditPast } from '../../audit/auditQueries';
import { sessionOnKysely } from '../../database/transaction';
import { auditedCommand } from './audit';
import { readConfig, withDatabase } from './database';
import { action, EXIT_OK, UsageError, type CliIo, type CliState, type ExitCode } from './io';
import { integerOption, withDatabaseUrl, withJson } from './options';
import { emit } from './output';

/**
 * On demand, what the partition maintainer does on schedule (src/partitions/): purge raw bodies (and with them the
 * buyer's personal data) of the days older than --days, remove the history of the days older than
 * --history-days. Each touches only the days it concerns; one runs at a time with the maintainer.
 */

export interface PurgeReport {
  dryRun: boolean;
  /** Day partitions made that were missing, from yesterday to a week ahead (null in a dry run). */
  daysMade: number | null;
  /** With --days: bodies of the days wholly older than the cutoff. */
  bodies: (Omit<PurgedBodies, 'days'> & { days: number; cutoff: string; purgedDays: string[] }) | null;
  /** With --history-days: the days wholly older than the cutoff, removed. */
  history: (Omit<RemovedHistory, 'days'> & { days: number; cutoff: string; removedDays: string[] }) | null;
  /** With --audit-days: the console audit rows older than the cutoff, deleted. */
  audit: { deleted: number; days: number; cutoff: string } | null;
  seconds: number;
}

interface PurgeOptions {
  days?: number;
  historyDays?: number;
  auditDays?: number;
  dryRun?: boolean;
  databaseUrl?: string;
  json?: boolean;
}

const DAY_MS = 86_400_000;

export async function purge(io: CliIo, options: PurgeOptions): Promise<ExitCode> {
  const { days, historyDays, auditDays } = options;
  if (days === undefined && historyDays === undefined && auditDays === undefined)
    throw new UsageError(
      'give --days N (raw bodies), --history-days N (history) and/or --audit-days N (console audit), in days',
    );
  const json = options.json === true;
  const dryRun = options.dryRun === true;
  const config = readConfig(io, { DATABASE_URL: options.databaseUrl });
  const started = performance.now();
  const report = await withDatabase(io, config, async (db) => {
    const run = () =>
      db.connection().execute(async (connection) => {
        const session = sessionOnKysely(connection);
        return withWorkLock(session, async () => {
          const now = Date.now();
          // As the maintainer's round: the days ahead first, so a purge run by hand also heals a missing day.
          const daysMade = dryRun ? null : await makeDays(session, now);
          const bodies = days === undefined ? null : await purgeBodiesPast(session, days * DAY_MS, now, { dryRun });
          const history =
            historyDays === undefined ? null : await removeDaysPast(session, historyDays * DAY_MS, now, { dryRun });
          const audit =
            auditDays === undefined ? null : await deleteAuditPast(session, auditDays * DAY_MS, now, { dryRun });
          return { now, daysMade, bodies, history, audit };
        });
      });
    if (dryRun) return run();
    const target = [
      days === undefined ? '' : `bodies before ${days} d`,
      historyDays === undefined ? '' : `history before ${historyDays} d`,
      auditDays === undefined ? '' : `audit before ${auditDays} d`,
    ]
      .filter((t) => t !== '')
      .join(', ');
    return auditedCommand(db, { action: 'purge', target }, run, (done) => ({
      result: 'done',
      detail:
        `bodies of ${done.bodies?.days.length ?? 0} day(s), history of ${done.history?.days.length ?? 0} day(s), ` +
        `${done.audit?.deleted ?? 0} audit row(s)`,
    }));
  });
  const cutoff = (d: number) => new Date(report.now - d * DAY_MS).toISOString();
  const result: PurgeReport = {
    dryRun,
    daysMade: report.daysMade,
    bodies:
      report.bodies && days !== undefined
        ? { ...report.bodies, purgedDays: report.bodies.days, days, cutoff: cutoff(days) }
        : null,
    history:
      report.history && historyDays !== undefined
        ? { ...report.history, removedDays: report.history.days, days: historyDays, cutoff: cutoff(historyDays) }
        : null,
    audit:
      report.audit && auditDays !== undefined
        ? { deleted: report.audit.deleted, days: auditDays, cutoff: cutoff(auditDays) }
        : null,
    seconds: (performance.now() - started) / 1000,
  };
  emit(io, json, result, () => purgeLines(result));
  return EXIT_OK;
}

function purgeLines({ dryRun, daysMade, bodies, history, audit, seconds }: PurgeReport): string[] {
  const lines: string[] = [];
  if (daysMade) lines.push(`Made ${daysMade} missing day partition(s), from yesterday to a week ahead.`);
  if (bodies) {
    lines.push(
      `${dryRun ? 'Dry run: would purge' : 'Purged'} raw bodies of ${bodies.purgedDays.length} day(s) wholly before ` +
        `${bodies.cutoff} (older than ${bodies.days} day(s)):`,
      `  notifications              ${bodies.bodies.notifications}`,
      `  notification_variants      ${bodies.bodies.notification_variants}`,
      `  quarantined_notifications  ${bodies.bodies.quarantined_notifications}` +
        (bodies.openQuarantined > 0 ? ` (${bodies.openQuarantined} still open: they can no longer be retried)` : ''),
    );
  }
  if (history) {
    const range =
      history.removedDays.length === 0 ? '' : ` (${history.removedDays[0]} to ${history.removedDays.at(-1)})`;
    lines.push(
      `${dryRun ? 'Dry run: would remove' : 'Removed'} the history of ${history.removedDays.length} day(s)${range} ` +
        `wholly before ${history.cutoff} (older than ${history.days} day(s)), about:`,
      `  notifications              ${history.rows.notifications}`,
      `  notification_variants      ${history.rows.notification_variants}`,
      `  deliveries                 ${history.rows.deliveries}`,
      `  repeat counters            ${history.repeatCounters}`,
      `  quarantined_notifications  ${history.quarantined}`,
    );
  }
  if (audit)
    lines.push(
      `${dryRun ? 'Dry run: would delete' : 'Deleted'} ${audit.deleted} console audit row(s) before ${audit.cutoff} ` +
        `(older than ${audit.days} day(s)).`,
    );
  lines.push(
    `Kept: the projections (with each status recorded for dedup)${history ? '' : ", every notification's status, parsed fields, digest and outcome, and every delivery"}. ${seconds.toFixed(2)} s.`,
  );
  return lines;
}

export function registerPurge(program: Command, io: CliIo, state: CliState): void {
  const command = program
    .command('purge')
    .summary('purge raw bodies, or remove whole days of history, past a retention')
    .description(
      'What the service does itself with BODY_RETENTION and HISTORY_RETENTION, on demand. --days N purges the raw ' +
        'bodies, and with them the buyer data they hold, of the days (UTC) wholly older than N days, and of ' +
        'quarantined notifications received before; the days already purged are not read again. --history-days N ' +
        'removes the history (notifications, variants, deliveries) of the days wholly older than N days, a day at a ' +
        'time without blocking the intake; at least 3 days, the time the sender retries. --audit-days N deletes the ' +
        'console audit rows older than N days (AUDIT_RETENTION). The projections stay. Unless ' +
        '--dry-run, it first makes the day partitions missing from yesterday to a week ahead, as the service does. Runs ' +
        'unattended: configuration from the environment, no prompts.\n\n' +
        'Exit codes: 0 done (or counted, with --dry-run); 1 database failure; 2 usage error (no or bad retention).',
    )
    .option('--days <n>', 'purge raw bodies older than this many days (at least 1)', integerOption(1, 36_500))
    .option(
      '--history-days <n>',
      'remove history older than this many days (at least 3: the sender retries for 72 hours)',
      integerOption(3, 36_500),
    )
    .option(
      '--audit-days <n>',
      'delete console audit rows older than this many days (at least 1)',
      integerOption(1, 36_500),
    )
    .option('--dry-run', 'count what would be purged or removed; change nothing');
  withJson(withDatabaseUrl(command)).action(action(state, (options: PurgeOptions) => purge(io, options)));
}
