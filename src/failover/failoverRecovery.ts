import { ADVISORY_LOCKS } from '../database/advisoryLocks';
import type { Db } from '../database/pool';
import { SingleActiveJob, type NextStep } from '../jobs/singleActiveWorker';
import type { FailoverMetrics } from '../observability/failoverMetrics';
import type { Logger } from '../observability/logger';
import type { NotificationStore } from '../recording/notificationStore';
import type { SecondKey } from '../verification/secondKeys';
import {
  idsTaken,
  markDone,
  markRestored,
  markWindowScheduled,
  moveNotificationIdsPast,
  openFailover,
  type Failover,
  type RestorationCounts,
} from './failoverQueries';
import type { JournalEntry } from './journalEntries';
import { restoreEntry } from './journalRestoration';
import { readJournalBack, type JournalSettings } from './notificationJournal';

/**
 * The recovery after a failover (docs/decisions/0021): one active across the replicas (a session advisory lock, as
 * the relay's), it takes the oldest failover whose recovery is not done and carries it through, whichever replica
 * noticed it; one that dies midway leaves the rest to the next, from the state the database keeps.
 *
 * 1. **Restoring** (the intake's writes held meanwhile, 30 s at most): the notification ids are moved past any the
 *    old primary gave; the journal is read back to a fence, and every entry recorded since a little before the
 *    promoted database's last point is verified and recorded again (journalRestoration.ts).
 * 2. **Reconciling**: every order the promoted database saw change in FAILOVER_RECONCILE_WINDOW before its last point
 *    (final ones, and those known only through a refund, included) is put to the payment API once, through the
 *    reconciler's schedule (forced checks): what the journal could not hold (the last moments before the failover,
 *    or a broker that was away) comes back that way.
 * 3. **Done**: how many of those orders no check could settle is written and logged (needs attention shows it).
 */

/** Only one recovery runs at a time, across every replica. */
export const FAILOVER_RECOVERY_LOCK = ADVISORY_LOCKS.failoverRecovery;

/** The journal is read from this long before the promoted database's last point: beats are a second apart. */
export const JOURNAL_MARGIN_MS = 10_000;

/**
 * How far the notification ids move past the promoted database's: more than the old primary can have given in
 * the time a standby may lag and the journal keeps (10,000 a second for over two hours).
 */
const ID_GAP = 100_000_000;

/** Orders of the window looked up, and put into the schedule, at most (a larger window is cut, and said). */
const WINDOW_ORDERS_MAX = 100_000;
const FORCE_BATCH = 10_000;

/** The reconciliation of a window, as the recovery asks it of src/reconciliation/ (null: PAYMENT_API_URL unset). */
export interface WindowReconciliation {
  ordersObservedBetween(
    db: Db,
    from: Date,
    to: Date,
    limit: number,
  ): Promise<Array<{ orderId: string; posId: string | null }>>;
  forceChecks(db: Db, orders: ReadonlyArray<{ orderId: string; posId?: string }>, cause: string): Promise<number>;
  forcedCheckProgress(db: Db, cause: string): Promise<{ due: number; answered: number; uncovered: number }>;
}

export interface FailoverRecoveryOptions {
  databaseUrl: string;
  /** The recovery's own small pool, and the recorder on it that restores (never held). */
  db: Db;
  store: NotificationStore;
  /** The journal; null when there is none (JOURNAL_RETENTION=off, or no broker). */
  journal: JournalSettings | null;
  secondKeys: readonly SecondKey[];
  /** FAILOVER_RECONCILE_WINDOW; 0 reconciles nothing. */
  reconcileWindowMs: number;
  reconciliation: WindowReconciliation | null;
  metrics: FailoverMetrics;
  logger: Logger;
  /** How often it looks for a failover to recover (a notice wakes it at once), and how often a standby tries the lock. */
  intervalMs?: number;
}

const causeOf = (failover: Failover): string => `failover:${failover.id}`;

export class FailoverRecovery extends SingleActiveJob {
  constructor(private readonly options: FailoverRecoveryOptions) {
    super({
      lock: { key: FAILOVER_RECOVERY_LOCK, databaseUrl: options.databaseUrl, job: 'failover-recovery' },
      logger: options.logger,
      lines: {
        active: 'failover recovery is active',
        standby: 'failover recovery is standing by',
        failed: 'failover recovery failed; trying again',
      },
      activeGauge: { set: () => undefined },
      standbyMs: options.intervalMs ?? 1000,
      // Short: after a failover its connection is gone, and the writes are held until it restores.
      backoff: { firstMs: 250, maxMs: 2000, jitter: 'none' },
    });
  }

  protected async step(): Promise<NextStep> {
    const failover = await openFailover(this.options.db);
    if (!failover) return { waitMs: this.options.intervalMs ?? 1000, wakeable: true };
    if (failover.state === 'restoring') {
      await this.restore(failover);
      return { waitMs: 0, wakeable: false };
    }
    const done = await this.reconcileWindow(failover);
    return { waitMs: done ? 0 : 2000, wakeable: false };
  }

