import { recordingContext } from '../../config';
import { rebuildEventsInRange, type RebuildReport } from '../../recording/eventRebuildPages';
import { auditedCommand } from './audit';
import { readConfig, withDatabase } from './database';
import { EXIT_FAILURE, EXIT_OK, UsageError, type CliIo, type ExitCode } from './io';
import { emit, startProgress, type Progress } from './output';

/**
 * `events rebuild`: the events of the notifications received in a time range, rebuilt from history with their ids
 * and put back in the outbox as published (src/recording/eventRebuildPages.ts), so that the feed (GET /events) and
 * the replays serve them again for OUTBOX_RETENTION. The command reads the options, keeps the audit record and
 * writes the report.
 */

export interface RebuildOptions {
  since?: Date;
  until?: Date;
  dryRun?: boolean;
  databaseUrl?: string;
  json?: boolean;
}

export async function rebuildEvents(io: CliIo, options: RebuildOptions): Promise<ExitCode> {
  if (!options.since) throw new UsageError('--since is required: the events of notifications received from then');
  const since = options.since;
  const until = options.until ?? new Date();
  if (until.getTime() <= since.getTime()) throw new UsageError('--until is not after --since: the range is empty');
  const config = readConfig(io, { DATABASE_URL: options.databaseUrl });
  const json = options.json === true;
  const dryRun = options.dryRun === true;
  const report = await withDatabase(io, config, async (db): Promise<RebuildReport> => {
    const rebuild = async (): Promise<RebuildReport> => {
      const progress = (total: number): Progress => startProgress(io, json, 'orders', total);
      return rebuildEventsInRange(db, { since, until, dryRun, recording: recordingContext(config) }, progress);
    };
    if (dryRun) return rebuild();
    // It changes the outbox: on the record before it starts, with what it did once it ends.
    return auditedCommand(
      db,
      {
        action: 'events_rebuild',
        target: `notifications received from ${since.toISOString()} until ${until.toISOString()}`,
      },
      rebuild,
      (done) => ({
        result: `rebuilt ${done.rebuilt}, restored ${done.restored}`,
        detail:
          `${done.orders} order(s); not rebuilt: ${done.incomplete.length} with history gone, ` +
          `${done.unreadable.length} unreadable, ${done.lostIds.length} event id(s) lost`,
      }),
    );
  });

  const problems = report.incomplete.length + report.unreadable.length + report.lostIds.length;
  emit(io, json, report, () => [
    `Notifications received from ${report.since} until ${report.until}: ${report.orders} order(s).`,
    dryRun
      ? `Dry run: would rebuild ${report.rebuilt} event(s); nothing changed.`
      : `Rebuilt ${report.rebuilt} event(s): ${report.restored} put back in the outbox as published, ` +
        `${report.rebuilt - report.restored} still there. GET /events and the replays serve them until OUTBOX_RETENTION.`,
    ...(report.incomplete.length > 0
      ? [
          `Not rebuilt, part of their history is gone (HISTORY_RETENTION): ${report.incomplete.length} order(s): ` +
            report.incomplete.slice(0, 10).join(', ') +
            (report.incomplete.length > 10 ? ', ...' : ''),
        ]
      : []),
    ...(report.unreadable.length > 0
      ? [`Not rebuilt, a stored notification cannot be read: ${report.unreadable.join(', ')}`]
      : []),
    ...(report.lostIds.length > 0
      ? [
          `Not rebuilt, their events were deleted before this version kept event ids: notification(s) ` +
            report.lostIds.slice(0, 10).join(', ') +
            (report.lostIds.length > 10 ? ', ...' : ''),
        ]
      : []),
  ]);
  return problems > 0 ? EXIT_FAILURE : EXIT_OK;
}
