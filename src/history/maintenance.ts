import { sql, type Kysely } from 'kysely';
import pg from 'pg';
import type { Database } from '../database/schema';
import { runOn, statement, type Query } from '../database/transaction';
import {
  BODY_TABLES,
  daysAhead,
  daysPast,
  daysToMake,
  HISTORY_TABLES,
  parsePartitionName,
  partitionName,
  type Day,
  type PartitionBounds,
  type HistoryTable,
} from './days';

/**
 * What keeps history by the day (days.ts): making the days ahead, purging the raw bodies of days past the
 * body retention, and removing days past the history retention, each touching only the days it concerns. The
 * service's maintainer (maintainer.ts) and `notification-receiver purge` do their work through these, on a
 * session of their own; HISTORY_WORK_LOCK makes sure one runs at a time.
 */

/** Serializes history work across replicas and the command line (the other locks: migrations 7316001, relay 7316002, reconciler 7316003). */
export const HISTORY_WORK_LOCK = 7_316_005;

/** Longest the DDL of a day waits for a table lock: past it, the day is left for the next round. */
const DDL_LOCK_TIMEOUT = '5s';

/** A session on one connection: history work runs outside transactions (a day is detached concurrently). */
export interface HistorySession {
  run<Row>(query: Query<Row>): Promise<Row[]>;
}

export const sessionOn = (client: pg.ClientBase): HistorySession => ({
  run: (query) => runOn(client, statement(query)),
});

/** A session on one connection Kysely lends (`db.connection().execute(...)`: the command line's). */
export const sessionOnKysely = (connection: Kysely<Database>): HistorySession => ({
  run: async <Row>(query: Query<Row>): Promise<Row[]> => [
    ...(await connection.executeQuery<Row>(statement(query))).rows,
  ],
});

/** Runs work holding the history work lock (waiting for it), and always lets it go. */
export async function withWorkLock<T>(session: HistorySession, work: () => Promise<T>): Promise<T> {
  await session.run(sql`SELECT pg_advisory_lock(${HISTORY_WORK_LOCK}::bigint)`);
  try {
    return await work();
  } finally {
    await session.run(sql`SELECT pg_advisory_unlock(${HISTORY_WORK_LOCK}::bigint)`).catch(() => undefined);
  }
}

interface PartitionRow {
  name: string;
  parent: string;
  pending: boolean;
  /** The planner's estimate of its rows (-1 or 0 before it was analyzed). */
  rows: number;
}

/** The partitions of the history tables, by table; detaches left half-done are finished first. */
export async function historyPartitions(
  session: HistorySession,
): Promise<Map<HistoryTable, Array<{ day: Day; rows: number }>>> {
  const rows = await session.run(
    sql<PartitionRow>`
      SELECT c.relname AS name, p.relname AS parent, i.inhdetachpending AS pending, c.reltuples::float8 AS rows
        FROM pg_inherits i
        JOIN pg_class c ON c.oid = i.inhrelid
        JOIN pg_class p ON p.oid = i.inhparent
       WHERE p.relname = ANY(${[...HISTORY_TABLES]}::text[]) AND c.relkind = 'r'`,
  );
  const days = new Map<HistoryTable, Array<{ day: Day; rows: number }>>(HISTORY_TABLES.map((t) => [t, []]));
  for (const row of rows) {
    const parsed = parsePartitionName(row.name);
    if (!parsed || parsed.table !== row.parent) continue;
    if (row.pending) {
      // A detach that was interrupted: finish it, then drop the table as a completed one would have been.
      await finishRemoval(session, parsed.table, parsed.day, 'FINALIZE');
      continue;
    }
    days.get(parsed.table)?.push({ day: parsed.day, rows: Math.max(0, Number(row.rows)) });
  }
  for (const list of days.values()) list.sort((a, b) => a.day.localeCompare(b.day));
  return days;
}

