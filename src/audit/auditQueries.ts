import { sql, type Insertable, type Selectable, type Updateable } from 'kysely';
import { columnsOf, tableOf } from '../database/columns';
import type { Db } from '../database/pool';
import type { AuditRole, AuditVia, ConsoleAuditTable } from '../database/schema';
import type { ConnectionSession } from '../database/transaction';

/**
 * The audit trail (console_audit, sql/009 and sql/012): every sign-in and every action, whichever door it came
 * through (the console, the admin API, the command line), who did what to what, as what, and how it ended; read
 * newest first by page (filtered), or by order (the order's story); kept under a retention of its own
 * (AUDIT_RETENTION) by the partition maintainer and `purge --audit-days`. What repeats without bound (sign-ins of one
 * name, refused and throttled sign-ins of one source) is one row per interval with a count, so no one can grow the
 * trail faster than the intervals pass.
 */

/** Every action the trail records, whichever door it came through. */
export const AUDIT_ACTIONS = [
  'sign_in',
  'sign_out',
  'end_sessions',
  'reconcile',
  'orders_expected',
  'republish',
  'quarantine_retry',
  'quarantine_retry_all',
  'events_replay',
  'events_rebuild',
  'reproject',
  'purge',
  'history_seed',
] as const;

export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/** Orders named one row each at most: past it, an action over many orders is one row naming how many. */
export const AUDITED_ORDERS_MAX = 100;

export interface AuditRow {
  id: string;
  at: Date;
  actor: string;
  role: AuditRole;
  action: string;
  target: string | null;
  orderId: string | null;
  result: string;
  detail: string;
  via: AuditVia;
  sourceAddress: string | null;
  /** How many times it happened, from `at` to `lastAt` (a coalesced row), or 1. */
  count: number;
  lastAt: Date | null;
}

/** What an audit row records; its id and time are the database's, the door the console's unless said. */
export interface AuditEntry {
  actor: string;
  role: AuditRole;
  action: AuditAction;
  target?: string | null;
  orderId?: string | null;
  result: string;
  detail?: string;
  via?: AuditVia;
  sourceAddress?: string | null;
}

/** Longest text kept of each field: a row is bounded whatever a request held. */
const LIMITS = { actor: 200, target: 300, orderId: 128, result: 200, detail: 2000 };

const clip = (text: string, length: number): string => (text.length > length ? text.slice(0, length) : text);

/** Typed as the table's row, so that each key is checked against schema.ts (a renamed column fails here). */
function rowOf(entry: AuditEntry): Insertable<ConsoleAuditTable> {
  return {
    actor: clip(entry.actor, LIMITS.actor),
    role: entry.role,
    action: entry.action,
    target: entry.target == null ? null : clip(entry.target, LIMITS.target),
    order_id: entry.orderId == null ? null : clip(entry.orderId, LIMITS.orderId),
    result: clip(entry.result, LIMITS.result),
    detail: clip(entry.detail ?? '', LIMITS.detail),
    via: entry.via ?? 'console',
    source_address: entry.sourceAddress ?? null,
  };
}

/** Records one sign-in or action. */
export async function recordAudit(db: Db, entry: AuditEntry): Promise<void> {
  await db.insertInto('console_audit').values(rowOf(entry)).execute();
}

/**
 * Records an action before it acts (its result says so: `started`, `publishing`), and answers the row's id, so
 * that whatever happens after (a failure, a crash), what was done is on the record; completeAudit says how it ended.
 */
export async function beginAudit(db: Db, entry: AuditEntry): Promise<string> {
  const { id } = await db.insertInto('console_audit').values(rowOf(entry)).returning('id').executeTakeFirstOrThrow();
  return id;
}

/**
 * How an action begun with beginAudit ended, on each of its rows: the result, and the detail and the order it
 * turned out to concern, when given.
 */
export async function completeAudit(
  db: Db,
  ids: readonly string[],
  { result, detail, orderId }: { result: string; detail?: string; orderId?: string },
): Promise<void> {
  if (ids.length === 0) return;
  // Typed as the table's row: a key spread into the update is checked against no column.
  const update: Updateable<ConsoleAuditTable> = { result: clip(result, LIMITS.result) };
  if (detail !== undefined) update.detail = clip(detail, LIMITS.detail);
  if (orderId !== undefined) update.order_id = clip(orderId, LIMITS.orderId);
  await db.updateTable('console_audit').set(update).where('id', 'in', ids).execute();
}

