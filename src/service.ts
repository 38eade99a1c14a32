import http from 'node:http';
import type pg from 'pg';
import { createAdminApp } from './admin/adminApp';
import { configurationWarnings, type Config } from './config';
import { close, listen } from './http/server';
import { createPublicListener } from './intake/publicListener';
import { UnverifiedBodies } from './intake/unverifiedBodies';
import { createLogger, type Logger } from './observability/logger';
import { createMetrics, type Metrics } from './observability/metrics';
import { readOutboxBacklog } from './outbox/backlog';
import { OutboxRelay } from './outbox/relay';
import { createDb, createPool, ensureDatabaseExists, type Db } from './database/pool';
import { PooledTransactions } from './database/transaction';
import { migrate } from './database/migrations';
import { GroupCommitStore } from './recording/groupCommit';
import { createReconciliation, type Reconciliation } from './reconciliation/reconciliation';
import type { Reconciler } from './reconciliation/reconciler';

export interface Service {
  publicPort: number;
  adminPort: number;
  db: Db;
  pool: pg.Pool;
  metrics: Metrics;
  relay: OutboxRelay | null;
  /** Checks open orders against the payment API; null without PAYMENT_API_URL. */
  reconciler: Reconciler | null;
  /** Readiness off; in-flight requests finished while the relay stops after its batch; connections closed. */
  stop(): Promise<void>;
}

/** Connections of the admin port's own pool (its data routes are capped by ADMIN_CONCURRENCY). */
const ADMIN_POOL_MAX = 2;

/** Slow senders are cut off rather than holding a connection (and a pool slot) indefinitely. */
const HEADERS_TIMEOUT_MS = 10_000;
const REQUEST_TIMEOUT_MS = 15_000;

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

/** Connections of the reconciliation's own pool (its sweep and its recording transactions). */
const RECONCILIATION_POOL_MAX = 2;

/**
 * Reconciliation against the payment API (issue 24), off without PAYMENT_API_URL: its own small pool, and on
 * it the same recorder the intake uses, so checking never takes a connection a notification needs.
 */
function createServiceReconciliation(
  config: Config,
  metrics: Metrics,
  logger: Logger,
): { reconciliation: Reconciliation; db: Db } | null {
  if (!config.reconciliation) return null;
  const pool = createPool(
    {
      url: config.databaseUrl,
      poolMax: RECONCILIATION_POOL_MAX,
      timeoutMs: config.databaseTimeoutMs,
      applicationName: 'payment-notification-receiver:reconciliation',
      keyLookupsOnly: true,
    },
    logger,
  );
  const store = new GroupCommitStore(
    new PooledTransactions(pool),
    { eventSource: config.eventSource },
    { maxBatchSize: 64, lanes: 1, maxQueued: 1000, maxWaitMs: 30_000, answerWithinMs: 60_000 },
    logger.child({ component: 'reconciliation-recorder' }),
  );
  const db = createDb(pool);
  return { reconciliation: createReconciliation(config.reconciliation, { db, store, metrics, logger }), db };
}

/** Prepares the database: creates it on a fresh server and applies pending migrations. */
export async function prepareDatabase(config: Pick<Config, 'databaseUrl'>, logger: Logger): Promise<void> {
  await ensureDatabaseExists(config.databaseUrl);
  await migrate(config.databaseUrl, logger);
}

