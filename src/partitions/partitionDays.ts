/**
 * History by the day (sql/007): every day (UTC) has one partition of each history table, named
 * <table>_pYYYYMMDD. Which days to make, to purge of their bodies and to remove, from the clock and the
 * retentions. Pure.
 */

/** The tables partitioned by day, in the order their days are made and removed. */
export const HISTORY_TABLES = ['notifications', 'notification_variants', 'deliveries'] as const;
export type HistoryTable = (typeof HISTORY_TABLES)[number];

/** The tables whose rows keep a raw body until the body retention. */
export const BODY_TABLES = ['notifications', 'notification_variants'] as const;

/** How many days ahead of today partitions are kept made: a maintainer that stops has this long to come back. */
export const DAYS_AHEAD = 7;

/** The shortest history retention: the sender retries a notification for 72 hours. */
export const MIN_HISTORY_RETENTION_MS = 72 * 3_600_000;

export const DAY_MS = 86_400_000;

/** A day as `YYYY-MM-DD` (UTC). */
export type Day = string;

export const dayOf = (ms: number): Day => new Date(Math.floor(ms / DAY_MS) * DAY_MS).toISOString().slice(0, 10);

export const addDays = (day: Day, days: number): Day => dayOf(Date.parse(`${day}T00:00:00Z`) + days * DAY_MS);

/** When a day ends (the next day's first instant), in ms. */
const endOf = (day: Day): number => Date.parse(`${day}T00:00:00Z`) + DAY_MS;

export const partitionName = (table: HistoryTable, day: Day): string => `${table}_p${day.replaceAll('-', '')}`;

/** The table and day of a partition's name, or null for any other name. */
export function parsePartitionName(name: string): { table: HistoryTable; day: Day } | null {
  const match = /^(.+)_p(\d{4})(\d{2})(\d{2})$/.exec(name);
  const table = HISTORY_TABLES.find((t) => t === match?.[1]);
  if (!match || !table) return null;
  const day = `${match[2]}-${match[3]}-${match[4]}`;
  return Number.isNaN(Date.parse(`${day}T00:00:00Z`)) || dayOf(Date.parse(`${day}T00:00:00Z`)) !== day
    ? null
    : { table, day };
}

/**
 * The days wholly older than `retentionMs` at `nowMs`: every row in them is older. Rows are kept at least the
 * retention and at most a day more.
 */
export const daysPast = (days: Iterable<Day>, nowMs: number, retentionMs: number): Day[] =>
  [...days].filter((day) => endOf(day) <= nowMs - retentionMs).sort();

/** The days from yesterday to DAYS_AHEAD after today: what must exist for writes to go on. */
export const daysToMake = (nowMs: number): { first: Day; last: Day } => ({
  first: addDays(dayOf(nowMs), -1),
  last: addDays(dayOf(nowMs), DAYS_AHEAD),
});

/** A partition of a history table and the range of times it takes (its bounds, in ms). */
export interface PartitionBounds {
  table: HistoryTable;
  fromMs: number;
  toMs: number;
}

/**
 * Whole days after today that every history table takes writes for, without a gap from now on: 0 when today's
 * partitions are the last, -1 when a table has none for now (its writes fail). From the partitions' bounds, so
 * a day removed by hand shows at once.
 */
export function daysAhead(partitions: readonly PartitionBounds[], nowMs: number): number {
  const todayStart = Math.floor(nowMs / DAY_MS) * DAY_MS;
  const coveredUntil = HISTORY_TABLES.map((table) => {
    let until = nowMs;
    for (const p of partitions.filter((q) => q.table === table).sort((a, b) => a.fromMs - b.fromMs))
      if (p.fromMs <= until && p.toMs > until) until = p.toMs;
    return until;
  });
  const until = Math.min(...coveredUntil);
  return until <= nowMs ? -1 : Math.floor((until - todayStart) / DAY_MS) - 1;
}

/**
 * The days from yesterday to DAYS_AHEAD after today for which some history table has no partition: each one
 * a day whose writes would fail (today's at once). Empty when all are there.
 */
export function missingDays(partitions: readonly PartitionBounds[], nowMs: number): Day[] {
  const { first, last } = daysToMake(nowMs);
  const missing: Day[] = [];
  for (let day = first; day <= last; day = addDays(day, 1)) {
    const start = Date.parse(`${day}T00:00:00Z`);
    const covered = HISTORY_TABLES.every((table) =>
      partitions.some((p) => p.table === table && p.fromMs <= start && p.toMs >= start + DAY_MS),
    );
    if (!covered) missing.push(day);
  }
  return missing;
}
