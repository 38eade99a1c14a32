import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { CONFLICT_SOURCES, INTAKE_OUTCOMES } from '../domain/outcomes';
import { createFailoverMetrics, type FailoverMetrics } from './failoverMetrics';
import {
  createPaymentApiMetrics,
  createReconciliationMetrics,
  type PaymentApiMetrics,
  type ReconciliationMetrics,
} from './reconciliationMetrics';

export const NOTIFICATION_KINDS = ['order', 'refund', 'unknown'] as const;
export type MetricKind = (typeof NOTIFICATION_KINDS)[number];

export const PUBLISH_FAILURE_REASONS = ['nack', 'timeout', 'connection'] as const;
export type PublishFailureReason = (typeof PUBLISH_FAILURE_REASONS)[number];

/** What every process's admin port serves: its registry (with Node's process metrics) and request durations. */
export interface ProcessMetrics {
  registry: Registry;
  requestDuration: Histogram<'server' | 'method' | 'route' | 'status_code'>;
}

/** The outbox relay's, in the service or alone (`npm run relay`). */
export interface RelayMetrics extends ProcessMetrics {
  eventsPublished: Counter<'type'>;
  /** Published events the broker returned: no queue was bound for their routing key (kept in the outbox). */
  eventsUnrouted: Counter<'type'>;
  publishFailures: Counter<'reason'>;
  publishLatency: Histogram;
  brokerConnectionUp: Gauge;
  relayActive: Gauge;
}

/** The service's: the relay's, and the intake's and recorder's. */
export interface Metrics extends RelayMetrics {
  notifications: Counter<'kind' | 'outcome'>;
  variants: Counter<'kind'>;
  disagreements: Counter<'kind' | 'field'>;
  /** Final statuses contradicted, whoever observed them (source: notification, reconciliation, replay). */
  statusConflicts: Counter<'kind' | 'status' | 'kept_status' | 'source'>;
  recorderBatchSize: Histogram;
  recorderBusy: Counter;
  /** Recording statements by how they were decided: from kept state, after a read, or refused by a guard (0024). */
  recorderKeptState: Counter<'result'>;
  /** Token checks of the admin port (console sign-ins, the JSON API's bearer): signed in, refused, throttled. */
  signIns: Counter<'result' | 'via'>;
  paymentApi: PaymentApiMetrics;
  reconciliation: ReconciliationMetrics;
  history: HistoryMetrics;
  failover: FailoverMetrics;
}

/** The partition maintainer's (src/partitions/partitionMaintainer.ts): the days kept, and what its rounds did. */
export interface HistoryMetrics {
  maintainerActive: Gauge;
  rounds: Counter<'result'>;
  lastSuccess: Gauge;
  /** Writes that failed because their day had no partition (each has the missing days made at once). */
  missingPartitionWrites: Counter;
  oldestDay: Gauge;
  daysRemoved: Counter;
  bodiesPurged: Counter;
  roundDuration: Histogram;
}

export interface OutboxBacklog {
  pending: number;
  /** Unix seconds; 0 when nothing is pending. */
  oldestCreatedAtSeconds: number;
  /** How long the oldest transaction with an id in the cluster has been open: the relay's cursor waits for it. */
  cursorHeldSeconds: number;
}

export interface MetricSources {
  /** Read at scrape time, so every replica reports the backlog whether or not its relay is active. */
  outboxBacklog?: () => Promise<OutboxBacklog>;
  /** Notifications waiting for a recording transaction, read at scrape time. */
  recorderQueued?: () => number;
  /** Bytes held for bodies whose signature is not checked yet, read at scrape time. */
  unverifiedBodyBytes?: () => number;
  /** Days after today that history partitions take writes for (-1: not today), measured at scrape time. */
  historyDaysAhead?: () => Promise<number>;
}

/**
 * How long a scrape waits for a figure read from the database. Prometheus drops the whole scrape after its
 * scrape_timeout (10 s by default) and DATABASE_TIMEOUT may be longer: an outage must not cost every other metric.
 */
const SCRAPE_READ_MS = 2000;

/**
 * A figure read from the database at scrape time, one read at a time: whoever asks while it runs shares it (the
 * gauges of one scrape; the scrapes that come while a slow read goes on, so that they never pile up reads on the
 * pool). Each waits SCRAPE_READ_MS at most; null when the read fails or is late (the gauge keeps its last value).
 */