/**
 * Records a repeat of what `key` names (its interval included, e.g. `sign_in:operator:olga:2026-11-28T09`): the
 * first makes the row, each later one adds to its count and moves its last time, on any replica.
 */
export async function recordRepeat(db: Db, entry: AuditEntry, key: string, at: Date): Promise<void> {
  await db
    .insertInto('console_audit')
    .values({ ...rowOf(entry), at, last_at: at, coalesce_key: key })
    .onConflict((oc) =>
      oc
        .column('coalesce_key')
        .where('coalesce_key', 'is not', null)
        .doUpdateSet((eb) => ({ count: eb('console_audit.count', '+', 1), last_at: eb.ref('excluded.last_at') })),
    )
    .execute();
}

const auditFromRow = (a: Selectable<ConsoleAuditTable>): AuditRow => ({
  id: a.id,
  at: a.at,
  actor: a.actor,
  role: a.role,
  action: a.action,
  target: a.target,
  orderId: a.order_id,
  result: a.result,
  detail: a.detail,
  via: a.via,
  sourceAddress: a.source_address,
  count: a.count,
  lastAt: a.last_at,
});

/** The audit page's filters, each optional, and its keyset cursor (an audit id: the page starts below it). */
export interface AuditFilter {
  actor: string | null;
  action: AuditAction | null;
  orderId: string | null;
  from: Date | null;
  to: Date | null;
  before: string | null;
}

/** The trail, newest first: `limit` rows matching the filter below the cursor. */
export async function auditPage(db: Db, filter: AuditFilter, limit: number): Promise<AuditRow[]> {
  let query = db.selectFrom('console_audit').selectAll().orderBy('id', 'desc').limit(limit);
  if (filter.actor !== null) query = query.where('actor', '=', filter.actor);
  if (filter.action !== null) query = query.where('action', '=', filter.action);
  if (filter.orderId !== null) query = query.where('order_id', '=', filter.orderId);
  if (filter.from !== null) query = query.where('at', '>=', filter.from);
  if (filter.to !== null) query = query.where('at', '<', filter.to);
  if (filter.before !== null) query = query.where('id', '<', filter.before);
  return (await query.execute()).map(auditFromRow);
}

/** What was done to one order, oldest first, at most `limit` rows. */
export async function auditOfOrder(db: Db, orderId: string, limit: number): Promise<AuditRow[]> {
  const rows = await db
    .selectFrom('console_audit')
    .selectAll()
    .where('order_id', '=', orderId)
    .orderBy('id')
    .limit(limit)
    .execute();
  return rows.map(auditFromRow);
}

/** The audit's action for a check of an order a person asked for (the console's "check now"). */
export const CHECK_ACTION: AuditAction = 'reconcile';

/** How many times an action was done to an order (counted up to `bound`), and the latest time. */
export async function actionsOnOrder(
  db: Db,
  orderId: string,
  action: string,
  bound: number,
): Promise<{ count: number; last: AuditRow | null }> {
  const done = db
    .selectFrom('console_audit')
    .where('order_id', '=', orderId)
    .where('action', '=', action)
    .orderBy('id', 'desc');
  const [counted, last] = await Promise.all([
    db
      .selectFrom(done.select('id').limit(bound).as('done'))
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .executeTakeFirst(),
    done.selectAll().limit(1).executeTakeFirst(),
  ]);
  return { count: Number(counted?.n ?? 0), last: last ? auditFromRow(last) : null };
}

const audit = columnsOf('console_audit');

/**
 * Rows older than the retention, deleted (or, in a dry run, counted) through console_audit_by_at. A step of the
 * history maintainer's round and of `purge --audit-days`.
 */
export async function deleteAuditPast(
  session: ConnectionSession,
  retentionMs: number,
  nowMs: number,
  { dryRun = false }: { dryRun?: boolean } = {},
): Promise<{ deleted: number }> {
  const cutoff = new Date(nowMs - retentionMs).toISOString();
  const [row] = await session.run(
    dryRun
      ? sql<{
          n: string;
        }>`SELECT count(*) AS n FROM ${tableOf('console_audit')} WHERE ${audit('at')} < ${cutoff}::timestamptz`
      : sql<{
          n: string;
        }>`WITH gone AS (DELETE FROM ${tableOf('console_audit')} WHERE ${audit('at')} < ${cutoff}::timestamptz RETURNING 1)
          SELECT count(*) AS n FROM gone`,
  );
  return { deleted: Number(row?.n ?? 0) };
}
