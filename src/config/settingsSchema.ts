import bytes from 'bytes';
import { z } from 'zod';
import { parseSecondKeys, PUBLIC_SANDBOX_KEY } from '../verification/secondKeys';
import { parsePaymentApiCredentials } from '../paymentApi/credentials';
import { parseBasicCredentials } from '../intake/requestChecks';
import { parseSourceAllowlist, parseTrustProxy } from '../intake/sourceAddress';
import { MIN_HISTORY_RETENTION_MS } from '../partitions/partitionDays';
import { canonicalLocale, canonicalTimeZone } from '../console/language/localTime';
import { DEFAULT_PAYMENT_SERVICE_TIME_ZONE } from '../domain/paymentServiceTime';
import { parseConsoleTokens } from '../console/sessions/session';
import { parseAdminOrigins } from '../http/origins';
import { parseTeamTokens } from '../admin/tokens';
import { parseExpectedEventTypes } from '../console/attention/expectedEvents';

/** The reconciliation settings (PAYMENT_API_*, RECONCILE_*), as src/reconciliation/ takes them. */
export type ReconciliationConfig = Omit<z.output<typeof reconciliationSettings>, 'allowHttp' | 'paymentApiUrl'> & {
  paymentApiUrl: string;
};

/**
 * The whole configuration, read once from the environment at start (documented in .env.example): every
 * setting of `settings` below, and what is derived from them.
 */
export type Config = z.output<typeof settings> & {
  /** NODE_ENV=production: no local default is ever taken (each setting that has one is then required). */
  production: boolean;
  /** The settings that took a local default (unset, not production), for the start log. */
  localDefaults: string[];
  /** Checking orders against the payment service's API; null (off) without PAYMENT_API_URL. */
  reconciliation: ReconciliationConfig | null;
  /** Reconciliation settings given while PAYMENT_API_URL is not: they take no effect (a start warning). */
  unusedSettings: string[];
  /** Settings no longer read that are still set (a start warning): RETIRED_SETTINGS says why each went. */
  retiredSettings: string[];
};

/** Settings the service read once and no longer does, with what replaced them: set, they are warned about. */
export const RETIRED_SETTINGS: Readonly<Record<string, string>> = {
  CONSOLE_SESSION_SECRET: 'console sessions are held in the database now, the same for every replica',
};

/** Sources allowed by default outside production: this machine only. */
export const LOOPBACK_SOURCES = '127.0.0.1,::1';

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

const DURATION = /^(\d+)\s*(ms|s|m|h|d)?$/;
const DURATION_UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `500ms`, `30s`, `15m`, `12h`, `7d`; a bare number is seconds. */
export function parseDuration(value: string): number | null {
  const match = DURATION.exec(value.trim());
  if (!match) return null;
  return Number(match[1]) * (DURATION_UNIT_MS[match[2] ?? 's'] ?? 1000);
}

const boolean = z
  .string()
  .trim()
  .toLowerCase()
  .refine((v) => ['true', 'false', '1', '0', 'yes', 'no'].includes(v), 'must be true or false')
  .transform((v) => ['true', '1', 'yes'].includes(v));

// 0 asks the OS for a free port (used by tests).
const port = () => z.coerce.number().int().min(0).max(65535);

const count = (min: number, max: number) => z.coerce.number().int().min(min).max(max);

const duration = z.string().transform((value, ctx) => {
  const ms = parseDuration(value);
  if (ms === null) {
    ctx.addIssue({ code: 'custom', message: 'must be a duration such as 30s, 15m, 12h or 7d' });
    return z.NEVER;
  }
  return ms;
});

/** A duration with a default (in ms) and bounds (in ms). */
const durationMs = (
  fallback: number,
  { min = 0, max = Number.MAX_SAFE_INTEGER }: { min?: number; max?: number } = {},
) => duration.default(fallback).pipe(z.number().min(min).max(max));

/** A retention: a duration of at least `min` (`atLeast` says it), or `off` (null: kept for ever). */
const retention = (fallback: number, min: number, atLeast: string) =>
  z
    .string()
    .default(String(fallback / 1000))
    .transform((value, ctx): number | null => {
      if (value.trim().toLowerCase() === 'off') return null;
      const ms = parseDuration(value);
      if (ms === null) {
        ctx.addIssue({ code: 'custom', message: 'must be a duration such as 30d or 4320h, or off' });
        return z.NEVER;
      }
      if (ms < min) {
        ctx.addIssue({ code: 'custom', message: `must be ${atLeast}, or off` });
        return z.NEVER;
      }
      return ms;
    });