/** Makes the partitions from yesterday to DAYS_AHEAD days ahead that do not exist yet; answers how many it made. */
export async function makeDays(session: HistorySession, nowMs: number): Promise<number> {
  const { first, last } = daysToMake(nowMs);
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

/**
 * Makes the days (as makeDays) on a short connection of its own, whatever else this process holds: the way a
 * write that found its day missing, and `migrate`, get the days made. Partition makers take turns in
 * history_partitions_ensure itself (sql/008), so this needs neither the maintainer's lock nor the work lock.
 */
export async function makeDaysOn(databaseUrl: string, nowMs: number): Promise<number> {
  const client = new pg.Client({
    connectionString: databaseUrl,
    application_name: 'payment-notification-receiver:history',
    connectionTimeoutMillis: 5000,
  });
  client.on('error', () => undefined); // a lost connection fails the statement, which the caller hears of
  await client.connect();
  try {
    return await makeDays(sessionOn(client), nowMs);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** A range partition's bounds as Postgres prints them (pg_get_expr): the two times it takes rows from and to. */
const RANGE_BOUNDS = "^FOR VALUES FROM \\('([^']+)'\\) TO \\('([^']+)'\\)$";

/** The bounds of every attached partition of the history tables: the ranges writes are routed by. */
export async function partitionBounds(session: HistorySession): Promise<PartitionBounds[]> {
  return session.run(
    sql<PartitionBounds>`
      SELECT p.relname AS "table",
             extract(epoch FROM b[1]::timestamptz)::float8 * 1000 AS "fromMs",
             extract(epoch FROM b[2]::timestamptz)::float8 * 1000 AS "toMs"
        FROM pg_inherits i
        JOIN pg_class c ON c.oid = i.inhrelid
        JOIN pg_class p ON p.oid = i.inhparent
        CROSS JOIN LATERAL regexp_match(pg_get_expr(c.relpartbound, c.oid), ${RANGE_BOUNDS}) AS b
       WHERE p.relname = ANY(${[...HISTORY_TABLES]}::text[]) AND NOT i.inhdetachpending AND b IS NOT NULL`,
  );
}

/** Days ahead (days.ts), measured from the partitions' bounds now: what the gauge reports at each scrape. */
export async function measureDaysAhead(db: Kysely<Database>): Promise<number> {
  return daysAhead(await partitionBounds(sessionOnKysely(db)), Date.now());
}

async function finishRemoval(
  session: HistorySession,
  table: HistoryTable,
  day: Day,
  how: 'CONCURRENTLY' | 'FINALIZE',
): Promise<void> {
  const partition = partitionName(table, day);
  await session.run(sql`ALTER TABLE ${sql.table(table)} DETACH PARTITION ${sql.table(partition)} ${sql.raw(how)}`);
  await session.run(sql`DROP TABLE ${sql.table(partition)}`);
}

export interface RemovedHistory {
  /** The days removed (or, in a dry run, that would be). */
  days: Day[];
  /** Rows they held, by table: the planner's estimates, not a count. */
  rows: Record<HistoryTable, number>;
  /** Counters of repeats and quarantined notifications older than the retention, deleted. */
  repeatCounters: number;
  quarantined: number;
}

/**
 * Removes the days wholly older than `retentionMs`: each day's partitions are detached concurrently (writes and
 * reads of the other days go on) and dropped. What refers to removed history goes too: counters of repeats
 * last seen before the retention, quarantined notifications received before it, and the purge registry's days.
 * Projections stay.
 */
export async function removeDaysPast(
  session: HistorySession,
  retentionMs: number,
  nowMs: number,
  { dryRun = false }: { dryRun?: boolean } = {},
): Promise<RemovedHistory> {
  const partitions = await historyPartitions(session);
  const allDays = new Set([...partitions.values()].flatMap((list) => list.map((p) => p.day)));
  const days = daysPast(allDays, nowMs, retentionMs);
  const rows = Object.fromEntries(
    HISTORY_TABLES.map((t) => [
      t,
      (partitions.get(t) ?? []).filter((p) => days.includes(p.day)).reduce((sum, p) => sum + p.rows, 0),
    ]),
  ) as Record<HistoryTable, number>;
  const horizon = new Date(nowMs - retentionMs).toISOString();
  if (dryRun) {
    const [counts] = await session.run(
      sql<{ repeats: number; quarantined: number }>`
        SELECT (SELECT count(*)::int FROM delivery_repeats WHERE last_at < ${horizon}::timestamptz) AS repeats,
               (SELECT count(*)::int FROM quarantined_notifications WHERE received_at < ${horizon}::timestamptz) AS quarantined`,
    );
    return { days, rows, repeatCounters: counts?.repeats ?? 0, quarantined: counts?.quarantined ?? 0 };
  }
  // The tables that refer to the others go first: a day is never left half referred to.
  const order = [...HISTORY_TABLES].reverse();
  for (const day of days) {
    for (const table of order) {
      if ((partitions.get(table) ?? []).some((p) => p.day === day))
        await finishRemoval(session, table, day, 'CONCURRENTLY');
    }
  }
  const [deleted] = await session.run(
    sql<{ repeats: number; quarantined: number }>`
      WITH repeats AS (DELETE FROM delivery_repeats WHERE last_at < ${horizon}::timestamptz RETURNING 1),
           quarantined AS (DELETE FROM quarantined_notifications WHERE received_at < ${horizon}::timestamptz RETURNING 1),
           registry AS (DELETE FROM history_bodies_purged WHERE day <= ${days.at(-1) ?? '-infinity'}::date)
      SELECT (SELECT count(*)::int FROM repeats) AS repeats, (SELECT count(*)::int FROM quarantined) AS quarantined`,
  );
  return { days, rows, repeatCounters: deleted?.repeats ?? 0, quarantined: deleted?.quarantined ?? 0 };
}

export interface PurgedBodies {
  /** The days whose bodies were purged (or, in a dry run, would be). */
  days: Day[];
  /** Bodies set to NULL (or that would be), by table. */
  bodies: Record<(typeof BODY_TABLES)[number] | 'quarantined_notifications', number>;
  /** Open (unresolved) quarantined notifications among them: they can no longer be retried. */
  openQuarantined: number;
}

/**
 * Purges the raw bodies (and with them the buyer's personal data) of the days wholly older than `retentionMs`
 * that were not purged yet, a day at a time, and records each day done: a purge with nothing left to purge
 * reads no history at all. Quarantined bodies (a table of their own, rarely written) go by their receive time.
 * Everything else stays: the notifications' parsed fields, statuses, digests and outcomes, the deliveries.
 */
export async function purgeBodiesPast(
  session: HistorySession,
  retentionMs: number,
  nowMs: number,
  { dryRun = false }: { dryRun?: boolean } = {},
): Promise<PurgedBodies> {
  const partitions = await historyPartitions(session);
  const done = new Set(
    (await session.run(sql<{ day: string }>`SELECT day::text AS day FROM history_bodies_purged`)).map((r) => r.day),
  );
  const days = daysPast(
    (partitions.get('notifications') ?? []).map((p) => p.day),
    nowMs,
    retentionMs,
  ).filter((day) => !done.has(day));
  const cutoff = new Date(nowMs - retentionMs).toISOString();
  const bodies = { notifications: 0, notification_variants: 0, quarantined_notifications: 0 };
  const has = (table: HistoryTable, day: Day) => (partitions.get(table) ?? []).some((p) => p.day === day);
  for (const day of days) {
    for (const table of BODY_TABLES) {
      if (!has(table, day)) continue;
      const partition = sql.table(partitionName(table, day));
      const [row] = await session.run(
        dryRun
          ? sql<{ n: number }>`SELECT count(*)::int AS n FROM ${partition} WHERE body IS NOT NULL`
          : sql<{ n: number }>`WITH purged AS (UPDATE ${partition} SET body = NULL WHERE body IS NOT NULL RETURNING 1)
                                SELECT count(*)::int AS n FROM purged`,
      );
      bodies[table] += row?.n ?? 0;
    }
    if (!dryRun)
      await session.run(sql`INSERT INTO history_bodies_purged (day) VALUES (${day}::date) ON CONFLICT DO NOTHING`);
  }
  const [quarantined] = await session.run(
    dryRun
      ? sql<{ n: number; open: number }>`
          SELECT count(*)::int AS n, count(*) FILTER (WHERE resolved_at IS NULL)::int AS open
            FROM quarantined_notifications WHERE received_at < ${cutoff}::timestamptz AND body IS NOT NULL`
      : sql<{ n: number; open: number }>`
          WITH purged AS (UPDATE quarantined_notifications SET body = NULL
                           WHERE received_at < ${cutoff}::timestamptz AND body IS NOT NULL RETURNING resolved_at)
          SELECT count(*)::int AS n, count(*) FILTER (WHERE resolved_at IS NULL)::int AS open FROM purged`,
  );
  bodies.quarantined_notifications = quarantined?.n ?? 0;
  return { days, bodies, openQuarantined: quarantined?.open ?? 0 };
}
