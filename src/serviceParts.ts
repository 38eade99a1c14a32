import type http from 'node:http';
import type pg from 'pg';
import type { Config } from './config';
import type { DatabaseServer } from './embeddedPostgres/embeddedPostgres';
import type { Db } from './database/pool';
import type { DatabaseWatch } from './failover/databaseWatch';
import type { FailoverRecovery } from './failover/failoverRecovery';
import type { NotificationJournal } from './failover/notificationJournal';
import { close } from './http/server';
import type { PartitionMaintainer } from './partitions/partitionMaintainer';
import type { Logger } from './observability/logger';
import type { Metrics } from './observability/metrics';
import type { OutboxRelay } from './outbox/outboxRelay';
import type { Recorder } from './recording/recorder';
import type { Reconciliation } from './reconciliation/reconciliation';
import type { Reconciler } from './reconciliation/reconciler';

/** The parts service.ts builds, and the one way they stop. */

/** Every part of a running service, built but not started. */
export interface Parts {
  config: Config;
  logger: Logger;
  database: DatabaseServer;
  /** The intake's pool (the recorder, readiness). */
  pool: pg.Pool;
  db: Db;
  /** The admin data routes' own pool: reading projections never takes a connection the recorder needs. */
  adminDb: Db;
  metrics: Metrics;
  /** The intake's recorder. */
  recorder: Recorder;
  /** The journal of recorded notifications; null without one (JOURNAL_RETENTION=off, or no broker). */
  journal: NotificationJournal | null;
  /** Every replica's watch of the database: a failover is noticed, and writes held while it is restored. */
  watch: DatabaseWatch;
  /** The failover recovery (one active across replicas), and its own pool. */
  recovery: FailoverRecovery;
  recoveryDb: Db;
  relay: OutboxRelay | null;
  reconciliation: { reconciliation: Reconciliation; db: Db } | null;
  reconciler: Reconciler | null;
  historyMaintainer: PartitionMaintainer;
  publicServer: http.Server;
  adminServer: http.Server;
  /** Readiness (/readyz): off once stopping. */
  readiness: { accepting: boolean };
}

/**
 * How long before the stop cuts the public connections the recorder refuses what it still holds: time for
 * those 503 answers to be written, so no request in flight is left without one.
 */
const ANSWER_BEFORE_CUT_MS = 250;

/**
 * The longest a stop gives the journal to have the drained requests' entries confirmed and to close (a broker
 * confirms in milliseconds; a silent one never does, and the exit must stay within SHUTDOWN_TIMEOUT and a second
 * or two).
 */
const JOURNAL_STOP_MS = 1000;

/** Whether work settles within ms (it goes on regardless; the caller just stops waiting). */
function finishesWithin(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  return Promise.race([
    work.then(
      () => true,
      () => true,
    ),
    timeout,
  ]).finally(() => clearTimeout(timer));
}

/**
 * The one way the service stops, after a failed start as on SIGTERM; once, however often it is called.
 *
 * Every step is bounded, so a dead database or broker cannot hold the exit past SHUTDOWN_TIMEOUT plus a
 * second or two. What a cut-short step leaves is safe: an unconfirmed event is published again at the next
 * start (same id), and a transaction that did not commit was not answered 200. A notification's own answer
 * time (DATABASE_TIMEOUT plus a second) can outlast what is left of SHUTDOWN_TIMEOUT, so one still waiting
 * for the database when the public connections are about to be cut is answered 503 first: its sender
 * retries. The relay finishes its batch while the requests drain rather than after: a request that never
 * completes cannot starve it, and another replica takes the lock sooner. Events the drained requests commit
 * wait in the outbox for the next relay to hold the lock.
 */
export function stopper(parts: Parts): () => Promise<void> {
  const { config, logger } = parts;
  let stopping: Promise<void> | null = null;
  return () => {
    stopping ??= (async () => {
      const deadline = Date.now() + config.shutdownTimeoutMs;
      const left = (): number => Math.max(0, deadline - Date.now());
      parts.readiness.accepting = false;
      logger.info('stopping: readiness off, draining requests');
      const relayStopped = parts.relay ? finishesWithin(parts.relay.stop(), Math.max(left(), 1000)) : true;
      const reconcilerStopped = parts.reconciler
        ? finishesWithin(parts.reconciler.stop(), Math.max(left(), 1000))
        : true;
      const maintainerStopped = finishesWithin(parts.historyMaintainer.stop(), Math.max(left(), 1000));
      const recoveryStopped = finishesWithin(parts.recovery.stop(), Math.max(left(), 1000));
      // The watch's beat may be waiting on a database that went silent (up to DATABASE_TIMEOUT): it stops beside
      // the drain, not after it, so the exit does not wait for that beat.
      const watchStopped = finishesWithin(parts.watch.stop(), Math.max(left(), 1000));
      const cutInMs = left();
      const refuseHeld = setTimeout(() => parts.recorder.refuseAll(), Math.max(0, cutInMs - ANSWER_BEFORE_CUT_MS));
      await close(parts.publicServer, cutInMs);
      clearTimeout(refuseHeld);
      if (!(await relayStopped)) logger.warn('relay did not stop in time');
      if (!(await reconcilerStopped)) logger.warn('reconciler did not stop in time');
      if (!(await maintainerStopped)) logger.warn('history maintainer did not stop in time');
      if (!(await recoveryStopped)) logger.warn('failover recovery did not stop in time');
      if (!(await watchStopped)) logger.warn('database watch did not stop in time');
      // What the drained requests committed goes to the journal before its connection closes.
      await parts.journal?.stop(JOURNAL_STOP_MS);
      await close(parts.adminServer, 500);
      const pools = [
        parts.db,
        parts.adminDb,
        parts.recoveryDb,
        ...(parts.reconciliation ? [parts.reconciliation.db] : []),
      ];
      if (!(await finishesWithin(Promise.all(pools.map((db) => db.destroy())), 1000))) {
        logger.warn('database connections did not close in time');
      }
      await parts.database.stop();
      logger.info('stopped');
    })();
    return stopping;
  };
}