/** The composition root: builds every part from the config and owns start and stop. */
export async function startService(config: Config, logger: Logger = createLogger(config.logLevel)): Promise<Service> {
  if (config.migrateOnStart) await prepareDatabase(config, logger);
  for (const warning of configurationWarnings(config)) logger.warn(warning);
  logger.info(
    {
      keys: config.secondKeys.map((k) => ({
        posId: k.posId,
        fingerprint: k.fingerprint,
        minAlgorithm: k.minAlgorithm,
      })),
    },
    'second keys loaded (fingerprints, never the keys)',
  );

  const pool = createPool(
    {
      url: config.databaseUrl,
      poolMax: config.databasePoolMax,
      timeoutMs: config.databaseTimeoutMs,
      keyLookupsOnly: true,
      pipelined: config.databasePipeline,
    },
    logger,
  );
  const db = createDb(pool);
  // The admin port's data routes have a pool of their own: reading projections never takes a
  // connection the recorder needs.
  const adminDb = createDb(
    createPool(
      {
        url: config.databaseUrl,
        poolMax: ADMIN_POOL_MAX,
        timeoutMs: config.databaseTimeoutMs,
        applicationName: 'payment-notification-receiver:admin',
        keyLookupsOnly: true,
      },
      logger,
    ),
  );
  const unverified = new UnverifiedBodies(config.unverifiedBodiesLimitBytes);
  // The recorder's queue is read at scrape time, once the store below exists.
  const metrics = createMetrics({
    outboxBacklog: () => readOutboxBacklog(db),
    recorderQueued: () => store.load.queued,
    unverifiedBodyBytes: () => unverified.heldBytes,
  });

  const relay = config.relayEnabled
    ? new OutboxRelay({
        databaseUrl: config.databaseUrl,
        amqpUrl: config.amqpUrl,
        exchange: config.amqpExchange,
        retentionMs: config.outboxRetentionMs,
        pipelined: config.databasePipeline,
        metrics,
        logger: logger.child({ component: 'relay' }),
      })
    : null;
  relay?.start();

  const reconciling = createServiceReconciliation(config, metrics, logger);
  const reconciler = reconciling?.reconciliation.createReconciler(config.databaseUrl) ?? null;
  reconciler?.start();

  let accepting = true;
  const store = new GroupCommitStore(
    new PooledTransactions(pool),
    { eventSource: config.eventSource },
    {
      maxBatchSize: 64,
      // One lane by default: what arrives while its transaction runs shares the next one. More
      // lanes split the same traffic into more, smaller transactions (docs/PERFORMANCE.md). One
      // connection stays free for readiness and the admin API.
      lanes: Math.min(config.databaseWriteLanes, Math.max(1, config.databasePoolMax - 1)),
      maxQueued: 2000,
      maxWaitMs: config.databaseTimeoutMs,
      answerWithinMs: config.databaseTimeoutMs + 1000,
      onBatchDone: (notifications, busySeconds) => {
        metrics.recorderBatchSize.observe(notifications);
        metrics.recorderBusy.inc(busySeconds);
      },
    },
    logger.child({ component: 'recorder' }),
  );
  const publicListener = createPublicListener({
    config,
    store,
    unverified,
    metrics,
    logger,
    onEventsWritten: () => relay?.wake(),
  });
  const adminApp = createAdminApp({
    probeDb: db,
    data: { db: adminDb, token: config.adminToken, concurrency: config.adminConcurrency },
    reconciliation: reconciling?.reconciliation ?? null,
    metrics,
    logger,
    isAccepting: () => accepting,
  });

  const publicServer = http.createServer(
    {
      headersTimeout: HEADERS_TIMEOUT_MS,
      requestTimeout: REQUEST_TIMEOUT_MS,
      // Node checks those timeouts on this interval (default 30 s, which would double them).
      connectionsCheckingInterval: 1000,
    },
    publicListener,
  );
  const adminServer = http.createServer(adminApp);

  const publicPort = await listen(publicServer, config.port, config.host);
  const adminPort = await listen(adminServer, config.adminPort, config.host);
  logger.info(
    { publicPort, adminPort, relay: config.relayEnabled, reconciler: reconciler !== null },
    'service started',
  );

  let stopping: Promise<void> | null = null;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      // Every step is bounded, so a dead database or broker cannot hold the exit past
      // SHUTDOWN_TIMEOUT plus a second or two. What a cut-short step leaves is safe: an
      // unconfirmed event is published again at the next start (same id), and a transaction
      // that did not commit was not answered 200.
      // The relay finishes its batch while the requests drain rather than after: a request that
      // never completes cannot starve it, and another replica takes the lock sooner. Events the
      // drained requests commit wait in the outbox for the next relay to hold the lock.
      const deadline = Date.now() + config.shutdownTimeoutMs;
      const left = (): number => Math.max(0, deadline - Date.now());
      accepting = false;
      logger.info('stopping: readiness off, draining requests');
      const relayStopped = relay ? finishesWithin(relay.stop(), Math.max(left(), 1000)) : Promise.resolve(true);
      const reconcilerStopped = reconciler ? finishesWithin(reconciler.stop(), Math.max(left(), 1000)) : true;
      await close(publicServer, left());
      if (!(await relayStopped)) logger.warn('relay did not stop in time');
      if (!(await reconcilerStopped)) logger.warn('reconciler did not stop in time');
      await close(adminServer, 500);
      const pools = [db, adminDb, ...(reconciling ? [reconciling.db] : [])].map((pool) => pool.destroy());
      if (!(await finishesWithin(Promise.all(pools), 1000))) {
        logger.warn('database connections did not close in time');
      }
      logger.info('stopped');
    })();
    return stopping;
  };

  return { publicPort, adminPort, db, pool, metrics, relay, reconciler, stop };
}
