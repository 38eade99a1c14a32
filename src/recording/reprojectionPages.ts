import type { Db } from '../database/pool';
import { comparePage, rebuildPage, type ProjectionDifference, type Rebuilt } from './reprojection';
import { deleteProjection, nextOrderPage, readReprojectPage, repairOrder, repairRefund } from './reprojectionQueries';

/**
 * `reproject` streams by order: a keyset page of orders at a time, whose history is read, folded (reprojection.ts)
 * and compared, and, with --apply, repaired, before the next page is read; so its memory is a page's, whatever
 * the history's length.
 */

/** How far it is: counts the notifications of each page folded. */
export interface PageProgress {
  increment(step?: number): void;
}

/** A stored notification whose parsed column is not a notification: nothing was compared or changed. */
export class UnreadableHistory extends Error {}

/** Orders a page holds: a year of history is about 3.5 notifications an order. */
const PAGE_ORDERS = 2000;

export interface ReprojectResult {
  notifications: number;
  stored: { orders: number; refunds: number };
  rebuilt: { orders: number; refunds: number };
  /** Projections left as they are: history retention removed part of what they were built from. */
  partialHistory: { orders: number; refunds: number };
  differences: ProjectionDifference[];
}

/** Makes a page's stored projections equal the rebuilt ones, touching only the rows that differ. */
async function repair(db: Db, differences: ProjectionDifference[], rebuilt: Rebuilt): Promise<void> {
  for (const d of differences) {
    if (d.change === 'extra') await deleteProjection(db, d.table, d.id);
    // A missing projection gets the statuses it was rebuilt from, for dedup; a stored one keeps its own.
    else if (d.table === 'orders') {
      const stored = rebuilt.orders.get(d.id);
      if (stored) await repairOrder(db, stored);
    } else {
      const stored = rebuilt.refunds.get(d.id);
      if (stored) await repairRefund(db, stored);
    }
  }
}

/** Every page in turn: rebuilt, compared and, when `apply`, repaired. */
export async function reprojectAll(db: Db, progress: PageProgress, apply: boolean): Promise<ReprojectResult> {
  const result: ReprojectResult = {
    notifications: 0,
    stored: { orders: 0, refunds: 0 },
    rebuilt: { orders: 0, refunds: 0 },
    partialHistory: { orders: 0, refunds: 0 },
    differences: [],
  };
  const unreadable: string[] = [];
  let after = '';
  for (;;) {
    const ids = await nextOrderPage(db, after, PAGE_ORDERS);
    const through = ids.length < PAGE_ORDERS ? null : (ids[ids.length - 1] as string);
    const { history, owners, stored } = await readReprojectPage(db, { after, through });
    const rebuilt = rebuildPage(history, owners);
    const { differences, partial } = comparePage(stored, rebuilt);
    result.notifications += history.length;
    result.stored.orders += stored.orders.size;
    result.stored.refunds += stored.refunds.size;
    result.rebuilt.orders += rebuilt.orders.size;
    result.rebuilt.refunds += rebuilt.refunds.size;
    result.partialHistory.orders += partial.orders;
    result.partialHistory.refunds += partial.refunds;
    result.differences.push(...differences);
    unreadable.push(...rebuilt.unreadable);
    if (apply && unreadable.length === 0) await repair(db, differences, rebuilt);
    progress.increment(history.length);
    if (through === null) break;
    after = through;
  }
  if (unreadable.length > 0) {
    throw new UnreadableHistory(
      `${unreadable.length} stored notification(s) have a parsed column that is not a notification ` +
        `(ids ${unreadable.slice(0, 10).join(', ')}${unreadable.length > 10 ? ', ...' : ''}); nothing was compared or changed`,
    );
  }
  result.differences.sort((a, b) => a.table.localeCompare(b.table) || a.id.localeCompare(b.id));
  return result;
}