/** A size such as 64kb or 32mb, within bounds. */
const size = (fallback: string, min: number, max: number) =>
  z
    .string()
    .default(fallback)
    .transform((value, ctx) => {
      const parsed = bytes.parse(value);
      if (parsed === null || !Number.isFinite(parsed) || parsed < min || parsed > max) {
        ctx.addIssue({
          code: 'custom',
          message: `must be a size from ${bytes(min)} to ${bytes(max)}, such as ${fallback}`,
        });
        return 0;
      }
      return parsed;
    });

/** A list-valued setting read by its module's parser, which names each problem. */
const list = <T>(parse: (value: string) => { value: T; problems: string[] }) =>
  z.string().transform((text, ctx) => {
    const { value, problems } = parse(text);
    for (const message of problems) ctx.addIssue({ code: 'custom', message });
    return value;
  });

const nonEmpty = () => z.string().trim().min(1);

/**
 * A value meant for trying the service on one machine: taken outside production when the variable is
 * unset, and named in the start log (`localDefaults`).
 */
interface LocalDefaultRule {
  /** The value taken; none: the setting stays unset (DATABASE_URL: the embedded Postgres). */
  value?: string;
  /** In production the setting is then required, and this says what to set; without it, the schema's default. */
  requiredInProduction?: string;
  /** Only a process that uses it needs it: one that receives notifications, or one that publishes events. */
  neededBy?: keyof ProcessNeeds;
}

/**
 * What a process uses besides the database: the service receives (SECOND_KEYS) and, with its relay on,
 * publishes (AMQP_URL); `npm run relay` publishes only; migrations and most commands do neither.
 */
export interface ProcessNeeds {
  receiving: boolean;
  publishing: boolean;
}

/** Where a setting comes from: its environment variable, and its local default if it has one. */
export interface SettingSource {
  env: string;
  local?: LocalDefaultRule;
}

const sources = z.registry<SettingSource>();

/** A setting: the environment variable it is read from, how, and its local default if any. */
function fromEnv<S extends z.ZodType>(env: string, schema: S, local?: LocalDefaultRule): S {
  if (sources.has(schema)) throw new Error(`${env}: each setting needs a schema of its own`);
  sources.add(schema, local === undefined ? { env } : { env, local });
  return schema;
}

export function sourceOf(schema: z.core.$ZodType): SettingSource {
  const source = sources.get(schema);
  if (source === undefined) throw new Error('a setting not declared with fromEnv');
  return source;
}

/** Every setting of the service, in the order .env.example lists them (what each means is said there too). */

/** An IANA time zone name, in its canonical spelling (`europe/warsaw` is `Europe/Warsaw`); `fallback` when unset. */
function timeZone(fallback: string) {
  return z
    .string()
    .trim()
    .default(fallback)
    .transform((value, ctx) => {
      const zone = canonicalTimeZone(value);
      if (zone === null)
        ctx.addIssue({ code: 'custom', message: 'must be an IANA time zone name such as Europe/Warsaw or UTC' });
      return zone ?? fallback;
    });
}