function scrapeReader<T>(read: () => Promise<T>): () => Promise<T | null> {
  let running: Promise<T | null> | null = null;
  return () => {
    running ??= read()
      .catch(() => null)
      .finally(() => setImmediate(() => (running = null)));
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<null>((resolve) => {
      timer = setTimeout(() => resolve(null), SCRAPE_READ_MS);
    });
    return Promise.race([running, late]).finally(() => clearTimeout(timer));
  };
}

/**
 * A fresh registry per process or service instance (tests run several in one process), with what
 * the relay and its admin port report: what `npm run relay` serves.
 */
export function createRelayMetrics(sources: Pick<MetricSources, 'outboxBacklog'> = {}): RelayMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });

  const requestDuration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request duration, from the first byte read to the response written.',
    labelNames: ['server', 'method', 'route', 'status_code'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });

  // The process's one thread (in the service, the one that parses, verifies, records and answers):
  // a loop active nearly all the time is what bounds a pod's throughput once the database keeps up
  // (docs/PERFORMANCE.md).
  let eventLoopActiveSeconds = performance.eventLoopUtilization().active / 1000;
  new Counter({
    name: 'nodejs_eventloop_active_seconds_total',
    help: 'Time the event loop spent running callbacks rather than waiting for I/O; rate() of it is its utilization.',
    registers: [registry],
    collect() {
      const now = performance.eventLoopUtilization().active / 1000;
      this.inc(Math.max(0, now - eventLoopActiveSeconds));
      eventLoopActiveSeconds = now;
    },
  });

  const eventsPublished = new Counter({
    name: 'outbox_events_published_total',
    help: 'Domain events confirmed by the broker, by type.',
    labelNames: ['type'] as const,
    registers: [registry],
  });
  const eventsUnrouted = new Counter({
    name: 'outbox_events_unrouted_total',
    help: 'Published events no queue was bound for (returned by the broker, kept in the outbox), by type.',
    labelNames: ['type'] as const,
    registers: [registry],
  });
  const publishFailures = new Counter({
    name: 'outbox_publish_failures_total',
    help: 'Event publish attempts that did not end in a broker confirm, by reason.',
    labelNames: ['reason'] as const,
    registers: [registry],
  });
  for (const reason of PUBLISH_FAILURE_REASONS) publishFailures.inc({ reason }, 0);

  // One query serves both backlog gauges of a scrape; the database down or slow, they keep their last values.
  const readBacklog = sources.outboxBacklog
    ? scrapeReader(sources.outboxBacklog)
    : (): Promise<OutboxBacklog | null> => Promise.resolve(null);
  // The gauges read at scrape time (collect), here and in createMetrics, are held by the registry
  // alone: nothing sets them, so the interfaces do not expose them.
  new Gauge({
    name: 'outbox_pending_events',
    help: 'Events committed but not yet confirmed by the broker.',
    registers: [registry],
    async collect() {
      const backlog = await readBacklog();
      if (backlog) this.set(backlog.pending);
    },
  });
  new Gauge({
    name: 'outbox_oldest_pending_event_created_timestamp_seconds',
    help: 'Creation time (unix seconds) of the oldest unpublished event; 0 when there is none.',
    registers: [registry],
    async collect() {
      const backlog = await readBacklog();
      if (backlog) this.set(backlog.oldestCreatedAtSeconds);
    },
  });
  new Gauge({
    name: 'outbox_cursor_held_seconds',
    help:
      'Age of the oldest transaction with an id open anywhere in the database cluster (running or prepared): the ' +
      'relay publishes no event committed after it began until it ends.',
    registers: [registry],
    async collect() {
      const backlog = await readBacklog();
      if (backlog) this.set(backlog.cursorHeldSeconds);
    },
  });
  const publishLatency = new Histogram({
    name: 'outbox_publish_latency_seconds',
    help: 'Time from the event commit to the broker confirm.',
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [registry],
  });
  const brokerConnectionUp = new Gauge({
    name: 'amqp_connection_up',
    help: '1 while the relay holds an open broker connection.',
    registers: [registry],
  });
  const relayActive = new Gauge({
    name: 'outbox_relay_active',
    help: '1 while this process is the active outbox relay (holds the relay lock).',
    registers: [registry],
  });

  return {
    registry,
    requestDuration,
    eventsPublished,
    eventsUnrouted,
    publishFailures,
    publishLatency,
    brokerConnectionUp,
    relayActive,
  };
}

