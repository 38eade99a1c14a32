import { sql, type Kysely } from 'kysely';
import { ADVISORY_LOCKS } from '../database/advisoryLocks';
import { columnsOf, tableOf } from '../database/columns';
import type { Database } from '../database/schema';
import type { ConnectionSession } from '../database/transaction';
import {
  addDays,
  BODY_TABLES,
  dayOf,
  HISTORY_TABLES,
  partitionName,
  type Day,
  type HistoryTable,
  type PartitionBounds,
} from './partitionDays';

/**
 * The statements of history maintenance (partitionMaintenance.ts, and the console audit's retention in src/audit/auditQueries.ts):
 * the partitions of the history tables as the catalog lists them, making, detaching and dropping days, purging a
 * day's bodies, and deleting what refers to removed history. Each runs on a session of its own (a connection,
 * outside transactions: a day is detached concurrently), given first.
 */

/** Serializes history work across replicas and the command line. */
export const HISTORY_WORK_LOCK = ADVISORY_LOCKS.historyWork;

export const lockHistoryWork = (session: ConnectionSession) =>
  session.run(sql`SELECT pg_advisory_lock(${HISTORY_WORK_LOCK}::bigint)`);

export const unlockHistoryWork = (session: ConnectionSession) =>
  session.run(sql`SELECT pg_advisory_unlock(${HISTORY_WORK_LOCK}::bigint)`);

/** A partition of a history table, as the catalog lists it. */
export interface PartitionRow {
  name: string;
  parent: string;
  /** A detach left half-done (DETACH ... CONCURRENTLY interrupted). */
  pending: boolean;
  /** The planner's estimate of its rows (-1 or 0 before it was analyzed). */
  rows: number;
}

/** The partitions of the history tables, detached or not. */
export const listPartitions = (session: ConnectionSession): Promise<PartitionRow[]> =>
  session.run(
    sql<PartitionRow>`
      SELECT c.relname AS name, p.relname AS parent, i.inhdetachpending AS pending, c.reltuples::float8 AS rows
        FROM pg_inherits i
        JOIN pg_class c ON c.oid = i.inhrelid
        JOIN pg_class p ON p.oid = i.inhparent
       WHERE p.relname = ANY(${[...HISTORY_TABLES]}::text[]) AND c.relkind = 'r'`,
  );

/** Longest the DDL of a day waits for a table lock: past it, the day is left for the next round. */
const DDL_LOCK_TIMEOUT = '5s';

/** Makes the partitions of the days from `first` to `last` that do not exist yet (sql/007); answers how many. */
export async function ensurePartitions(session: ConnectionSession, first: Day, last: Day): Promise<number> {
  await session.run(sql`SET lock_timeout = ${sql.lit(DDL_LOCK_TIMEOUT)}`);
  try {
    const [row] = await session.run(
      sql<{ made: number }>`SELECT history_partitions_ensure(${first}::date, ${last}::date) AS made`,
    );
    return row?.made ?? 0;
  } finally {
    await session.run(sql`RESET lock_timeout`);
  }
}

/** A range partition's bounds as Postgres prints them (pg_get_expr): the two times it takes rows from and to. */
const RANGE_BOUNDS = "^FOR VALUES FROM \\('([^']+)'\\) TO \\('([^']+)'\\)$";

/**
 * The bounds of the attached partitions of the history tables: the ranges writes are routed by. Every one, or only
 * those named (found through pg_class's index by name: a week's worth read in a millisecond, where every partition
 * of a year of history would take tens of them).
 */
export const partitionBounds = (session: ConnectionSession, names?: readonly string[]): Promise<PartitionBounds[]> =>
  session.run(
    sql<PartitionBounds>`
      SELECT p.relname AS "table",
             extract(epoch FROM b[1]::timestamptz)::float8 * 1000 AS "fromMs",
             extract(epoch FROM b[2]::timestamptz)::float8 * 1000 AS "toMs"
        FROM pg_inherits i
        JOIN pg_class c ON c.oid = i.inhrelid
        JOIN pg_class p ON p.oid = i.inhparent
        CROSS JOIN LATERAL regexp_match(pg_get_expr(c.relpartbound, c.oid), ${RANGE_BOUNDS}) AS b
       WHERE p.relname = ANY(${[...HISTORY_TABLES]}::text[]) AND NOT i.inhdetachpending AND b IS NOT NULL
             ${names === undefined ? sql`` : sql`AND c.relname = ANY(${[...names]}::text[])`}`,
  );

/** A day's partition of a history table (`<table>_pYYYYMMDD`, partitionDays.ts) as SQL. */
const partitionOf = (table: HistoryTable, day: Day) => sql.table(partitionName(table, day));

/** Detaches a day's partition (concurrently, or finishing a detach left half-done) and drops it. */
export async function removePartition(
  session: ConnectionSession,
  table: HistoryTable,
  day: Day,
  how: 'CONCURRENTLY' | 'FINALIZE',
): Promise<void> {
  await session.run(sql`ALTER TABLE ${tableOf(table)} DETACH PARTITION ${partitionOf(table, day)} ${sql.raw(how)}`);
  await session.run(sql`DROP TABLE ${partitionOf(table, day)}`);
}

const repeats = columnsOf('delivery_repeats');
const quarantined = columnsOf('quarantined_notifications');
const purgedDay = columnsOf('history_bodies_purged');

/** What refers to history older than `horizon` (an ISO time): counters of repeats, quarantined notifications. */
export interface PastReferences {
  repeats: number;
  quarantined: number;
}

