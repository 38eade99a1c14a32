import http from 'node:http';
import { hostname } from 'node:os';
import { getHeapStatistics } from 'node:v8';
import type pg from 'pg';
import { createAdminApp } from './admin/adminApp';
import { createAdminServer, type Admission } from './admin/adminListener';
import {
  adminDoors,
  adminTokens,
  brokerUrl,
  configurationWarnings,
  keptStateWarning,
  consoleTokens,
  journalSettings,
  receivedPos,
  recordingContext,
  writeLanes,
  type Config,
} from './config';
import { openDatabase } from './database/bootstrap';
import { describeDatabase, type DatabaseServer } from './embeddedPostgres/embeddedPostgres';
import { createDb, createPool, type Db } from './database/pool';
import { PooledTransactions } from './database/transaction';
import type { StatusConflict } from './domain/outcomes';
import { reasonOf, StartupError } from './errors';
import { DatabaseWatch } from './failover/databaseWatch';
import { readReplicationMode } from './failover/failoverQueries';
import { FailoverRecovery } from './failover/failoverRecovery';
import { entriesOf, entryOf } from './failover/journalEntries';
import { NotificationJournal } from './failover/notificationJournal';
import { systemClock, type Clock } from './domain/clock';
import { listen } from './http/server';
import { createPublicListener } from './intake/publicListener';
import { UnverifiedBodies } from './intake/unverifiedBodies';
import { createLogger, type Logger } from './observability/logger';
import { createMetrics, type Metrics } from './observability/metrics';
import { readOutboxBacklog } from './outbox/outboxQueries';
import { probeBroker } from './outbox/brokerChannel';
import { createRelay, type OutboxRelay } from './outbox/outboxRelay';
import { createReconciliation } from './reconciliation/reconciliation';
import { forceChecks, forcedCheckProgress, ordersObservedBetween } from './reconciliation/scheduleQueries';
import type { Reconciler } from './reconciliation/reconciler';
import { Recorder, type RecorderOptions } from './recording/recorder';
import { PartitionMaintainer } from './partitions/partitionMaintainer';
import { measureDaysAhead } from './partitions/partitionMaintenance';
import { stopper, type Parts } from './serviceParts';

/**
 * The composition root: builds every part of the service from the validated config, by hand, and owns
 * start and stop. Nothing else lives here: the database bootstrap is src/database/bootstrap.ts, the relay's
 * factory src/outbox/outboxRelay.ts, the entry points' failure report src/cli/startFailure.ts, the parts' type and
 * their stop sequence src/serviceParts.ts.
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
  historyMaintainer: PartitionMaintainer;
  /** Readiness off; in-flight requests finished while the relay stops after its batch; connections closed. */
  stop(): Promise<void>;
}

/** Connections of the admin port's own pool (its data routes are capped by ADMIN_CONCURRENCY). */
const ADMIN_POOL_MAX = 2;

/** Connections of the reconciliation's own pool (its sweep and its recording transactions). */
const RECONCILIATION_POOL_MAX = 2;

/** Connections of the failover recovery's own pool (its restoring recorder and its reads). */
const RECOVERY_POOL_MAX = 2;

/** The longest a beat of the failover watch may take before it counts as failed. */
const WATCH_TIMEOUT_MS = 2000;

/** Slow senders are cut off rather than holding a connection (and a pool slot) indefinitely. */
const HEADERS_TIMEOUT_MS = 10_000;
const REQUEST_TIMEOUT_MS = 15_000;

/** The tests' seams: the entry points leave them at their defaults. */
export interface ServiceOptions {
  /**
   * The clock of the admin port (the sign-in throttle's minutes, the console's sessions and trail), the reconciler
   * and the history maintainer (their schedules and the waits between their steps) and the payment-API client (its
   * retries): the system's unless a test drives it (src/domain/clock.ts).
   */
  clock?: Clock;
  /** The admin port's admission (ADMIN_ADMISSION on the real clock unless a test drives its bucket's clock). */
  adminAdmission?: Admission;
}