/** The service's metrics: the relay's (createRelayMetrics), and the intake's and recorder's, in one registry. */
export function createMetrics(sources: MetricSources = {}): Metrics {
  const relay = createRelayMetrics(sources);
  const { registry } = relay;

  const notifications = new Counter({
    name: 'payment_notifications_total',
    help: 'Notification deliveries by kind and outcome.',
    labelNames: ['kind', 'outcome'] as const,
    registers: [registry],
  });
  // Every series exists from the start, so rate() and absent-data alerts work before the first event.
  for (const kind of NOTIFICATION_KINDS) for (const outcome of INTAKE_OUTCOMES) notifications.inc({ kind, outcome }, 0);

  const variants = new Counter({
    name: 'payment_notification_variants_total',
    help: 'Repeats with the same meaning as a recorded notification but different body bytes.',
    labelNames: ['kind'] as const,
    registers: [registry],
  });
  for (const kind of ['order', 'refund']) variants.inc({ kind }, 0);

  const disagreements = new Counter({
    name: 'payment_notification_disagreements_total',
    help: "Notifications that stated a fact (POS, amount, currency, extOrderId, a refund's order) otherwise than first recorded; the first value is kept.",
    labelNames: ['kind', 'field'] as const,
    registers: [registry],
  });
  for (const [kind, field] of [
    ['order', 'merchantPosId'],
    ['order', 'totalAmount'],
    ['order', 'currencyCode'],
    ['order', 'extOrderId'],
    ['refund', 'orderId'],
    ['refund', 'amount'],
    ['refund', 'currencyCode'],
  ] as const) {
    disagreements.inc({ kind, field }, 0);
  }

  // Counted by the recorder, whatever brought the status: payment_notifications_total counts the sender's
  // deliveries only, and a conflict found by reconciliation or a replay is not one of them.
  const statusConflicts = new Counter({
    name: 'payment_status_conflicts_total',
    help: 'Final statuses contradicted by a later final status (recorded, the first kept), by kind, the status that came, the status kept, and who observed it: notification, reconciliation, restoration (the journal after a failover) or replay (a status recorded before, its history removed by retention).',
    labelNames: ['kind', 'status', 'kept_status', 'source'] as const,
    registers: [registry],
  });
  for (const [kind, status, kept_status] of [
    ['order', 'COMPLETED', 'CANCELED'],
    ['order', 'CANCELED', 'COMPLETED'],
    ['refund', 'FINALIZED', 'CANCELED'],
    ['refund', 'CANCELED', 'FINALIZED'],
  ] as const)
    for (const source of CONFLICT_SOURCES) statusConflicts.inc({ kind, status, kept_status, source }, 0);

  // The recorder's saturation: a lane busy all the time is where a burst queues (docs/PERFORMANCE.md).
  const recorderBatchSize = new Histogram({
    name: 'recorder_batch_notifications',
    help: 'Notifications recorded per transaction (its count is the number of recording transactions).',
    buckets: [1, 2, 4, 8, 16, 32, 64],
    registers: [registry],
  });
  const recorderBusy = new Counter({
    name: 'recorder_busy_seconds_total',
    help: 'Time the recorder had a transaction running, summed over its lanes.',
    registers: [registry],
  });
  // One round trip per batch (docs/decisions/0024): how often kept state decided it, and how often it was wrong.
  const recorderKeptState = new Counter({
    name: 'recorder_kept_state_total',
    help: 'Recording statements by how their batch was decided: kept (from kept state, one round trip), read (after a read), guard_failed (the kept state was not what the database holds; the batch ran again by a read).',
    labelNames: ['result'] as const,
    registers: [registry],
  });
  for (const result of ['kept', 'read', 'guard_failed']) recorderKeptState.inc({ result }, 0);
  new Gauge({
    name: 'recorder_queued_notifications',
    help: 'Notifications waiting for a recording transaction.',
    registers: [registry],
    collect() {
      if (sources.recorderQueued) this.set(sources.recorderQueued());
    },
  });

  new Gauge({
    name: 'intake_unverified_body_bytes',
    help: 'Bytes held for notification bodies whose signature is not checked yet (bounded by UNVERIFIED_BODIES_LIMIT).',
    registers: [registry],
    collect() {
      if (sources.unverifiedBodyBytes) this.set(sources.unverifiedBodyBytes());
    },
  });

  const signIns = new Counter({
    name: 'admin_sign_ins_total',
    help: "Token checks of the admin port by result (signed_in, refused, throttled: 429 with no token checked) and door (console sign-in, api: the JSON API's bearer token); the JSON API's successes are not counted.",
    labelNames: ['result', 'via'] as const,
    registers: [registry],
  });
  for (const result of ['signed_in', 'refused', 'throttled'])
    for (const via of ['console', 'api'])
      if (!(result === 'signed_in' && via === 'api')) signIns.inc({ result, via }, 0);

  return {
    ...relay,
    notifications,
    signIns,
    variants,
    disagreements,
    statusConflicts,
    recorderBatchSize,
    recorderBusy,
    recorderKeptState,
    paymentApi: createPaymentApiMetrics(registry),
    reconciliation: createReconciliationMetrics(registry),
    history: createHistoryMetrics(registry, sources.historyDaysAhead),
    failover: createFailoverMetrics(registry),
  };
}