/** Counts what deleteReferencesPast would delete. */
export async function countReferencesPast(session: ConnectionSession, horizon: string): Promise<PastReferences> {
  const [counts] = await session.run(
    sql<PastReferences>`
      SELECT (SELECT count(*)::int FROM ${tableOf('delivery_repeats')}
               WHERE ${repeats('last_at')} < ${horizon}::timestamptz) AS repeats,
             (SELECT count(*)::int FROM ${tableOf('quarantined_notifications')}
               WHERE ${quarantined('received_at')} < ${horizon}::timestamptz) AS quarantined`,
  );
  return { repeats: counts?.repeats ?? 0, quarantined: counts?.quarantined ?? 0 };
}

/**
 * Deletes what refers to history older than `horizon`: counters of repeats last seen before it, quarantined
 * notifications received before it, and the purge registry's days up to `lastDay` (the last day removed).
 */
export async function deleteReferencesPast(
  session: ConnectionSession,
  horizon: string,
  lastDay: Day | undefined,
): Promise<PastReferences> {
  const [deleted] = await session.run(
    sql<PastReferences>`
      WITH gone_repeats AS (
             DELETE FROM ${tableOf('delivery_repeats')} WHERE ${repeats('last_at')} < ${horizon}::timestamptz
             RETURNING 1),
           gone_quarantined AS (
             DELETE FROM ${tableOf('quarantined_notifications')}
              WHERE ${quarantined('received_at')} < ${horizon}::timestamptz RETURNING 1),
           gone_registry AS (
             DELETE FROM ${tableOf('history_bodies_purged')} WHERE ${purgedDay('day')} <= ${lastDay ?? '-infinity'}::date)
      SELECT (SELECT count(*)::int FROM gone_repeats) AS repeats,
             (SELECT count(*)::int FROM gone_quarantined) AS quarantined`,
  );
  return { repeats: deleted?.repeats ?? 0, quarantined: deleted?.quarantined ?? 0 };
}

/** The days whose bodies were purged (the purge registry). */
export async function purgedDays(session: ConnectionSession): Promise<Set<Day>> {
  const rows = await session.run(
    sql<{ purged: string }>`SELECT ${purgedDay('day')}::text AS purged FROM ${tableOf('history_bodies_purged')}`,
  );
  return new Set(rows.map((r) => r.purged));
}

/** Bodies still kept in a day's partition of a table that keeps bodies: counted, or set to NULL; answers how many. */
export async function purgeDayBodies(
  session: ConnectionSession,
  table: (typeof BODY_TABLES)[number],
  day: Day,
  { dryRun }: { dryRun: boolean },
): Promise<number> {
  const partition = partitionOf(table, day);
  const body = columnsOf(table)('body');
  const [row] = await session.run(
    dryRun
      ? sql<{ n: number }>`SELECT count(*)::int AS n FROM ${partition} WHERE ${body} IS NOT NULL`
      : sql<{ n: number }>`WITH purged AS (UPDATE ${partition} SET ${body} = NULL WHERE ${body} IS NOT NULL RETURNING 1)
                            SELECT count(*)::int AS n FROM purged`,
  );
  return row?.n ?? 0;
}

/** Records a day's bodies purged. */
export async function recordDayPurged(session: ConnectionSession, day: Day): Promise<void> {
  await session.run(
    sql`INSERT INTO ${tableOf('history_bodies_purged')} (${purgedDay('day')}) VALUES (${day}::date) ON CONFLICT DO NOTHING`,
  );
}

/**
 * The bodies of quarantined notifications received before `cutoff` (an ISO time), counted or set to NULL; with
 * how many of them were open (unresolved: they can no longer be retried).
 */
export async function purgeQuarantinedBodies(
  session: ConnectionSession,
  cutoff: string,
  { dryRun }: { dryRun: boolean },
): Promise<{ n: number; open: number }> {
  const [row] = await session.run(
    dryRun
      ? sql<{ n: number; open: number }>`
          SELECT count(*)::int AS n, count(*) FILTER (WHERE ${quarantined('resolved_at')} IS NULL)::int AS open
            FROM ${tableOf('quarantined_notifications')}
           WHERE ${quarantined('received_at')} < ${cutoff}::timestamptz AND ${quarantined('body')} IS NOT NULL`
      : sql<{ n: number; open: number }>`
          WITH purged (purged_resolved_at) AS (
            UPDATE ${tableOf('quarantined_notifications')} SET ${quarantined('body')} = NULL
             WHERE ${quarantined('received_at')} < ${cutoff}::timestamptz AND ${quarantined('body')} IS NOT NULL
            RETURNING ${quarantined('resolved_at')})
          SELECT count(*)::int AS n, count(*) FILTER (WHERE purged_resolved_at IS NULL)::int AS open FROM purged`,
  );
  return { n: row?.n ?? 0, open: row?.open ?? 0 };
}

/**
 * Whether today's and tomorrow's days of history (UTC) have their partitions: -1 today's is missing, 0 tomorrow's,
 * 1 both are there. Six names looked up in the catalog, where the gauge's reading of every partition's bounds takes
 * tens of milliseconds with a year of them: what the console's status board asks at each reload.
 */
export async function historyDaysReady(db: Kysely<Database>, nowMs: number): Promise<-1 | 0 | 1> {
  const today = dayOf(nowMs);
  const names = (day: Day) => HISTORY_TABLES.map((table) => partitionName(table, day));
  const { rows } = await sql<{ part: string; found: boolean }>`
    SELECT part, to_regclass(quote_ident(part)) IS NOT NULL AS found
      FROM unnest(${[...names(today), ...names(addDays(today, 1))]}::text[]) AS part`.execute(db);
  const missing = new Set(rows.filter((r) => !r.found).map((r) => r.part));
  if (names(today).some((name) => missing.has(name))) return -1;
  return names(addDays(today, 1)).some((name) => missing.has(name)) ? 0 : 1;
}
