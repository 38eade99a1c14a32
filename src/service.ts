import http from 'node:http';
import type pg from 'pg';
import { createAdminApp } from './admin/adminApp';
import { createAdminServer } from './admin/adminListener';
import { brokerUrl, configurationWarnings, consoleTokens, isLoopbackHost, writeLanes, type Config } from './config';
import { openDatabase } from './database/bootstrap';
import { describeDatabase, type DatabaseServer } from './database/embeddedPostgres';
import { createDb, createPool, type Db } from './database/pool';
import { PooledTransactions } from './database/transaction';
import { reasonOf, StartupError } from './errors';
import { close, listen } from './http/server';
import { createPublicListener } from './intake/publicListener';
import { UnverifiedBodies } from './intake/unverifiedBodies';
import { createLogger, type Logger } from './observability/logger';
import { createMetrics, type Metrics } from './observability/metrics';
import { readOutboxBacklog } from './outbox/backlog';
import { probeBroker } from './outbox/brokerChannel';
import { createRelay, type OutboxRelay } from './outbox/relay';
import { createReconciliation, type Reconciliation } from './reconciliation/reconciliation';
import type { Reconciler } from './reconciliation/reconciler';
import { GroupCommitStore } from './recording/groupCommit';
import { HistoryMaintainer } from './history/maintainer';

/**
 * The composition root: builds every part of the service from the validated config, by hand, and owns
 * start and stop. Nothing else lives here: the database bootstrap is src/database/bootstrap.ts, the relay's
 * factory src/outbox/relay.ts, the entry points' failure report src/cli/startFailure.ts.
 */

export interface Service {
  publicPort: number;
  /** The Postgres in use: DATABASE_URL's or the embedded one's. */
  databaseUrl: string;
  adminPort: number;
  db: Db;
  pool: pg.Pool;
  metrics: Metrics;
  relay: OutboxRelay | null;
  /** Checks open orders against the payment API; null without PAYMENT_API_URL. */
  reconciler: Reconciler | null;
  /** Keeps history by the day: the days ahead, and the retentions (one active across replicas). */
  historyMaintainer: HistoryMaintainer;
  /** Readiness off; in-flight requests finished while the relay stops after its batch; connections closed. */
  stop(): Promise<void>;
}

/** Connections of the admin port's own pool (its data routes are capped by ADMIN_CONCURRENCY). */
const ADMIN_POOL_MAX = 2;

/** Connections of the reconciliation's own pool (its sweep and its recording transactions). */
const RECONCILIATION_POOL_MAX = 2;

/** Slow senders are cut off rather than holding a connection (and a pool slot) indefinitely. */
const HEADERS_TIMEOUT_MS = 10_000;
const REQUEST_TIMEOUT_MS = 15_000;

/** Every part of a running service, built but not started. */
interface Parts {
  config: Config;
  logger: Logger;
  database: DatabaseServer;
  /** The intake's pool (the recorder, readiness). */
  pool: pg.Pool;
  db: Db;
  /** The admin data routes' own pool: reading projections never takes a connection the recorder needs. */
  adminDb: Db;
  metrics: Metrics;
  relay: OutboxRelay | null;
  reconciliation: { reconciliation: Reconciliation; db: Db } | null;
  reconciler: Reconciler | null;
  historyMaintainer: HistoryMaintainer;
  publicServer: http.Server;
  adminServer: http.Server;
  /** Readiness (/readyz): off once stopping. */
  readiness: { accepting: boolean };
}

