import { sql } from 'kysely';
import type { Command } from 'commander';
import type { Db } from '../../database/pool';
import { readConfig, withDatabase } from './database';
import { action, EXIT_OK, UsageError, type CliIo, type CliState, type ExitCode } from './io';
import { integerOption, withDatabaseUrl, withJson } from './options';
import { emit, startProgress } from './output';

/**
 * Where raw bodies (and with them the buyer's personal data) are kept. Everything else stays: the
 * projections, the notifications' parsed fields, statuses, digests and outcomes, the deliveries.
 */
const TARGETS = [
  {
    table: 'notifications',
    count: (cutoff: Date) =>
      sql<{ n: string }>`SELECT count(*) AS n FROM notifications WHERE received_at < ${cutoff} AND body IS NOT NULL`,
    purge: (cutoff: Date, batch: number) => sql`
      UPDATE notifications SET body = NULL WHERE id IN (
        SELECT id FROM notifications WHERE received_at < ${cutoff} AND body IS NOT NULL ORDER BY id LIMIT ${batch})`,
  },
  {
    table: 'notification_variants',
    count: (cutoff: Date) =>
      sql<{
        n: string;
      }>`SELECT count(*) AS n FROM notification_variants WHERE first_received_at < ${cutoff} AND body IS NOT NULL`,
    purge: (cutoff: Date, batch: number) => sql`
      UPDATE notification_variants SET body = NULL WHERE (notification_id, body_sha256) IN (
        SELECT notification_id, body_sha256 FROM notification_variants
         WHERE first_received_at < ${cutoff} AND body IS NOT NULL ORDER BY notification_id LIMIT ${batch})`,
  },
  {
    table: 'quarantined_notifications',
    count: (cutoff: Date) =>
      sql<{
        n: string;
      }>`SELECT count(*) AS n FROM quarantined_notifications WHERE received_at < ${cutoff} AND body IS NOT NULL`,
    purge: (cutoff: Date, batch: number) => sql`
      UPDATE quarantined_notifications SET body = NULL WHERE id IN (
        SELECT id FROM quarantined_notifications WHERE received_at < ${cutoff} AND body IS NOT NULL ORDER BY id LIMIT ${batch})`,
  },
] as const;

export type PurgeTable = (typeof TARGETS)[number]['table'];

export interface PurgeReport {
  dryRun: boolean;
  days: number;
  cutoff: string;
  /** Bodies set to NULL (or, in a dry run, that would be), per table. */
  purged: Record<PurgeTable, number>;
  /** Open (unresolved) quarantined notifications among them: they can no longer be retried. */
  openQuarantinedPurged: number;
}

/** Sets raw bodies older than the cutoff to NULL, in batches of its own transactions. */
export async function purgeBodies(
  db: Db,
  days: number,
  options: { dryRun: boolean; batchSize: number; onBatch?: (rows: number) => void; onTotal?: (rows: number) => void },
): Promise<PurgeReport> {
  const { rows } = await sql<{ cutoff: Date }>`SELECT now() - make_interval(days => ${days}) AS cutoff`.execute(db);
  const cutoff = (rows[0] as { cutoff: Date }).cutoff;
  const counts = await Promise.all(
    TARGETS.map(async (t) => Number(((await t.count(cutoff).execute(db)).rows[0] as { n: string }).n)),
  );
  const open = await sql<{ n: string }>`
    SELECT count(*) AS n FROM quarantined_notifications WHERE received_at < ${cutoff} AND body IS NOT NULL AND resolved_at IS NULL`.execute(
    db,
  );
  const report: PurgeReport = {
    dryRun: options.dryRun,
    days,
    cutoff: cutoff.toISOString(),
    purged: { notifications: 0, notification_variants: 0, quarantined_notifications: 0 },
    openQuarantinedPurged: Number((open.rows[0] as { n: string }).n),
  };
  options.onTotal?.(counts.reduce((a, b) => a + b, 0));
  if (options.dryRun) {
    TARGETS.forEach((t, i) => (report.purged[t.table] = counts[i] as number));
    return report;
  }
  for (const target of TARGETS) {
    for (;;) {
      const result = await target.purge(cutoff, options.batchSize).execute(db);
      const updated = Number(result.numAffectedRows ?? 0n);
      report.purged[target.table] += updated;
      options.onBatch?.(updated);
      if (updated < options.batchSize) break;
    }
  }
  return report;
}

interface PurgeOptions {
  days?: number;
  dryRun?: boolean;
  batchSize: number;
  databaseUrl?: string;
  json?: boolean;
}

export async function purge(io: CliIo, options: PurgeOptions): Promise<ExitCode> {
  let days = options.days;
  if (days === undefined) {
    const fromEnv = io.env.RETENTION_DAYS;
    if (fromEnv === undefined || fromEnv.trim() === '')
      throw new UsageError('give the retention period: --days N or RETENTION_DAYS (at least 1)');
    if (!/^\d+$/.test(fromEnv.trim()) || Number(fromEnv) < 1)
      throw new UsageError('RETENTION_DAYS must be a whole number of days, at least 1');
    days = Number(fromEnv);
  }
  const json = options.json === true;
  const dryRun = options.dryRun === true;
  const config = readConfig(io, { DATABASE_URL: options.databaseUrl });
  const report = await withDatabase(io, config, async (db) => {
    const progress = startProgress(io, json, 'bodies', 0);
    try {
      return await purgeBodies(db, days, {
        dryRun,
        batchSize: options.batchSize,
        onTotal: (total) => progress.setTotal(total),
        onBatch: (rows) => progress.increment(rows),
      });
    } finally {
      progress.stop();
    }
  });
  emit(io, json, report, () => [
    `${dryRun ? 'Dry run: would purge' : 'Purged'} raw bodies received before ${report.cutoff} (older than ${days} day(s)):`,
    `  notifications              ${report.purged.notifications}`,
    `  notification_variants      ${report.purged.notification_variants}`,
    `  quarantined_notifications  ${report.purged.quarantined_notifications}` +
      (report.openQuarantinedPurged > 0
        ? ` (${report.openQuarantinedPurged} still open: they can no longer be retried)`
        : ''),
    "Kept: the projections, every notification's status, parsed fields, digest and outcome, and every delivery.",
  ]);
  return EXIT_OK;
}

export function registerPurge(program: Command, io: CliIo, state: CliState): void {
  const command = program
    .command('purge')
    .summary('delete raw bodies (and the personal data in them) older than the retention period')
    .description(
      'Deletes the raw bodies, and with them the buyer data they hold, of notifications, variants and quarantined ' +
        'notifications received more than the retention period ago (--days, or RETENTION_DAYS), in batches. The ' +
        "projections and the audit trail (each notification's status, parsed fields, digest, outcome; every " +
        'delivery) are kept. Runs unattended (a CronJob): configuration from the environment, no prompts.\n\n' +
        'Exit codes: 0 done (or counted, with --dry-run); 1 database failure; 2 usage error (no or bad retention).',
    )
    .option('--days <n>', 'retention in days, at least 1 (default RETENTION_DAYS)', integerOption(1))
    .option('--dry-run', 'count what would be purged; change nothing')
    .option('--batch-size <n>', 'rows per batch (each its own transaction)', integerOption(1, 100_000), 1000);
  withJson(withDatabaseUrl(command)).action(action(state, (options: PurgeOptions) => purge(io, options)));
}
