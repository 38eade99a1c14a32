import type { Command } from 'commander';
import { recordingContext } from '../../config';
import { listQuarantined, openQuarantinedIds } from '../../recording/quarantineQueries';
import { retryOne, type RetryResult } from '../../recording/quarantineRetry';
import { auditedCommand } from './audit';
import { readConfig, withDatabase } from './database';
import { action, EXIT_FAILURE, EXIT_OK, UsageError, type CliIo, type CliState, type ExitCode } from './io';
import { integerOption, withDatabaseUrl, withJson } from './options';
import { emit, iso, shortHex, startProgress, table } from './output';

export interface QuarantineEntry {
  id: string;
  receivedAt: string | null;
  reason: string;
  detail: string;
  posId: string;
  keyFingerprint: string;
  bodySha256: string;
  /** null once purged. */
  bodyBytes: number | null;
  deliveries: number;
  resolved: boolean;
  resolvedAt: string | null;
  resolution: string | null;
}

interface ListOptions {
  open?: boolean;
  limit: number;
  databaseUrl?: string;
  json?: boolean;
}

export async function listQuarantine(io: CliIo, options: ListOptions): Promise<ExitCode> {
  const config = readConfig(io, { DATABASE_URL: options.databaseUrl });
  const entries = await withDatabase(io, config, (db) =>
    listQuarantined(db, { open: options.open === true, limit: options.limit }),
  );
  const list: QuarantineEntry[] = entries.map((q) => ({
    id: q.id,
    receivedAt: iso(q.receivedAt),
    reason: q.reason,
    detail: q.detail,
    posId: q.posId,
    keyFingerprint: q.keyFingerprint,
    bodySha256: q.bodySha256.toString('hex'),
    bodyBytes: q.bodyBytes,
    deliveries: q.deliveries,
    resolved: q.resolvedAt !== null,
    resolvedAt: iso(q.resolvedAt),
    resolution: q.resolution,
  }));
  emit(io, options.json === true, { quarantined: list }, () =>
    list.length === 0
      ? [options.open ? 'No open quarantined notifications.' : 'No quarantined notifications.']
      : [
          ...table([
            ['ID', 'RECEIVED', 'REASON', 'POS', 'KEY', 'BODY', 'DELIVERIES', 'STATE', 'DETAIL'],
            ...list.map((q) => [
              q.id,
              q.receivedAt ?? '',
              q.reason,
              q.posId,
              q.keyFingerprint,
              `${shortHex(q.bodySha256)} ${q.bodyBytes === null ? '(purged)' : `${q.bodyBytes} B`}`,
              String(q.deliveries),
              q.resolved ? `resolved ${q.resolvedAt}` : 'OPEN',
              q.detail + (q.resolution ? ` | ${q.resolution}` : ''),
            ]),
          ]),
          '',
          `${list.length} shown, ${list.filter((q) => !q.resolved).length} open.`,
        ],
  );
  return EXIT_OK;
}

export type { RetryResult };

interface RetryOptions {
  all?: boolean;
  databaseUrl?: string;
  json?: boolean;
}

export async function retryQuarantine(io: CliIo, ids: string[], options: RetryOptions): Promise<ExitCode> {
  if (ids.length > 0 === (options.all === true))
    throw new UsageError('name the quarantined notifications by id, or pass --all for every open one');
  const badId = ids.find((id) => !/^\d{1,18}$/.test(id));
  if (badId !== undefined) throw new UsageError(`${badId}: a quarantine id is a number (see quarantine list)`);
  const config = readConfig(io, { DATABASE_URL: options.databaseUrl });
  const json = options.json === true;
  const results = await withDatabase(io, config, async (db, transactions) => {
    const selected = options.all ? await openQuarantinedIds(db, { reason: null, posId: null }, null) : ids;
    const progress = startProgress(io, json, 'quarantined', selected.length);
    const done: RetryResult[] = [];
    try {
      for (const id of selected) {
        const result = await auditedCommand(
          db,
          { action: 'quarantine_retry', target: `quarantine #${id}` },
          async (): Promise<RetryResult> => {
            try {
              return await retryOne(transactions, id, recordingContext(config));
            } catch (error) {
              // The transaction rolled back: nothing recorded, the row still open. Go on with the others.
              return { id, result: 'failed', detail: `recording failed, nothing changed: ${(error as Error).message}` };
            }
          },
          (r) => ({
            result: r.result,
            detail: 'detail' in r ? r.detail : '',
            ...(r.result === 'recorded' ? { orderId: r.orderId } : {}),
          }),
        );
        done.push(result);
        progress.increment();
      }
    } finally {
      progress.stop();
    }
    return done;
  });
  const recorded = results.filter((r) => r.result === 'recorded').length;
  const left = results.filter((r) => r.result !== 'recorded' && r.result !== 'already_resolved');
  emit(io, json, { retried: results.length, recorded, left: left.length, results }, () => [
    ...(results.length === 0 ? ['No open quarantined notifications.'] : []),
    ...results.map((r) => {
      if (r.result === 'recorded')
        return `#${r.id}: recorded (${r.outcome}${r.notificationId ? `, notification #${r.notificationId}` : ''}, ${r.eventsWritten} event(s)); resolved`;
      if (r.result === 'still_unreadable') return `#${r.id}: still unreadable (${r.reason}: ${r.detail}); left open`;
      return `#${r.id}: ${r.result.replace('_', ' ')} (${r.detail})${r.result === 'already_resolved' ? '' : '; left as it is'}`;
    }),
    ...(results.length > 0 ? ['', `${recorded} recorded, ${left.length} left.`] : []),
  ]);
  return left.length > 0 ? EXIT_FAILURE : EXIT_OK;
}

export function registerQuarantine(program: Command, io: CliIo, state: CliState): void {
  const quarantine = program
    .command('quarantine')
    .summary('list or reprocess quarantined notifications')
    .description(
      'Authentic notifications that could not be read were quarantined (kept with the reason, answered 200).',
    );

  const list = quarantine
    .command('list')
    .description(
      'Lists quarantined notifications: id, received, reason, detail, POS, key fingerprint, body digest (never the ' +
        'body), deliveries, and whether resolved.\n\nExit codes: 0 listed (even if none); 1 database failure; 2 usage error.',
    )
    .option('--open', 'only the ones not resolved yet')
    .option('--limit <n>', 'show at most this many (oldest first)', integerOption(1), 1000);
  withJson(withDatabaseUrl(list)).action(action(state, (options: ListOptions) => listQuarantine(io, options)));

  const retry = quarantine
    .command('retry')
    .description(
      'Reads quarantined bodies again (after a fix to the parser): one that now parses is recorded exactly like a ' +
        'live delivery (projection, outbox event, delivery row with the original source address) and its ' +
        'quarantine row is marked resolved, in one transaction; one that still does not parse is left open, with ' +
        'the reason. The POS check against order.merchantPosId applies as at receipt.\n\n' +
        'Exit codes: 0 every selected one recorded (or already resolved, or none open); 1 some left (still ' +
        'unreadable, purged, POS mismatch, not found, recording failed); 2 usage error.',
    )
    .argument('[ids...]', 'quarantine ids (see quarantine list)')
    .option('--all', 'every open quarantined notification');
  withJson(withDatabaseUrl(retry)).action(
    action(state, (ids: string[], options: RetryOptions) => retryQuarantine(io, ids, options)),
  );
}
