import type { Db } from '../database/pool';
import { rebuildOrderEvents, type StreamEntry } from './eventRebuild';
import type { RecordingContext } from './projectionFold';
import { derivedFrom, ordersRecordedIn, readOrdersHistory, restoreEvents } from './eventRebuildQueries';

/**
 * The events of the notifications received in a time range, rebuilt from history with their ids
 * (eventRebuild.ts) and, unless a dry run, put back in the outbox as published (`events rebuild`). A page of
 * orders at a time, each order's whole history folded.
 */

/** Orders a page reads the history of. */
const PAGE_ORDERS = 500;

/** How far it is: counts the orders of each page done. */
export interface PageProgress {
  increment(step?: number): void;
  stop(): void;
}

export interface RebuildRange {
  since: Date;
  until: Date;
  dryRun: boolean;
  /** What the events are built with, as the recorder's are. */
  recording: RecordingContext;
}

export interface RebuildReport {
  dryRun: boolean;
  since: string;
  until: string;
  orders: number;
  /** Events rebuilt; of them, those put back (the others were still in the outbox). */
  rebuilt: number;
  restored: number;
  /** Orders not rebuilt: part of their history is gone (HISTORY_RETENTION). */
  incomplete: string[];
  /** Orders whose stored notifications cannot be read. */
  unreadable: string[];
  /** Notifications whose event was written before ids were derived and deleted before then: its id is lost. */
  lostIds: string[];
}

export async function rebuildEventsInRange(
  db: Db,
  { since, until, dryRun, recording }: RebuildRange,
  startProgress: (total: number) => PageProgress,
): Promise<RebuildReport> {
  const inRange = (entry: StreamEntry): boolean => {
    const at = Date.parse(entry.at);
    return at >= since.getTime() && at < until.getTime();
  };
  const orderIds = await ordersRecordedIn(db, since, until);
  const firstDerived = await derivedFrom(db);
  const result: RebuildReport = {
    dryRun,
    since: since.toISOString(),
    until: until.toISOString(),
    orders: orderIds.length,
    rebuilt: 0,
    restored: 0,
    incomplete: [],
    unreadable: [],
    lostIds: [],
  };
  const progress = startProgress(orderIds.length);
  try {
    for (let start = 0; start < orderIds.length; start += PAGE_ORDERS) {
      const page = orderIds.slice(start, start + PAGE_ORDERS);
      const history = await readOrdersHistory(db, page);
      for (const orderId of page) {
        const rebuilt = rebuildOrderEvents(history.streams.get(orderId) ?? [], {
          ...recording,
          ownerPosId: history.owners.get(orderId) ?? null,
          lastSequence: history.lastSequences.get(orderId) ?? 0,
          legacy: history.legacy,
          derivedFrom: firstDerived,
          kept: history.kept.get(orderId) ?? new Set(),
          wanted: inRange,
        });
        if (rebuilt.outcome === 'incomplete') result.incomplete.push(orderId);
        else if (rebuilt.outcome === 'unreadable') result.unreadable.push(orderId);
        else {
          result.rebuilt += rebuilt.events.length;
          result.lostIds.push(...rebuilt.lost);
          if (!dryRun) result.restored += await restoreEvents(db, orderId, rebuilt.events);
        }
      }
      progress.increment(page.length);
    }
  } finally {
    progress.stop();
  }
  return result;
}