export const settings = z.object({
  /** PORT: the public port, POST /notifications. */
  port: fromEnv('PORT', port().default(8080)),
  /** ADMIN_PORT: probes, metrics and the projections; never public. */
  adminPort: fromEnv('ADMIN_PORT', port().default(9090)),
  /** HOST: the address both ports bind to; outside production, loopback unless set (nothing open by accident). */
  host: fromEnv('HOST', nonEmpty().default('0.0.0.0'), { value: '127.0.0.1' }),
  /** SECOND_KEYS: the POS second keys a signature is checked against. Secret. */
  secondKeys: fromEnv(
    'SECOND_KEYS',
    list((value) => {
      const { keys, problems } = parseSecondKeys(value);
      return { value: keys, problems };
    }).default([]),
    {
      value: `${PUBLIC_SANDBOX_KEY.posId}:${PUBLIC_SANDBOX_KEY.key}`,
      requiredInProduction: 'comma-separated posId:secondKey entries; the public sandbox key is a local default only',
      neededBy: 'receiving',
    },
  ),
  /** ALLOWED_SOURCE_IPS: who may deliver (addresses, CIDRs, presets). */
  sourceAllowlist: fromEnv(
    'ALLOWED_SOURCE_IPS',
    list((value) => {
      const { allowlist, problems } = parseSourceAllowlist(value);
      return { value: allowlist, problems };
    }).default(parseSourceAllowlist('production').allowlist),
    { value: LOOPBACK_SOURCES },
  ),
  /** TRUST_PROXY: the proxies whose X-Forwarded-For is believed (Express's `trust proxy` meaning). */
  trustProxy: fromEnv(
    'TRUST_PROXY',
    list((value) => {
      const { trust, problems } = parseTrustProxy(value);
      return { value: trust, problems };
    }).default({ kind: 'none' }),
  ),
  /** NOTIFY_BASIC_AUTH: the user:password the sender must present; null: none asked. Secret. */
  notifyBasicAuth: fromEnv(
    'NOTIFY_BASIC_AUTH',
    z
      .string()
      .transform((value, ctx) => {
        const credentials = parseBasicCredentials(value);
        if (credentials === null) ctx.addIssue({ code: 'custom', message: 'must be user:password' });
        return credentials;
      })
      .default(null),
  ),
  /** BODY_LIMIT: the largest body read; larger ones get 413 unread. */
  bodyLimitBytes: fromEnv('BODY_LIMIT', size('64kb', 1024, 64 * 1024 * 1024)),
  /** UNVERIFIED_BODIES_LIMIT: bytes held at once for bodies whose signature is not checked yet; past it, 503. */
  unverifiedBodiesLimitBytes: fromEnv('UNVERIFIED_BODIES_LIMIT', size('32mb', 64 * 1024, 1024 * 1024 * 1024)),
  /** ADMIN_TOKEN: bearer token of the admin port's data routes; null: open (the port must not be reachable). */
  adminToken: fromEnv('ADMIN_TOKEN', z.string().min(16, 'must be at least 16 characters').nullable().default(null)),
  /**
   * EVENT_TEAM_TOKENS: name:token:queue-prefix entries of the downstream teams: each token reads the event feed and
   * replays into the queues whose names start with its prefix, and opens nothing else. Secret.
   */
  eventTeamTokens: fromEnv(
    'EVENT_TEAM_TOKENS',
    list((value) => {
      const { tokens, problems } = parseTeamTokens(value);
      return { value: tokens, problems };
    }).default([]),
  ),
  /**
   * ADMIN_ORIGINS: the origins (scheme://host[:port]) the admin port's console and JSON API answer besides
   * loopback: the console's public address, the Service's names in the cluster. Any other Host: 421.
   */
  adminOrigins: fromEnv(
    'ADMIN_ORIGINS',
    list((value) => {
      const { origins, problems } = parseAdminOrigins(value);
      return { value: origins, problems };
    }).default([]),
  ),
  /** ADMIN_CONCURRENCY: admin data requests served at once; past it, 503. */
  adminConcurrency: fromEnv('ADMIN_CONCURRENCY', count(1, 64).default(4)),
  /** DATABASE_URL: the Postgres; null outside production when unset: the embedded Postgres in dataDir. Secret. */
  databaseUrl: fromEnv(
    'DATABASE_URL',
    z
      .string()
      .trim()
      .refine((v) => /^postgres(ql)?:\/\/[^/]+\/[^/?]+/.test(v), 'must be postgres://user@host:port/database')
      .nullable()
      .default(null),
    {
      requiredInProduction: 'postgres://user@host:port/database; the embedded Postgres is for local runs only',
    },
  ),
  /** DATA_DIR: where the embedded Postgres keeps its cluster. */
  dataDir: fromEnv('DATA_DIR', nonEmpty().default('.data')),
  /** DATABASE_POOL_MAX: connections in the service's pool. */
  databasePoolMax: fromEnv('DATABASE_POOL_MAX', count(1, 200).default(10)),
  /** DATABASE_TIMEOUT: longest a request waits for the database (pool slot or statement) before answering 503. */
  databaseTimeoutMs: fromEnv('DATABASE_TIMEOUT', durationMs(3000, { min: 100, max: 60_000 })),
  /** DATABASE_PIPELINE: send a batch's statements without waiting for each answer (pg's pipeline mode). */
  databasePipeline: fromEnv('DATABASE_PIPELINE', boolean.default(true)),
  /** DATABASE_WRITE_LANES: recording transactions at once, each on its own connection (at most DATABASE_POOL_MAX - 1). */
  databaseWriteLanes: fromEnv('DATABASE_WRITE_LANES', count(1, 16).default(1)),
  /**
   * RECORDER_KNOWN_NOTIFICATIONS: committed notifications each replica remembers, so that their exact repeats skip the
   * read (about 1.4 kB of heap each: 66 MB at the default, 265 MB at the most; 0 turns the cache off).
   */
  recorderKnownNotifications: fromEnv('RECORDER_KNOWN_NOTIFICATIONS', count(0, 200_000).default(50_000)),
  /**
   * RECORDER_KEPT_ORDERS: recent orders whose state each replica keeps, so that a batch of them is one statement,
   * without a read, its write checked against the database (docs/decisions/0024; 0 turns it off).
   */
  recorderKeptOrders: fromEnv('RECORDER_KEPT_ORDERS', count(0, 100_000).default(20_000)),
  /** MIGRATE_ON_START: apply pending migrations at start. */
  migrateOnStart: fromEnv('MIGRATE_ON_START', boolean.default(true)),
  /** RELAY_ENABLED: run the outbox relay inside the service. */
  relayEnabled: fromEnv('RELAY_ENABLED', boolean.default(true)),
  /** AMQP_URL: the broker; null where the process publishes nothing and none is set. Secret (may hold a password). */
  amqpUrl: fromEnv(
    'AMQP_URL',
    z
      .string()
      .trim()
      .refine((v) => /^amqps?:\/\//.test(v), 'must be amqp://user:password@host:port[/vhost]')
      .nullable()
      .default(null),
    {
      value: 'amqp://guest:guest@127.0.0.1:5672',
      requiredInProduction: 'amqp://user:password@host:port[/vhost]; RELAY_ENABLED=false where nothing publishes',
      neededBy: 'publishing',
    },
  ),
  /**
   * JOURNAL_AMQP_URL: the broker of the journal of recorded notifications (src/failover/), best a vhost that only the
   * service's user may read (it holds bodies); null: AMQP_URL's. Secret (may hold a password).
   */
  journalAmqpUrl: fromEnv(
    'JOURNAL_AMQP_URL',
    z
      .string()
      .trim()
      .refine((v) => /^amqps?:\/\//.test(v), 'must be amqp://user:password@host:port[/vhost]')
      .nullable()
      .default(null),
  ),
  /** JOURNAL_QUEUE: the journal's queue (a quorum queue the service declares). */
  journalQueue: fromEnv(
    'JOURNAL_QUEUE',
    nonEmpty()
      .max(255)
      .refine(
        (v) => !/\p{Cc}/u.test(v) && !v.startsWith('amq.'),
        'must be a queue name without control characters, not amq.*',
      )
      .default('payment-notification-receiver.journal'),
  ),
  /** JOURNAL_RETENTION: how long the journal keeps a recorded notification; `off`: no journal. */
  journalRetentionMs: fromEnv(
    'JOURNAL_RETENTION',
    retention(3_600_000, 5 * 60_000, 'from 5m to 24h').pipe(
      z.number().max(86_400_000, 'must be from 5m to 24h, or off').nullable(),
    ),
  ),
  /** JOURNAL_MAX_BYTES: the journal's bound; past it, the oldest entries go first. */
  journalMaxBytes: fromEnv('JOURNAL_MAX_BYTES', size('1gb', 16 * 1024 * 1024, 64 * 1024 * 1024 * 1024)),
  /**
   * FAILOVER_RECONCILE_WINDOW: after a failover, every order the promoted database saw change this long before its
   * last point is checked against the payment API (what the journal could not hold); 0: none.
   */
  failoverReconcileWindowMs: fromEnv('FAILOVER_RECONCILE_WINDOW', durationMs(10 * 60_000, { max: 86_400_000 })),
  /** AMQP_EXCHANGE: the topic exchange the events are published to. */
  amqpExchange: fromEnv('AMQP_EXCHANGE', nonEmpty().default('payment.events')),
  /** EVENT_SOURCE: the CloudEvents `source` of every event. */
  eventSource: fromEnv('EVENT_SOURCE', nonEmpty().default('urn:payment-notification-receiver')),
  /** OUTBOX_RETENTION: published events are deleted from the outbox after this long. */
  outboxRetentionMs: fromEnv('OUTBOX_RETENTION', durationMs(7 * 86_400_000)),
  /**
   * HISTORY_RETENTION: days of history (notifications, variants, deliveries) wholly older are removed by the
   * history maintainer; `off` keeps them. At least 72h: the sender retries for 72 hours.
   */
  historyRetentionMs: fromEnv(
    'HISTORY_RETENTION',
    retention(180 * 86_400_000, MIN_HISTORY_RETENTION_MS, 'at least 72h (the sender retries for 72 hours)'),
  ),
  /** BODY_RETENTION: raw bodies (buyer data) of days wholly older are purged by the partition maintainer; `off` keeps them. */
  bodyRetentionMs: fromEnv('BODY_RETENTION', retention(30 * 86_400_000, 86_400_000, 'at least 1d')),
  /** LOG_LEVEL: pino's level. */
  logLevel: fromEnv(
    'LOG_LEVEL',
    z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  ),
  /** SHUTDOWN_TIMEOUT: longest a graceful stop waits for in-flight requests. */
  shutdownTimeoutMs: fromEnv('SHUTDOWN_TIMEOUT', durationMs(20_000, { max: 300_000 })),
  // The console (src/console/, issue 40): who may sign in, how long a session lasts, what viewers see.
  /** CONSOLE_OPERATOR_TOKENS: name:token entries of the people who may act (ADMIN_TOKEN also signs in as one). Secret. */
  consoleOperatorTokens: fromEnv(
    'CONSOLE_OPERATOR_TOKENS',
    list((value) => {
      const { tokens, problems } = parseConsoleTokens(value, 'operator');
      return { value: tokens, problems };
    }).default([]),
  ),
  /** CONSOLE_VIEWER_TOKENS: name:token entries of the people who may read (support). Secret. */
  consoleViewerTokens: fromEnv(
    'CONSOLE_VIEWER_TOKENS',
    list((value) => {
      const { tokens, problems } = parseConsoleTokens(value, 'viewer');
      return { value: tokens, problems };
    }).default([]),
  ),
  /** CONSOLE_SESSION_TTL: a session ends this long after sign-in (a working shift). */
  consoleSessionTtlMs: fromEnv('CONSOLE_SESSION_TTL', durationMs(8 * 3_600_000, { min: 60_000, max: 7 * 86_400_000 })),
  /** CONSOLE_SESSION_IDLE: a session ends when unused this long (within a minute: last use is written once a minute). */
  consoleSessionIdleMs: fromEnv(
    'CONSOLE_SESSION_IDLE',
    durationMs(30 * 60_000, { min: 2 * 60_000, max: 7 * 86_400_000 }),
  ),
  /** CONSOLE_VIEWERS_SEE_PERSONAL_DATA: viewers see raw bodies whole; off: the buyer's fields are redacted for them. */
  consoleViewersSeePersonalData: fromEnv('CONSOLE_VIEWERS_SEE_PERSONAL_DATA', boolean.default(false)),
  /** CONSOLE_QUIET_AFTER: needs attention says so when no notification arrived for this long. */
  consoleQuietAfterMs: fromEnv('CONSOLE_QUIET_AFTER', durationMs(3_600_000, { min: 60_000, max: 7 * 86_400_000 })),
  /** PAYMENT_SERVICE_TIME_ZONE: the IANA zone the payment service's times without an offset are in. */
  paymentServiceTimeZone: fromEnv('PAYMENT_SERVICE_TIME_ZONE', timeZone(DEFAULT_PAYMENT_SERVICE_TIME_ZONE)),
  /** CONSOLE_TIME_ZONE: the IANA time zone every console page shows times in and reads filters in. */
  consoleTimeZone: fromEnv('CONSOLE_TIME_ZONE', timeZone('UTC')),
  /** CONSOLE_LOCALE: how the console writes amounts and dates (a BCP 47 locale). */
  consoleLocale: fromEnv(
    'CONSOLE_LOCALE',
    z
      .string()
      .trim()
      .default('en-GB')
      .transform((value, ctx) => {
        const locale = canonicalLocale(value);
        if (locale === null) ctx.addIssue({ code: 'custom', message: 'must be a locale such as en-GB or pl-PL' });
        return locale ?? 'en-GB';
      }),
  ),
  /**
   * CONSOLE_CONFIRM_WITHIN: how long the shop has to confirm a payment waiting for its confirmation before the payment
   * service cancels it (the days set per pay method in its panel, which it never sends); null: not known.
   */
  consoleConfirmWithinMs: fromEnv(
    'CONSOLE_CONFIRM_WITHIN',
    duration
      .pipe(
        z
          .number()
          .min(3_600_000, 'must be at least 1h')
          .max(365 * 86_400_000, 'must be at most 365d'),
      )
      .nullable()
      .default(null),
  ),
  /**
   * EXPECTED_UNROUTED_EVENT_TYPES: event types no team is meant to bind (docs/EVENTS.md: a team binds what it needs),
   * so that one reaching no queue is counted but not raised on the board. An unknown type stops the start.
   */
  expectedUnroutedEventTypes: fromEnv('EXPECTED_UNROUTED_EVENT_TYPES', list(parseExpectedEventTypes).default([])),
  /** AUDIT_RETENTION: console audit rows older are deleted by the partition maintainer and `purge`; `off` keeps them. */
  auditRetentionMs: fromEnv('AUDIT_RETENTION', retention(365 * 86_400_000, 86_400_000, 'at least 1d')),
});

/** Reconciliation against the payment service's API (src/reconciliation/), off without PAYMENT_API_URL. */
export const reconciliationSettings = z.object({
  /** PAYMENT_API_URL: the payment API's base address, without a path. */
  paymentApiUrl: fromEnv(
    'PAYMENT_API_URL',
    z.string().trim().refine(isBaseUrl, 'must be an http(s) base URL such as https://secure.example.com').optional(),
  ),
  /** PAYMENT_API_CREDENTIALS: one OAuth client per POS. Secret. */
  credentials: fromEnv(
    'PAYMENT_API_CREDENTIALS',
    list((value) => {
      const { credentials, problems } = parsePaymentApiCredentials(value);
      return { value: credentials, problems };
    }).default([]),
  ),
  /**
   * PAYMENT_API_ALLOW_HTTP: take an http:// PAYMENT_API_URL in production (a TLS sidecar on this host, say);
   * without it production refuses one: the client secrets and tokens would travel in clear.
   */
  allowHttp: fromEnv('PAYMENT_API_ALLOW_HTTP', boolean.default(false)),
  /** PAYMENT_API_TIMEOUT: longest one payment API attempt may take, answer included. */
  timeoutMs: fromEnv('PAYMENT_API_TIMEOUT', durationMs(10_000, { min: 100, max: 300_000 })),
  /** PAYMENT_API_MAX_IN_FLIGHT: API requests at once, per process. */
  maxInFlight: fromEnv('PAYMENT_API_MAX_IN_FLIGHT', count(1, 64).default(4)),
  /** PAYMENT_API_MAX_PER_SECOND: API requests started per second, per process. */
  maxPerSecond: fromEnv('PAYMENT_API_MAX_PER_SECOND', z.coerce.number().min(0.1).max(1000).default(10)),
  /** RECONCILE_AFTER: an open order is checked this long after its last observation. */
  afterMs: fromEnv('RECONCILE_AFTER', durationMs(5 * 60_000, { min: 1000 })),
  /** RECONCILE_GIVE_UP: checks of an order stop this long after its last observation. */
  giveUpMs: fromEnv('RECONCILE_GIVE_UP', durationMs(7 * 86_400_000, { min: 60_000 })),
  /** RECONCILE_INTERVAL: how often the sweep looks for due work. */
  intervalMs: fromEnv('RECONCILE_INTERVAL', durationMs(30_000, { min: 100, max: 86_400_000 })),
});

/** An http(s) address without a query or fragment: what a path is appended to. */
function isBaseUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.search === '' && url.hash === '';
  } catch {
    return false;
  }
}

/**
 * Every environment variable the service reads: NODE_ENV (read apart, by load.ts) and each setting's. The README's
 * settings table and .env.example are checked against it (test/docs/settings.test.ts).
 */
export const SETTING_VARIABLES: readonly string[] = [
  'NODE_ENV',
  ...[...Object.values(settings.shape), ...Object.values(reconciliationSettings.shape)].map(
    (schema) => sourceOf(schema).env,
  ),
];