  /** Step 1: the journal read back and recorded again; the writes go on once it is written down. */
  private async restore(failover: Failover): Promise<void> {
    const { db, store, journal, secondKeys, metrics, logger } = this.options;
    const from = new Date(failover.lastPoint.getTime() - JOURNAL_MARGIN_MS);
    const counts: RestorationCounts = {
      journalRead: 0,
      restored: 0,
      alreadyRecorded: 0,
      setAside: 0,
      journalProblem: null,
    };
    const keepPlaces = await moveNotificationIdsPast(db, ID_GAP);
    if (!keepPlaces)
      logger.warn(
        'the database role may not move the notification_ids sequence (setval): restored statuses take new ids, and ' +
          'their events new event ids',
      );
    const restore = async (entries: JournalEntry[], unreadable: number): Promise<void> => {
      counts.setAside += unreadable;
      metrics.restorations.inc({ outcome: 'set_aside' }, unreadable);
      // Oldest first, as they were recorded; entries from well before the last point were never lost.
      const wanted = entries
        .filter((entry) => Date.parse(entry.at) >= from.getTime())
        .sort((a, b) => Date.parse(a.at) - Date.parse(b.at));
      counts.journalRead += entries.length;
      const taken = keepPlaces
        ? await idsTaken(
            db,
            wanted.flatMap((e) => (e.id === null ? [] : [e.id])),
            from,
          )
        : new Set<string>();
      // One lane: the recorder takes them in this order.
      const results = await Promise.all(
        wanted.map((entry) =>
          restoreEntry(store, entry, secondKeys, keepPlaces && (entry.id === null || !taken.has(entry.id))),
        ),
      );
      for (const result of results) {
        metrics.restorations.inc({ outcome: result.outcome });
        if (result.outcome === 'restored') counts.restored += 1;
        else if (result.outcome === 'already_recorded') counts.alreadyRecorded += 1;
        else if (result.outcome === 'set_aside') {
          counts.setAside += 1;
          logger.warn({ failoverId: failover.id, why: result.why }, 'a journal entry failed verification: set aside');
        }
      }
    };
    if (!journal) counts.journalProblem = 'the service keeps no journal (JOURNAL_RETENTION=off, or no broker)';
    else {
      try {
        await readJournalBack(journal, restore, logger);
      } catch (error) {
        counts.journalProblem = error instanceof Error ? error.message : String(error);
      }
    }
    await markRestored(db, failover.id, counts);
    const fields = { failoverId: failover.id, from: from.toISOString(), ...counts };
    if (counts.journalProblem !== null)
      logger.error(fields, 'the journal could not be read back after the failover: only reconciliation repairs it');
    else logger.warn(fields, 'the journal restored what the database lost; writes go on');
  }

  /** Step 2: the window's orders put to the payment API once; true once the recovery is done. */
  private async reconcileWindow(failover: Failover): Promise<boolean> {
    const { db, reconciliation, reconcileWindowMs, logger } = this.options;
    // From the window before the last point to now: an order changed since (by a restoration, or a notification
    // after the switch) has moved out of the window by its last change, and may have lost a status in it too.
    const from = new Date(failover.lastPoint.getTime() - reconcileWindowMs);
    const to = new Date();
    if (failover.windowOrders === null) {
      const orders =
        reconcileWindowMs > 0 && reconciliation
          ? await reconciliation.ordersObservedBetween(db, from, to, WINDOW_ORDERS_MAX)
          : [];
      for (let i = 0; i < orders.length && reconciliation; i += FORCE_BATCH)
        await reconciliation.forceChecks(
          db,
          orders
            .slice(i, i + FORCE_BATCH)
            .map(({ orderId, posId }) => (posId === null ? { orderId } : { orderId, posId })),
          causeOf(failover),
        );
      await markWindowScheduled(db, failover.id, orders.length);
      logger.warn(
        {
          failoverId: failover.id,
          from: from.toISOString(),
          to: to.toISOString(),
          orders: orders.length,
          ...(orders.length >= WINDOW_ORDERS_MAX ? { cut: `at ${WINDOW_ORDERS_MAX} orders` } : {}),
        },
        reconciliation
          ? 'the orders of the window before the failover are put to the payment API'
          : 'reconciliation is off (PAYMENT_API_URL unset): the window before the failover is not checked',
      );
      return false;
    }
    const progress = reconciliation
      ? await reconciliation.forcedCheckProgress(db, causeOf(failover))
      : { due: 0, answered: 0, uncovered: failover.windowOrders };
    if (progress.due > 0) return false;
    await markDone(db, failover.id, progress.uncovered);
    const fields = {
      failoverId: failover.id,
      restored: failover.restored,
      windowOrders: failover.windowOrders,
      answered: progress.answered,
      uncovered: progress.uncovered,
    };
    if (progress.uncovered > 0 || failover.journalProblem !== null)
      logger.error(fields, 'failover recovery done: some statuses could not be covered (needs attention lists them)');
    else logger.info(fields, 'failover recovery done');
    return true;
  }
}
