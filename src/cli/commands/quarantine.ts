import { sql } from 'kysely';
import type { Command } from 'commander';
import { parseNotification } from '../../parsing/parseNotification';
import type { Delivery, DeliveryKept } from '../../recording/notificationStore';
import { recordBatch } from '../../recording/recordBatch';
import { queries, type PooledTransactions } from '../../database/transaction';
import { signersFor } from '../../verification/posBinding';
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
  const entries = await withDatabase(io, config, async (db) => {
    let query = db
      .selectFrom('quarantined_notifications as q')
      .select([
        'q.id',
        'q.received_at',
        'q.reason',
        'q.detail',
        'q.pos_id',
        'q.key_fingerprint',
        'q.body_sha256',
        'q.resolved_at',
        'q.resolution',
      ])
      .select(sql<number | null>`octet_length(q.body)`.as('body_bytes'))
      .select((eb) =>
        eb
          .selectFrom('deliveries as d')
          .select((d) => d.fn.countAll<string>().as('c'))
          .whereRef('d.quarantine_id', '=', 'q.id')
          .as('deliveries'),
      )
      .select((eb) =>
        eb
          .selectFrom('delivery_repeats as r')
          .select('r.deliveries')
          .whereRef('r.quarantine_id', '=', 'q.id')
          .as('repeats'),
      )
      .orderBy('q.id')
      .limit(options.limit);
    if (options.open) query = query.where('q.resolved_at', 'is', null);
    return query.execute();
  });
  const list: QuarantineEntry[] = entries.map((q) => ({
    id: q.id,
    receivedAt: iso(q.received_at),
    reason: q.reason,
    detail: q.detail,
    posId: q.pos_id,
    keyFingerprint: q.key_fingerprint,
    bodySha256: q.body_sha256.toString('hex'),
    bodyBytes: q.body_bytes === null ? null : Number(q.body_bytes),
    deliveries: Number(q.deliveries ?? 0) + Number(q.repeats ?? 0),
    resolved: q.resolved_at !== null,
    resolvedAt: iso(q.resolved_at),
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

export type RetryResult =
  | { id: string; result: 'recorded'; outcome: string; notificationId: string | null; eventsWritten: number }
  | { id: string; result: 'still_unreadable'; reason: string; detail: string }
  | {
      id: string;
      result: 'not_found' | 'already_resolved' | 'body_purged' | 'pos_mismatch' | 'failed';
      detail: string;
    };

/**
 * Reads one quarantined body again; if it now parses, records it as a live delivery would be (through the
 * recorder, with the POS checks of receipt) and marks the row resolved, both in one transaction. Otherwise
 * leaves the row as it is.
 */
export async function retryOne(
  transactions: PooledTransactions,
  id: string,
  eventSource: string,
): Promise<RetryResult> {
  return transactions.transaction(async (trx): Promise<RetryResult> => {
    const [row] = await trx.run(
      queries.selectFrom('quarantined_notifications').selectAll().where('id', '=', id).forUpdate().compile(),
    );
    if (!row) return { id, result: 'not_found', detail: 'no quarantined notification with this id' };
    if (row.resolved_at !== null) return { id, result: 'already_resolved', detail: row.resolution ?? '' };
    if (row.body === null)
      return { id, result: 'body_purged', detail: 'the body was purged (retention); it cannot be read again' };
    const parsed = parseNotification(row.body);
    if (!parsed.ok) return { id, result: 'still_unreadable', reason: parsed.reason, detail: parsed.detail };
    const n = parsed.notification;
    // The receiver checks this after parsing; a body it could not parse never got the check.
    const signers = signersFor(
      [{ posId: row.pos_id, keyFingerprint: row.key_fingerprint }],
      n.kind === 'order' ? n.merchantPosId : null,
    );
    if (signers.length === 0) {
      return {
        id,
        result: 'pos_mismatch',
        detail: `order.merchantPosId is not POS ${row.pos_id}, whose key verified it`,
      };
    }
    const [original] = await trx.run(
      queries
        .selectFrom('deliveries')
        .select(['source_address', 'processing_time_ms'])
        .where('quarantine_id', '=', id)
        .orderBy('id')
        .limit(1)
        .compile(),
    );
    const delivery: Delivery = {
      body: row.body,
      bodySha256: row.body_sha256,
      signers,
      sourceAddress: original?.source_address ?? null,
      processingTimeMs: original?.processing_time_ms ?? null,
      observedVia: 'notification',
    };
    const resolve = (recorded: DeliveryKept) =>
      trx.run(
        queries
          .updateTable('quarantined_notifications')
          .set({
            resolved_at: sql`now()`,
            resolution: `reprocessed: ${recorded.outcome}${recorded.notificationId ? ` as notification ${recorded.notificationId}` : ''}`,
          })
          .where('id', '=', id)
          .compile(),
      );
    // Recorded and resolved in one transaction: the resolution leaves before the write and its COMMIT.
    const {
      results: [recorded],
    } = await recordBatch(trx, { eventSource }, [{ delivery, notification: n }], {
      beforeWrite: async ({ results: [decided] }) => {
        if (decided && decided.outcome !== 'refused') await resolve(decided);
      },
    });
    if (!recorded || recorded.outcome === 'refused') {
      return { id, result: 'pos_mismatch', detail: `the order belongs to another POS than ${row.pos_id}` };
    }
    return {
      id,
      result: 'recorded',
      outcome: recorded.outcome,
      notificationId: recorded.notificationId,
      eventsWritten: recorded.eventsWritten,
    };
  });
}

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
    const selected = options.all
      ? (
          await db
            .selectFrom('quarantined_notifications')
            .select('id')
            .where('resolved_at', 'is', null)
            .orderBy('id')
            .execute()
        ).map((r) => r.id)
      : ids;
    const progress = startProgress(io, json, 'quarantined', selected.length);
    const done: RetryResult[] = [];
    try {
      for (const id of selected) {
        try {
          done.push(await retryOne(transactions, id, config.eventSource));
        } catch (error) {
          // The transaction rolled back: nothing recorded, the row still open. Go on with the others.
          done.push({ id, result: 'failed', detail: `recording failed, nothing changed: ${(error as Error).message}` });
        }
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