/**
 * The partition maintainer's metrics; the gauges are set by the active maintainer only, but for the days ahead,
 * which every replica measures in the database at scrape time (a day removed by hand shows at once).
 */
export function createHistoryMetrics(registry: Registry, daysAhead?: () => Promise<number>): HistoryMetrics {
  const readDaysAhead = daysAhead ? scrapeReader(daysAhead) : (): Promise<number | null> => Promise.resolve(null);
  const daysAheadGauge = new Gauge({
    name: 'history_partition_days_ahead',
    help: 'Days after today that every history table has partitions for, without a gap (the maintainer makes 7); -1 while today has none and writes fail. Measured in the database at scrape time; NaN until it could be.',
    registers: [registry],
    async collect() {
      // The database unreachable or slow: keep the last figure rather than fail the scrape.
      const measured = await readDaysAhead();
      if (measured !== null) this.set(measured);
    },
  });
  daysAheadGauge.set(Number.NaN);
  const rounds = new Counter({
    name: 'history_maintenance_rounds_total',
    help: 'History maintenance rounds (make the days ahead, purge bodies, remove days past retention), by result.',
    labelNames: ['result'] as const,
    registers: [registry],
  });
  for (const result of ['ok', 'failed']) rounds.inc({ result }, 0);
  return {
    maintainerActive: new Gauge({
      name: 'history_maintainer_active',
      help: '1 while this process is the active history maintainer (holds the maintainer lock).',
      registers: [registry],
    }),
    rounds,
    lastSuccess: new Gauge({
      name: 'history_maintenance_last_success_timestamp_seconds',
      help: 'When the last history maintenance round succeeded (Unix seconds); set by the active maintainer.',
      registers: [registry],
    }),
    missingPartitionWrites: new Counter({
      name: 'history_missing_partition_writes_total',
      help: 'Recording transactions that failed because their day of history had no partition; each has the missing days made at once.',
      registers: [registry],
    }),
    oldestDay: new Gauge({
      name: 'history_oldest_day_timestamp_seconds',
      help: 'Start of the oldest day of history kept (Unix seconds); set by the active maintainer.',
      registers: [registry],
    }),
    daysRemoved: new Counter({
      name: 'history_days_removed_total',
      help: 'Days of history (notifications, variants, deliveries) removed past HISTORY_RETENTION.',
      registers: [registry],
    }),
    bodiesPurged: new Counter({
      name: 'history_bodies_purged_total',
      help: 'Raw bodies purged past BODY_RETENTION.',
      registers: [registry],
    }),
    roundDuration: new Histogram({
      name: 'history_maintenance_round_seconds',
      help: 'How long a history maintenance round took.',
      buckets: [0.05, 0.25, 1, 5, 15, 60, 300, 1800],
      registers: [registry],
    }),
  };
}
