import pg from 'pg';
import type { Db } from '../database/pool';
import {
  addDays,
  BODY_TABLES,
  daysAhead,
  daysPast,
  daysToMake,
  HISTORY_TABLES,
  missingDays,
  parsePartitionName,
  partitionName,
  type Day,
  type HistoryTable,
} from './partitionDays';
import {
  countReferencesPast,
  deleteReferencesPast,
  ensurePartitions,
  listPartitions,
  lockHistoryWork,
  partitionBounds,
  purgeDayBodies,
  purgedDays,
  purgeQuarantinedBodies,
  recordDayPurged,
  removePartition,
  unlockHistoryWork,
} from './partitionQueries';
import { sessionOn, sessionOnKysely, type ConnectionSession } from '../database/transaction';

/**
 * What keeps history by the day (partitionDays.ts): making the days ahead, purging the raw bodies of days past the
 * body retention, and removing days past the history retention, each touching only the days it concerns. The
 * service's maintainer (partitionMaintainer.ts) and `notification-receiver purge` do their work through these, on a
 * session of their own; HISTORY_WORK_LOCK makes sure one runs at a time.
 */

/** Runs work holding the history work lock (waiting for it), and always lets it go. */
export async function withWorkLock<T>(session: ConnectionSession, work: () => Promise<T>): Promise<T> {
  await lockHistoryWork(session);
  try {
    return await work();
  } finally {
    await unlockHistoryWork(session).catch(() => undefined);
  }
}

/** The partitions of the history tables, by table; detaches left half-done are finished first. */
export async function historyPartitions(
  session: ConnectionSession,
): Promise<Map<HistoryTable, Array<{ day: Day; rows: number }>>> {
  const rows = await listPartitions(session);
  const days = new Map<HistoryTable, Array<{ day: Day; rows: number }>>(HISTORY_TABLES.map((t) => [t, []]));
  for (const row of rows) {
    const parsed = parsePartitionName(row.name);
    if (!parsed || parsed.table !== row.parent) continue;
    if (row.pending) {
      // A detach that was interrupted: finish it, then drop the table as a completed one would have been.
      await removePartition(session, parsed.table, parsed.day, 'FINALIZE');
      continue;
    }
    days.get(parsed.table)?.push({ day: parsed.day, rows: Math.max(0, Number(row.rows)) });
  }
  for (const list of days.values()) list.sort((a, b) => a.day.localeCompare(b.day));
  return days;
}

/** Makes the partitions from yesterday to DAYS_AHEAD days ahead that do not exist yet; answers how many it made. */
export async function makeDays(session: ConnectionSession, nowMs: number): Promise<number> {
  const { first, last } = daysToMake(nowMs);
  return ensurePartitions(session, first, last);
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

/** The days from yesterday to DAYS_AHEAD that some history table has no partition for (days.ts missingDays). */
export async function findMissingDays(session: ConnectionSession, nowMs: number): Promise<Day[]> {
  const { first, last } = daysToMake(nowMs);
  const names: string[] = [];
  for (let day = first; day <= last; day = addDays(day, 1))
    for (const table of HISTORY_TABLES) names.push(partitionName(table, day));
  return missingDays(await partitionBounds(session, names), nowMs);
}

/** Days ahead (partitionDays.ts), measured from the partitions' bounds now: what the gauge reports at each scrape. */
export async function measureDaysAhead(db: Db): Promise<number> {
  return daysAhead(await partitionBounds(sessionOnKysely(db)), Date.now());
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
  session: ConnectionSession,
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
    const counts = await countReferencesPast(session, horizon);
    return { days, rows, repeatCounters: counts.repeats, quarantined: counts.quarantined };
  }
  // The tables that refer to the others go first: a day is never left half referred to.
  const order = [...HISTORY_TABLES].reverse();
  for (const day of days) {
    for (const table of order) {
      if ((partitions.get(table) ?? []).some((p) => p.day === day))
        await removePartition(session, table, day, 'CONCURRENTLY');
    }
  }
  const deleted = await deleteReferencesPast(session, horizon, days.at(-1));
  return { days, rows, repeatCounters: deleted.repeats, quarantined: deleted.quarantined };
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
  session: ConnectionSession,
  retentionMs: number,
  nowMs: number,
  { dryRun = false }: { dryRun?: boolean } = {},
): Promise<PurgedBodies> {
  const partitions = await historyPartitions(session);
  const done = await purgedDays(session);
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
      if (has(table, day)) bodies[table] += await purgeDayBodies(session, table, day, { dryRun });
    }
    if (!dryRun) await recordDayPurged(session, day);
  }
  const quarantined = await purgeQuarantinedBodies(session, cutoff, { dryRun });
  bodies.quarantined_notifications = quarantined.n;
  return { days, bodies, openQuarantined: quarantined.open };
}