export async function startService(
  config: Config,
  logger: Logger = createLogger(config.logLevel),
  options: ServiceOptions = {},
): Promise<Service> {
  const database = await openDatabase(config, logger, { prepare: config.migrateOnStart });
  announceConfiguration(config, logger);
  let parts: Parts;
  try {
    parts = assemble(config, database, logger, options);
  } catch (error) {
    await database.stop();
    throw error;
  }
  const stop = stopper(parts);
  try {
    parts.journal?.start();
    parts.watch.start();
    parts.recovery.start();
    parts.relay?.start();
    parts.reconciler?.start();
    parts.historyMaintainer.start();
    // No AMQP_URL: a pod without the relay in production, which publishes nothing.
    const brokerProblem = config.amqpUrl === null ? undefined : probeBroker(config.amqpUrl, 2000);
    const publicPort = await listenOn(parts.publicServer, config.port, config.host, 'PORT');
    const adminPort = await listenOn(parts.adminServer, config.adminPort, config.host, 'ADMIN_PORT');
    await announceReplication(parts);
    // Last: the line that says the start is over.
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
  const keptState = keptStateWarning(config, getHeapStatistics().heap_size_limit, process.constrainedMemory?.() ?? 0);
  if (keptState) logger.warn(keptState);
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
function assemble(config: Config, database: DatabaseServer, logger: Logger, options: ServiceOptions): Parts {
  const clock = options.clock ?? systemClock;
  const pool = createPool(
    {
      url: database.url,
      poolMax: config.databasePoolMax,
      timeoutMs: config.databaseTimeoutMs,
      keyLookupsOnly: true,
      genericPlans: true,
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
    historyDaysAhead: () => measureDaysAhead(db),
  });
  const historyMaintainer = new PartitionMaintainer({
    databaseUrl: database.url,
    clock,
    historyRetentionMs: config.historyRetentionMs,
    bodyRetentionMs: config.bodyRetentionMs,
    auditRetentionMs: config.auditRetentionMs,
    metrics: metrics.history,
    logger: logger.child({ component: 'history' }),
  });
  // Any write that finds its day missing (the intake's, the reconciliation's) has the days made at once.
  const dayMissing = (): void => historyMaintainer.dayMissing();
  const journalOf = journalSettings(config);
  const journal = journalOf
    ? new NotificationJournal(journalOf, metrics.failover, logger.child({ component: 'journal' }))
    : null;
  const recovery = assembleRecovery(config, database.url, metrics, logger, dayMissing, journalOf);
  const watch = new DatabaseWatch({
    databaseUrl: database.url,
    replica: hostname(),
    timeoutMs: Math.min(config.databaseTimeoutMs, WATCH_TIMEOUT_MS),
    metrics: metrics.failover,
    logger: logger.child({ component: 'watch' }),
    // What the recorder kept may be what the promoted database lost: its next batches read (docs/decisions/0024).
    onFailover: () => {
      store.forgetKeptState();
      recovery.recovery.wake();
    },
  });
  const store = createRecorder(config, pool, metrics, logger, {
    onMissingPartition: dayMissing,
    isHeld: () => watch.holding,
    onCommitted: journal && ((decision) => journal.append(entriesOf(decision))),
    onQuarantined:
      journal &&
      ((delivery) => {
        const entry = entryOf(delivery, 'quarantine', new Date().toISOString(), null);
        if (entry) journal.append([entry]);
      }),
  });
  const relay = config.relayEnabled
    ? createRelay(
        { ...config, amqpUrl: brokerUrl(config) },
        database.url,
        metrics,
        logger.child({ component: 'relay' }),
      )
    : null;
  const reconciliation = assembleReconciliation(
    config,
    database.url,
    metrics,
    logger,
    dayMissing,
    () => watch.holding,
    clock,
  );
  const readiness = { accepting: true };
  return {
    config,
    logger,
    database,
    pool,
    db,
    adminDb,
    metrics,
    recorder: store,
    journal,
    watch,
    recovery: recovery.recovery,
    recoveryDb: recovery.db,
    relay,
    reconciliation,
    reconciler: reconciliation?.reconciliation.createReconciler(database.url) ?? null,
    historyMaintainer,
    publicServer: http.createServer(
      {
        headersTimeout: HEADERS_TIMEOUT_MS,
        requestTimeout: REQUEST_TIMEOUT_MS,
        // Node checks those timeouts on this interval (default 30 s, which would double them).
        connectionsCheckingInterval: 1000,
      },
      createPublicListener({ config, store, unverified, metrics, logger }),
    ),
    adminServer: createAdminServer(
      createAdminApp({
        probeDb: db,
        data: {
          db: adminDb,
          tokens: adminTokens(config),
          access: adminDoors(config),
          concurrency: config.adminConcurrency,
          adminOrigins: config.adminOrigins,
          trustProxy: config.trustProxy,
          signIns: metrics.signIns,
          amqpUrl: config.amqpUrl,
          paymentServiceTimeZone: config.paymentServiceTimeZone,
          knownPos: receivedPos(config),
          console: {
            transactions: new PooledTransactions(adminPool),
            mode: adminDoors(config).console,
            tokens: consoleTokens(config),
            sessionTtlMs: config.consoleSessionTtlMs,
            sessionIdleMs: config.consoleSessionIdleMs,
            viewersSeePersonalData: config.consoleViewersSeePersonalData,
            quietAfterMs: config.consoleQuietAfterMs,
            timeZone: config.consoleTimeZone,
            locale: config.consoleLocale,
            paymentServiceTimeZone: config.paymentServiceTimeZone,
            confirmWithinMs: config.consoleConfirmWithinMs,
            knownPos: receivedPos(config),
            expectedUnroutedTypes: config.expectedUnroutedEventTypes,
            checkSchedule: config.reconciliation && {
              afterMs: config.reconciliation.afterMs,
              giveUpMs: config.reconciliation.giveUpMs,
              timeoutMs: config.reconciliation.timeoutMs,
            },
            eventSource: config.eventSource,
          },
          now: () => new Date(clock.now()),
        },
        reconciliation: reconciliation?.reconciliation ?? null,
        metrics,
        logger,
        isAccepting: () => readiness.accepting,
        databaseWrites: () => ({
          failingSince: watch.writesFailingSince,
          recovering: watch.recovery?.state === 'done' ? null : (watch.recovery?.state ?? null),
        }),
      }),
      metrics,
      options.adminAdmission,
    ),
    readiness,
  };
}

/** Counts a status conflict the recorder committed, whoever observed it (the intake's and reconciliation's recorders). */
const countConflict =
  (metrics: Metrics) =>
  ({ kind, status, keptStatus, source }: StatusConflict): void =>
    metrics.statusConflicts.inc({ kind, status, kept_status: keptStatus, source });

/** What the intake's recorder tells and asks of the other parts. */
interface RecorderHooks {
  onMissingPartition: () => void;
  /** A failover's restoration holds the writes. */
  isHeld: () => boolean;
  /** The journal takes what each transaction committed (null: there is no journal). */
  onCommitted: RecorderOptions['onCommitted'] | null;
  onQuarantined: RecorderOptions['onQuarantined'] | null;
}

/** The intake's recorder: group commit on the intake's pool. */
function createRecorder(
  config: Config,
  pool: pg.Pool,
  metrics: Metrics,
  logger: Logger,
  { onMissingPartition, isHeld, onCommitted, onQuarantined }: RecorderHooks,
): Recorder {
  return new Recorder(
    new PooledTransactions(pool),
    recordingContext(config),
    {
      maxBatchSize: 64,
      // One lane by default: what arrives while its transaction runs shares the next one. More
      // lanes split the same traffic into more, smaller transactions (docs/PERFORMANCE.md).
      lanes: writeLanes(config),
      maxQueued: 2000,
      maxWaitMs: config.databaseTimeoutMs,
      answerWithinMs: config.databaseTimeoutMs + 1000,
      knownCapacity: config.recorderKnownNotifications,
      keptOrders: config.recorderKeptOrders,
      onKeptState: (result) => metrics.recorderKeptState.inc({ result }),
      onBatchDone: (notifications, busySeconds) => {
        metrics.recorderBatchSize.observe(notifications);
        metrics.recorderBusy.inc(busySeconds);
      },
      onMissingPartition,
      onConflict: countConflict(metrics),
      isHeld,
      ...(onCommitted ? { onCommitted } : {}),
      ...(onQuarantined ? { onQuarantined } : {}),
    },
    logger.child({ component: 'recorder' }),
  );
}

/**
 * The failover recovery (issue 54): one active across replicas, on a small pool of its own, with the recorder that
 * restores what the journal gives back (never held, journaling nothing: its deliveries are restorations).
 */
function assembleRecovery(
  config: Config,
  databaseUrl: string,
  metrics: Metrics,
  logger: Logger,
  onMissingPartition: () => void,
  journal: ReturnType<typeof journalSettings>,
): { recovery: FailoverRecovery; db: Db } {
  const pool = createPool(
    {
      url: databaseUrl,
      poolMax: RECOVERY_POOL_MAX,
      timeoutMs: config.databaseTimeoutMs,
      applicationName: 'payment-notification-receiver:recovery',
      keyLookupsOnly: true,
    },
    logger,
  );
  const store = new Recorder(
    new PooledTransactions(pool),
    recordingContext(config),
    {
      maxBatchSize: 64,
      lanes: 1,
      maxQueued: 20_000,
      maxWaitMs: 60_000,
      answerWithinMs: 60_000,
      knownCapacity: 0,
      onConflict: countConflict(metrics),
      onMissingPartition,
    },
    logger.child({ component: 'restoring-recorder' }),
  );
  const db = createDb(pool);
  const recovery = new FailoverRecovery({
    databaseUrl,
    db,
    store,
    journal,
    secondKeys: config.secondKeys,
    reconcileWindowMs: config.failoverReconcileWindowMs,
    reconciliation: config.reconciliation ? { ordersObservedBetween, forceChecks, forcedCheckProgress } : null,
    metrics: metrics.failover,
    logger: logger.child({ component: 'recovery' }),
  });
  return { recovery, db };
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
  onMissingPartition: () => void,
  isHeld: () => boolean,
  clock: Clock,
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
  const store = new Recorder(
    new PooledTransactions(pool),
    recordingContext(config),
    {
      maxBatchSize: 64,
      lanes: 1,
      maxQueued: 1000,
      maxWaitMs: 30_000,
      answerWithinMs: 60_000,
      onConflict: countConflict(metrics),
      onMissingPartition,
      isHeld,
    },
    logger.child({ component: 'reconciliation-recorder' }),
  );
  const db = createDb(pool);
  return { reconciliation: createReconciliation(config.reconciliation, { db, store, metrics, logger, clock }), db };
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
      // Who the admin port lets in: its data routes (token, open on loopback, closed: 401) and console (tokens,
      // open on loopback, closed: 403).
      adminDoors: adminDoors(config),
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

/**
 * The start report's line on replication (issue 54): what the database says of its standbys. In production with no
 * synchronous standby, a warning, once: a failover can lose the last acknowledged notifications, and what covers it.
 */
async function announceReplication({ config, logger, db }: Parts): Promise<void> {
  let mode;
  try {
    mode = await readReplicationMode(db);
  } catch (error) {
    logger.warn({ err: { message: reasonOf(error) } }, 'could not read the database replication settings');
    return;
  }
  const synchronous = mode.synchronousStandbyNames.trim() !== '' && !['off', 'local'].includes(mode.synchronousCommit);
  logger.info(
    { replication: { ...mode, synchronous }, journal: journalSettings(config)?.queue ?? null },
    synchronous ? 'database replication: synchronous' : 'database replication: no synchronous standby',
  );
  if (!synchronous && config.production)
    logger.warn(
      journalSettings(config)
        ? 'the database has no synchronous standby: a failover can lose the notifications it acknowledged in its ' +
            'last seconds; the journal (JOURNAL_*) restores those it holds and reconciliation the rest it can ' +
            '(docs/DEPLOYMENT.md, "Failover")'
        : 'the database has no synchronous standby and the service keeps no journal (JOURNAL_RETENTION=off): a ' +
            'failover can lose the notifications it acknowledged in its last seconds, and only reconciliation ' +
            'repairs what it can (docs/DEPLOYMENT.md, "Failover")',
    );
}
