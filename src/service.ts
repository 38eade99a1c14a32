import http from 'node:http';
import type pg from 'pg';
import { createAdminApp } from './admin/adminApp';
import { createAdminServer } from './admin/adminListener';
import { ConfigError, configurationWarnings, type Config } from './config';
import { close, listen } from './http/server';
import { createPublicListener } from './intake/publicListener';
import { UnverifiedBodies } from './intake/unverifiedBodies';
import { createLogger, type Logger } from './observability/logger';
import { createMetrics, createRelayMetrics, type Metrics, type RelayMetrics } from './observability/metrics';
import { readOutboxBacklog } from './outbox/backlog';
import { BrokerChannel, probeBroker } from './outbox/brokerChannel';
import { OutboxRelay } from './outbox/relay';
import { createDb, createPool, ensureDatabaseExists, type Db } from './database/pool';
import { describeDatabase, openDatabaseServer, type DatabaseServer } from './database/embeddedPostgres';
import { StartupError } from './errors';
import { PooledTransactions } from './database/transaction';
import { migrate } from './database/migrations';
import { GroupCommitStore } from './recording/groupCommit';
import { createReconciliation, type Reconciliation } from './reconciliation/reconciliation';
import type { Reconciler } from './reconciliation/reconciler';

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
  databaseUrl: string,
  metrics: Metrics,
  logger: Logger,
): { reconciliation: Reconciliation; db: Db } | null {
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

/** The setting a database failure points at. */
const databaseSetting = (config: Pick<Config, 'databaseUrl'>): string =>
  config.databaseUrl === null ? 'DATA_DIR' : 'DATABASE_URL';

/** An error's code (ECONNREFUSED, 28P01) or else its message; AggregateError's first code. */
function reason(error: unknown): string {
  const { code, message, errors } = error as { code?: unknown; message?: unknown; errors?: unknown };
  if (typeof code === 'string') return code;
  if (Array.isArray(errors) && errors.length > 0) return reason(errors[0]);
  return typeof message === 'string' && message !== '' ? message : String(error);
}

/**
 * Prepares the database: creates it on a fresh server and applies pending migrations. A server that
 * cannot be reached is a StartupError naming it and the setting.
 */
export async function prepareDatabase(config: Pick<Config, 'databaseUrl'>, url: string, logger: Logger): Promise<void> {
  let created: boolean;
  try {
    created = await ensureDatabaseExists(url);
  } catch (error) {
    throw new StartupError(
      `cannot connect to Postgres at ${describeDatabase(url)} (${databaseSetting(config)}): ${reason(error)}`,
      databaseSetting(config),
    );
  }
  if (created) logger.info({ database: describeDatabase(url) }, 'database created');
  await migrate(url, logger);
}

/** Opens the database server (the embedded one without DATABASE_URL) and prepares the database. */
export async function openDatabase(
  config: Pick<Config, 'databaseUrl' | 'dataDir'>,
  logger: Logger,
  { prepare = true }: { prepare?: boolean } = {},
): Promise<DatabaseServer> {
  const server = await openDatabaseServer(config, logger);
  if (server.embedded) {
    const { clusterDir, created, startedHere } = server.embedded;
    logger.info(
      { dataDir: clusterDir, created, startedHere },
      `${created ? 'created and started' : startedHere ? 'started' : 'using the running'} embedded Postgres in ` +
        `${clusterDir} (DATA_DIR); set DATABASE_URL=postgres://user@host:port/database to use a Postgres of your own`,
    );
  }
  try {
    if (prepare) await prepareDatabase(config, server.url, logger);
  } catch (error) {
    await server.stop();
    throw error;
  }
  return server;
}

/** The one way to build the outbox relay: the service, `npm run relay` and the tests use it. */
export function createRelay(
  config: Pick<Config, 'amqpUrl' | 'amqpExchange' | 'outboxRetentionMs' | 'databasePipeline'>,
  databaseUrl: string,
  metrics: RelayMetrics,
  logger: Logger,
): OutboxRelay {
  return new OutboxRelay({
    databaseUrl,
    amqpUrl: config.amqpUrl,
    exchange: config.amqpExchange,
    retentionMs: config.outboxRetentionMs,
    pipelined: config.databasePipeline,
    metrics,
    logger,
  });
}

/**
 * A confirm channel to the configured exchange, as the relay publishes (events replay); its
 * metrics default to a registry of their own (a one-off command is not scraped).
 */
export function createBrokerChannel(
  config: Pick<Config, 'amqpUrl' | 'amqpExchange'>,
  confirmTimeoutMs: number,
  logger: Logger,
  metrics: RelayMetrics = createRelayMetrics(),
): BrokerChannel {
  return new BrokerChannel(config.amqpUrl, config.amqpExchange, confirmTimeoutMs, metrics, logger);
}

/** What the start log says about the sources and the database (the keys have a line of their own). */
function describeStart(config: Config, server: DatabaseServer): Record<string, unknown> {
  return {
    allowedSources: config.sourceAllowlist.any ? 'any' : config.sourceAllowlist.entries,
    database: server.embedded
      ? `embedded Postgres in ${server.embedded.clusterDir} (${describeDatabase(server.url)})`
      : describeDatabase(server.url),
  };
}

/** Listens on a port, or a StartupError naming the setting (a taken PORT). */
async function listenOn(server: http.Server, port: number, host: string, setting: string): Promise<number> {
  try {
    return await listen(server, port, host);
  } catch (error) {
    throw new StartupError(`cannot listen on ${host}:${port} (${setting}): ${reason(error)}`, setting);
  }
}

/** The composition root: builds every part from the config and owns start and stop. */
export async function startService(config: Config, logger: Logger = createLogger(config.logLevel)): Promise<Service> {
  const server = await openDatabase(config, logger, { prepare: config.migrateOnStart });
  try {
    return await startOn(server, config, logger);
  } catch (error) {
    await server.stop();
    throw error;
  }
}

async function startOn(server: DatabaseServer, config: Config, logger: Logger): Promise<Service> {
  const databaseUrl = server.url;
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

  const pool = createPool(
    {
      url: databaseUrl,
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
        url: databaseUrl,
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
    ? createRelay(config, databaseUrl, metrics, logger.child({ component: 'relay' }))
    : null;
  relay?.start();

  const reconciling = createServiceReconciliation(config, databaseUrl, metrics, logger);
  const reconciler = reconciling?.reconciliation.createReconciler(databaseUrl) ?? null;
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
  const adminServer = createAdminServer(adminApp, metrics);

  const brokerProblem = probeBroker(config.amqpUrl, 2000);
  let publicPort: number;
  let adminPort: number;
  try {
    publicPort = await listenOn(publicServer, config.port, config.host, 'PORT');
    adminPort = await listenOn(adminServer, config.adminPort, config.host, 'ADMIN_PORT');
  } catch (error) {
    await Promise.all([relay?.stop(), reconciler?.stop()]);
    await close(publicServer, 0);
    await Promise.all([db, adminDb, ...(reconciling ? [reconciling.db] : [])].map((pool) => pool.destroy()));
    throw error;
  }
  const brokerError = await brokerProblem;
  logger.info(
    {
      publicPort,
      adminPort,
      relay: config.relayEnabled,
      reconciler: reconciler !== null,
      ...describeStart(config, server),
      broker: brokerError === null ? 'reachable' : `not reachable (AMQP_URL): ${brokerError}`,
    },
    'service started',
  );
  if (brokerError !== null)
    logger.warn('the broker is not reachable (AMQP_URL): events wait in the outbox and are published once it is');

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
      await server.stop();
      logger.info('stopped');
    })();
    return stopping;
  };

  return { publicPort, databaseUrl, adminPort, db, pool, metrics, relay, reconciler, stop };
}

/**
 * A failed start as one JSON log line naming what failed and the setting to look at (invalid
 * configuration lists every problem, never a value); the exit code the process should end with.
 */
export function reportStartFailure(error: unknown, logger: Logger = createLogger('info')): number {
  if (error instanceof ConfigError) {
    logger.fatal({ problems: error.problems }, error.message.replace(/\n\s*/g, ' '));
    return 78; // EX_CONFIG
  }
  if (error instanceof StartupError) {
    logger.fatal({ setting: error.setting }, error.message);
    return 1;
  }
  logger.fatal({ err: error }, `failed to start: ${error instanceof Error ? error.message : String(error)}`);
  return 1;
}
