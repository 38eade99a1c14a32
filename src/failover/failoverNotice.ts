import type { BeatRow, DatabaseIdentity, NoticedFailover } from './failoverQueries';

/**
 * Whether a beat shows a failover (pure): what a replica's watch remembers, against what the database answered.
 *
 * - The identity changed: another server (its system identifier) or another timeline (a standby promoted, a
 *   restore to a point in time). At start, the identity the database itself keeps in database_watch stands for
 *   what the replica would remember, so a failover while no replica ran is noticed by the first that starts.
 * - The beat went back: the database no longer holds a beat this replica saw it acknowledge, so it lost writes.
 *   This needs no privilege at all, where a managed database refuses the identity's functions; it misses a loss
 *   shorter than the time between two beats.
 *
 * A restart (nothing remembered, the stored identity the same) and a reconnect to the same database (the identity
 * the same, the beat further on) are not failovers.
 */

/** What a replica's watch remembers between beats. */
export interface WatchMemory {
  identity: DatabaseIdentity | null;
  /** The highest beat this replica has seen the database acknowledge. */
  highestBeat: number;
}

export const describeIdentity = ({ server, timeline }: DatabaseIdentity): string =>
  `timeline ${timeline} of server ${server}`;

export function noticeOf(memory: WatchMemory | null, row: BeatRow): NoticedFailover | null {
  const known = memory ? memory.identity : row.stored;
  const now = row.identity;
  const lastPoint = row.previousBeatAt;
  if (known && now && (known.server !== now.server || known.timeline !== now.timeline))
    return {
      cause: known.server !== now.server ? 'server' : 'timeline',
      previous: describeIdentity(known),
      current: describeIdentity(now),
      lastPoint,
      identity: now,
    };
  if (memory && row.beat <= memory.highestBeat)
    return {
      cause: 'beat',
      previous: `beat ${memory.highestBeat}`,
      current: `beat ${row.beat}`,
      lastPoint,
      identity: now,
    };
  return null;
}

/** What the watch remembers after a beat. */
export const rememberBeat = (memory: WatchMemory | null, row: BeatRow, noticed: boolean): WatchMemory => ({
  identity: row.identity ?? memory?.identity ?? null,
  highestBeat: noticed || !memory ? row.beat : Math.max(memory.highestBeat, row.beat),
});
