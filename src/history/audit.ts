import { sql } from 'kysely';
import type { HistorySession } from './maintenance';

/**
 * The console's audit trail under a retention of its own (AUDIT_RETENTION): rows older are deleted, through
 * console_audit_by_at. A step of the history maintainer's round and of `purge --audit-days`.
 */
export async function deleteAuditPast(
  session: HistorySession,
  retentionMs: number,
  nowMs: number,
  { dryRun = false }: { dryRun?: boolean } = {},
): Promise<{ deleted: number }> {
  const cutoff = new Date(nowMs - retentionMs).toISOString();
  const [row] = dryRun
    ? await session.run(sql<{ n: string }>`SELECT count(*) AS n FROM console_audit WHERE at < ${cutoff}::timestamptz`)
    : await session.run(
        sql<{ n: string }>`WITH gone AS (DELETE FROM console_audit WHERE at < ${cutoff}::timestamptz RETURNING 1)
          SELECT count(*) AS n FROM gone`,
      );
  return { deleted: Number(row?.n ?? 0) };
}
