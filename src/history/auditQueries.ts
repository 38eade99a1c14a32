import { sql, type Selectable } from 'kysely';
import { columnsOf, tableOf } from '../database/columns';
import type { Db } from '../database/pool';
import type { ConsoleAuditTable } from '../database/schema';
import type { HistorySession } from './historyQueries';

/**
 * The console's audit trail (console_audit, sql/009): every sign-in and action, who did what to what, as what,
 * and how it ended; read newest first by page, or by order (the order's story); kept under a retention of its own
 * (AUDIT_RETENTION) by the history maintainer and `purge --audit-days`.
 */

export interface AuditRow {
  id: string;
  at: Date;
  actor: string;
  role: 'viewer' | 'operator' | null;
  action: string;
  target: string | null;
  orderId: string | null;
  result: string;
  detail: string;
}

/** What an audit row records; its id and time are the database's. */
export type AuditEntry = Omit<AuditRow, 'id' | 'at'>;

/** Longest detail kept: a row says what happened, not everything that was said. */
const DETAIL_LENGTH = 2000;

export async function recordAudit(db: Db, entry: AuditEntry): Promise<void> {
  await db
    .insertInto('console_audit')
    .values({
      actor: entry.actor,
      role: entry.role,
      action: entry.action,
      target: entry.target,
      order_id: entry.orderId,
      result: entry.result,
      detail: entry.detail.slice(0, DETAIL_LENGTH),
    })
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
});

/** The trail, newest first: `limit` rows below the cursor (an audit id). */
export async function auditPage(db: Db, before: string | null, limit: number): Promise<AuditRow[]> {
  let query = db.selectFrom('console_audit').selectAll().orderBy('id', 'desc').limit(limit);
  if (before !== null) query = query.where('id', '<', before);
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
export const CHECK_ACTION = 'reconcile';

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
  session: HistorySession,
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