export async function startService(config: Config, logger: Logger = createLogger(config.logLevel)): Promise<Service> {
  const database = await openDatabase(config, logger, { prepare: config.migrateOnStart });
  announceConfiguration(config, logger);
  let parts: Parts;
  try {
    parts = assemble(config, database, logger);
  } catch (error) {
    await database.stop();
    throw error;
  }
  const stop = stopper(parts);
  try {
    parts.relay?.start();
    parts.reconciler?.start();
    parts.historyMaintainer.start();
    // No AMQP_URL: a pod without the relay in production, which publishes nothing.
    const brokerProblem = config.amqpUrl === null ? undefined : probeBroker(config.amqpUrl, 2000);
    const publicPort = await listenOn(parts.publicServer, config.port, config.host, 'PORT');
    const adminPort = await listenOn(parts.adminServer, config.adminPort, config.host, 'ADMIN_PORT');
    announceStart(parts, { publicPort, adminPort }, await brokerProblem);
    const { db, pool, metrics, relay, reconciler, historyMaintainer } = parts;
    return {
      publicPort,
      adminPort,
      databaseUrl: database.url,
      db,
      pool,
      metrics,
      relay,
      reconciler,
      historyMaintainer,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** The local defaults taken, what a valid configuration may still get wrong, and the keys (fingerprints only). */
function announceConfiguration(config: Config, logger: Logger): void {
  if (config.localDefaults.length > 0) {
    logger.warn(
      { localDefaults: config.localDefaults },
      `local defaults (NODE_ENV is not production) for ${config.localDefaults.join(', ')}: ` +
        'for trying the service on this machine only; set them for real use (.env.example)',
    );
  }
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
}

/** Builds every part from the config; opens nothing yet (pools connect on first use). */
function assemble(config: Config, database: DatabaseServer, logger: Logger): Parts {
  const pool = createPool(
    {
      url: database.url,
      poolMax: config.databasePoolMax,
      timeoutMs: config.databaseTimeoutMs,
      keyLookupsOnly: true,
      pipelined: config.databasePipeline,
    },
    logger,
  );
  const db = createDb(pool);
  const adminPool = createPool(
    {
      url: database.url,
      poolMax: ADMIN_POOL_MAX,
      timeoutMs: config.databaseTimeoutMs,
      applicationName: 'payment-notification-receiver:admin',
      keyLookupsOnly: true,
    },
    logger,
  );
  const adminDb = createDb(adminPool);
  const unverified = new UnverifiedBodies(config.unverifiedBodiesLimitBytes);
  // The recorder's queue is read at scrape time, once the store below exists.
  const metrics = createMetrics({
    outboxBacklog: () => readOutboxBacklog(db),
    recorderQueued: () => store.load.queued,
    unverifiedBodyBytes: () => unverified.heldBytes,
  });
  const store = createRecorder(config, pool, metrics, logger);
  const relay = config.relayEnabled
    ? createRelay(
        { ...config, amqpUrl: brokerUrl(config) },
        database.url,
        metrics,
        logger.child({ component: 'relay' }),
      )
    : null;
  const reconciliation = assembleReconciliation(config, database.url, metrics, logger);
  const readiness = { accepting: true };
  return {
    config,
    logger,
    database,
    pool,
    db,
    adminDb,
    metrics,
    relay,
    reconciliation,
    reconciler: reconciliation?.reconciliation.createReconciler(database.url) ?? null,
    historyMaintainer: new HistoryMaintainer({
      databaseUrl: database.url,
      historyRetentionMs: config.historyRetentionMs,
      bodyRetentionMs: config.bodyRetentionMs,
      metrics: metrics.history,
      logger: logger.child({ component: 'history' }),
    }),
    publicServer: http.createServer(
      {
        headersTimeout: HEADERS_TIMEOUT_MS,
        requestTimeout: REQUEST_TIMEOUT_MS,
        // Node checks those timeouts on this interval (default 30 s, which would double them).
        connectionsCheckingInterval: 1000,
      },
      createPublicListener({ config, store, unverified, metrics, logger, onEventsWritten: () => relay?.wake() }),
    ),
    adminServer: createAdminServer(
      createAdminApp({
        probeDb: db,
        data: {
          db: adminDb,
          token: config.adminToken,
          concurrency: config.adminConcurrency,
          console: {
            transactions: new PooledTransactions(adminPool),
            tokens: consoleTokens(config),
            sessionSecret: config.consoleSessionSecret,
            sessionTtlMs: config.consoleSessionTtlMs,
            loopbackOnly: isLoopbackHost(config.host),
            viewersSeePersonalData: config.consoleViewersSeePersonalData,
            quietAfterMs: config.consoleQuietAfterMs,
            eventSource: config.eventSource,
            onEventsWritten: () => relay?.wake(),
          },
        },
        reconciliation: reconciliation?.reconciliation ?? null,
        metrics,
        logger,
        isAccepting: () => readiness.accepting,
      }),
      metrics,
    ),
    readiness,
  };
}

/** The intake's recorder: group commit on the intake's pool. */
function createRecorder(config: Config, pool: pg.Pool, metrics: Metrics, logger: Logger): GroupCommitStore {
  return new GroupCommitStore(
    new PooledTransactions(pool),
    { eventSource: config.eventSource },
    {
      maxBatchSize: 64,
      // One lane by default: what arrives while its transaction runs shares the next one. More
      // lanes split the same traffic into more, smaller transactions (docs/PERFORMANCE.md).
      lanes: writeLanes(config),
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
}

/**
 * Reconciliation against the payment API (issue 24), off without PAYMENT_API_URL: its own small pool, and on
 * it the same recorder the intake uses, so checking never takes a connection a notification needs.
 */
function assembleReconciliation(
  config: Config,
  databaseUrl: string,
  metrics: Metrics,
  logger: Logger,
): Parts['reconciliation'] {
  if (!config.reconciliation) return null;
  const pool = createPool(
    {
      url: databaseUrl,
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

/** Listens on a port, or a StartupError naming the setting (a taken PORT). */
async function listenOn(server: http.Server, port: number, host: string, setting: string): Promise<number> {
  try {
    return await listen(server, port, host);
  } catch (error) {
    throw new StartupError(`cannot listen on ${host}:${port} (${setting}): ${reasonOf(error)}`, setting);
  }
}

/** The start log line: ports, what runs, where the database is, whether the broker answers (undefined: not used). */
function announceStart(
  { config, logger, database, relay, reconciler }: Parts,
  ports: { publicPort: number; adminPort: number },
  brokerProblem: string | null | undefined,
): void {
  logger.info(
    {
      ...ports,
      relay: relay !== null,
      reconciler: reconciler !== null,
      allowedSources: config.sourceAllowlist.any ? 'any' : config.sourceAllowlist.entries,
      database: database.embedded
        ? `embedded Postgres in ${database.embedded.clusterDir} (${describeDatabase(database.url)})`
        : describeDatabase(database.url),
      broker:
        brokerProblem === undefined
          ? 'not used (RELAY_ENABLED=false, no AMQP_URL)'
          : brokerProblem === null
            ? 'reachable'
            : `not reachable (AMQP_URL): ${brokerProblem}`,
    },
    'service started',
  );
  if (typeof brokerProblem === 'string')
    logger.warn('the broker is not reachable (AMQP_URL): events wait in the outbox and are published once it is');
}

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
 * start (same id), and a transaction that did not commit was not answered 200. The relay finishes its batch
 * while the requests drain rather than after: a request that never completes cannot starve it, and another
 * replica takes the lock sooner. Events the drained requests commit wait in the outbox for the next relay to
 * hold the lock.
 */
function stopper(parts: Parts): () => Promise<void> {
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
      await close(parts.publicServer, left());
      if (!(await relayStopped)) logger.warn('relay did not stop in time');
      if (!(await reconcilerStopped)) logger.warn('reconciler did not stop in time');
      if (!(await maintainerStopped)) logger.warn('history maintainer did not stop in time');
      await close(parts.adminServer, 500);
      const pools = [parts.db, parts.adminDb, ...(parts.reconciliation ? [parts.reconciliation.db] : [])];
      if (!(await finishesWithin(Promise.all(pools.map((db) => db.destroy())), 1000))) {
        logger.warn('database connections did not close in time');
      }
      await parts.database.stop();
      logger.info('stopped');
    })();
    return stopping;
  };
}
