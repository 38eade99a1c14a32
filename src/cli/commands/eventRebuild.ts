import { recordingContext } from '../../config';
import { rebuildOrderEvents, type StreamEntry } from '../../recording/eventRebuild';
import { auditedCommand } from './audit';
import { readConfig, withDatabase } from './database';
import { EXIT_FAILURE, EXIT_OK, UsageError, type CliIo, type ExitCode } from './io';
import { emit, startProgress } from './output';
import { derivedFrom, ordersRecordedIn, readOrdersHistory, restoreEvents } from './rebuildQueries';

/**
 * `events rebuild`: the events of the notifications received in a time range, rebuilt from history with their ids
 * (src/recording/eventRebuild.ts) and put back in the outbox as published, so that the feed (GET /events) and the
 * replays serve them again for OUTBOX_RETENTION. A page of orders at a time, each order's whole history folded.
 */

/** Orders a page reads the history of. */
const PAGE_ORDERS = 500;

export interface RebuildOptions {
  since?: Date;
  until?: Date;
  dryRun?: boolean;
  databaseUrl?: string;
  json?: boolean;
}

export interface RebuildReport {
  dryRun: boolean;
  since: string;
  until: string;
  orders: number;
  /** Events rebuilt; of them, those put back (the others were still in the outbox). */
  rebuilt: number;
  restored: number;
  /** Orders not rebuilt: part of their history is gone (HISTORY_RETENTION). */
  incomplete: string[];
  /** Orders whose stored notifications cannot be read. */
  unreadable: string[];
  /** Notifications whose event was written before ids were derived and deleted before then: its id is lost. */
  lostIds: string[];
}

export async function rebuildEvents(io: CliIo, options: RebuildOptions): Promise<ExitCode> {
  if (!options.since) throw new UsageError('--since is required: the events of notifications received from then');
  const since = options.since;
  const until = options.until ?? new Date();
  if (until.getTime() <= since.getTime()) throw new UsageError('--until is not after --since: the range is empty');
  const config = readConfig(io, { DATABASE_URL: options.databaseUrl });
  const json = options.json === true;
  const dryRun = options.dryRun === true;
  const inRange = (entry: StreamEntry): boolean => {
    const at = Date.parse(entry.at);
    return at >= since.getTime() && at < until.getTime();
  };

  const report = await withDatabase(io, config, async (db): Promise<RebuildReport> => {
    const rebuild = async (): Promise<RebuildReport> => {
      const orderIds = await ordersRecordedIn(db, since, until);
      const firstDerived = await derivedFrom(db);
      const result: RebuildReport = {
        dryRun,
        since: since.toISOString(),
        until: until.toISOString(),
        orders: orderIds.length,
        rebuilt: 0,
        restored: 0,
        incomplete: [],
        unreadable: [],
        lostIds: [],
      };
      const progress = startProgress(io, json, 'orders', orderIds.length);
      try {
        for (let start = 0; start < orderIds.length; start += PAGE_ORDERS) {
          const page = orderIds.slice(start, start + PAGE_ORDERS);
          const history = await readOrdersHistory(db, page);
          for (const orderId of page) {
            const rebuilt = rebuildOrderEvents(history.streams.get(orderId) ?? [], {
              ...recordingContext(config),
              ownerPosId: history.owners.get(orderId) ?? null,
              lastSequence: history.lastSequences.get(orderId) ?? 0,
              legacy: history.legacy,
              derivedFrom: firstDerived,
              kept: history.kept.get(orderId) ?? new Set(),
              wanted: inRange,
            });
            if (rebuilt.outcome === 'incomplete') result.incomplete.push(orderId);
            else if (rebuilt.outcome === 'unreadable') result.unreadable.push(orderId);
            else {
              result.rebuilt += rebuilt.events.length;
              result.lostIds.push(...rebuilt.lost);
              if (!dryRun) result.restored += await restoreEvents(db, orderId, rebuilt.events);
            }
          }
          progress.increment(page.length);
        }
      } finally {
        progress.stop();
      }
      return result;
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
