import { existsSync } from 'node:fs';
import bytes from 'bytes';
import { z } from 'zod';
import { isPublicSandboxKey, parseSecondKeys, PUBLIC_SANDBOX_KEY } from './verification/secondKeys';
import { parsePaymentApiCredentials } from './paymentApi/credentials';
import type { ReconciliationSettings } from './reconciliation/reconciliation';
import { parseBasicCredentials } from './intake/requestChecks';
import { parseSourceAllowlist, parseTrustProxy } from './intake/sourceAddress';
import { MIN_HISTORY_RETENTION_MS } from './history/days';
import { parseConsoleTokens, type ConsoleToken } from './console/session';

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
const durationMs = (fallback: number, min = 0, max = Number.MAX_SAFE_INTEGER) =>
  duration.default(fallback).pipe(z.number().min(min).max(max));

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
interface SettingSource {
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

function sourceOf(schema: z.core.$ZodType): SettingSource {
  const source = sources.get(schema);
  if (source === undefined) throw new Error('a setting not declared with fromEnv');
  return source;
}

/** Every setting of the service, in the order .env.example lists them (what each means is said there too). */
const settings = z.object({
  /** PORT: the public port, POST /notifications. */
  port: fromEnv('PORT', port().default(8080)),
  /** ADMIN_PORT: probes, metrics and the projections; never public. */
  adminPort: fromEnv('ADMIN_PORT', port().default(9090)),
  /** HOST: the address both ports bind to. */
  host: fromEnv('HOST', nonEmpty().default('0.0.0.0')),
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
  databaseTimeoutMs: fromEnv('DATABASE_TIMEOUT', durationMs(3000, 100, 60_000)),
  /** DATABASE_PIPELINE: send a batch's statements without waiting for each answer (pg's pipeline mode). */
  databasePipeline: fromEnv('DATABASE_PIPELINE', boolean.default(true)),
  /** DATABASE_WRITE_LANES: recording transactions at once, each on its own connection (at most DATABASE_POOL_MAX - 1). */
  databaseWriteLanes: fromEnv('DATABASE_WRITE_LANES', count(1, 16).default(1)),
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
  /** BODY_RETENTION: raw bodies (buyer data) of days wholly older are purged by the history maintainer; `off` keeps them. */
  bodyRetentionMs: fromEnv('BODY_RETENTION', retention(30 * 86_400_000, 86_400_000, 'at least 1d')),
  /** LOG_LEVEL: pino's level. */
  logLevel: fromEnv(
    'LOG_LEVEL',
    z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  ),
  /** SHUTDOWN_TIMEOUT: longest a graceful stop waits for in-flight requests. */
  shutdownTimeoutMs: fromEnv('SHUTDOWN_TIMEOUT', durationMs(20_000, 0, 300_000)),
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
  /** CONSOLE_SESSION_SECRET: signs the session cookie; the same on every replica. Required in production with tokens. Secret. */
  consoleSessionSecret: fromEnv(
    'CONSOLE_SESSION_SECRET',
    z.string().min(32, 'must be at least 32 characters').nullable().default(null),
  ),
  /** CONSOLE_SESSION_TTL: a session ends this long after sign-in (a working shift). */
  consoleSessionTtlMs: fromEnv('CONSOLE_SESSION_TTL', durationMs(8 * 3_600_000, 60_000, 7 * 86_400_000)),
  /** CONSOLE_VIEWERS_SEE_PERSONAL_DATA: viewers see raw bodies whole; off: the buyer's fields are redacted for them. */
  consoleViewersSeePersonalData: fromEnv('CONSOLE_VIEWERS_SEE_PERSONAL_DATA', boolean.default(false)),
  /** CONSOLE_QUIET_AFTER: needs attention says so when no notification arrived for this long. */
  consoleQuietAfterMs: fromEnv('CONSOLE_QUIET_AFTER', durationMs(3_600_000, 60_000, 7 * 86_400_000)),
  /** AUDIT_RETENTION: console audit rows older are deleted by the history maintainer and `purge`; `off` keeps them. */
  auditRetentionMs: fromEnv('AUDIT_RETENTION', retention(365 * 86_400_000, 86_400_000, 'at least 1d')),
});

/** Reconciliation against the payment service's API (src/reconciliation/), off without PAYMENT_API_URL. */
const reconciliationSettings = z.object({
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
  timeoutMs: fromEnv('PAYMENT_API_TIMEOUT', durationMs(10_000, 100, 300_000)),
  /** PAYMENT_API_MAX_IN_FLIGHT: API requests at once, per process. */
  maxInFlight: fromEnv('PAYMENT_API_MAX_IN_FLIGHT', count(1, 64).default(4)),
  /** PAYMENT_API_MAX_PER_SECOND: API requests started per second, per process. */
  maxPerSecond: fromEnv('PAYMENT_API_MAX_PER_SECOND', z.coerce.number().min(0.1).max(1000).default(10)),
  /** RECONCILE_AFTER: an open order is checked this long after its last observation. */
  afterMs: fromEnv('RECONCILE_AFTER', durationMs(5 * 60_000, 1000)),
  /** RECONCILE_GIVE_UP: checks of an order stop this long after its last observation. */
  giveUpMs: fromEnv('RECONCILE_GIVE_UP', durationMs(7 * 86_400_000, 60_000)),
  /** RECONCILE_INTERVAL: how often the sweep looks for due work. */
  intervalMs: fromEnv('RECONCILE_INTERVAL', durationMs(30_000, 100, 86_400_000)),
});

/** This machine only: localhost, 127.0.0.0/8 or ::1. */
export const isLoopbackHost = (host: string): boolean => /^(localhost|127(\.\d{1,3}){3}|\[?::1\]?)$/i.test(host);

/**
 * An http:// address the client secrets must not go to without PAYMENT_API_ALLOW_HTTP: any in production; outside
 * it, one of another host (a double on this machine is what local runs and the tests use).
 */
function inClear(url: string | undefined, production: boolean): boolean {
  if (url === undefined) return false;
  const { protocol, hostname } = new URL(url);
  return protocol === 'http:' && (production || !isLoopbackHost(hostname));
}

function isBaseUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.search === '' && url.hash === '';
  } catch {
    return false;
  }
}

/**
 * Reads one group of settings: each from its variable (or its local default), every problem named by
 * the variable, never by a value.
 */
function readGroup<Shape extends z.ZodRawShape>(
  group: z.ZodObject<Shape>,
  valueOf: (source: SettingSource) => string | undefined,
  problems: string[],
): z.output<z.ZodObject<Shape>> | null {
  const input = Object.fromEntries(
    Object.entries(group.shape).map(([key, schema]) => [key, valueOf(sourceOf(schema))]),
  );
  const result = group.safeParse(input);
  if (result.success) return result.data;
  for (const issue of result.error.issues) {
    const key = issue.path[0];
    const schema = typeof key === 'string' ? group.shape[key] : undefined;
    problems.push(`${schema ? sourceOf(schema).env : 'environment'}: ${issue.message}`);
  }
  return null;
}

/** Loads ./.env for local runs (Node's own loader); variables already set win. */
export function loadDotEnv(): void {
  if (existsSync('.env')) process.loadEnvFile('.env');
}

/** NODE_ENV, in any case and with spaces around it; anything else is refused rather than read as not production. */
const nodeEnv = z
  .string()
  .trim()
  .toLowerCase()
  .pipe(z.enum(['production', 'development', 'test'], 'must be production, development or test'));

/**
 * Reads and validates the environment; throws ConfigError naming every problem (never a value).
 * Outside production (NODE_ENV not `production`), a setting with a local default left unset takes it
 * (the public sandbox key, loopback, the embedded Postgres, the broker on this machine), named in
 * `localDefaults`; in production each is required or keeps its production default. A process that
 * does not receive or publish says so in `needs` (migrations: neither), and is not asked for what
 * it does not use.
 */
export function loadConfig(env: NodeJS.ProcessEnv, needs: Partial<ProcessNeeds> = {}): Config {
  // Empty strings mean "not set", so a blank line in .env or a Helm value falls back to the default.
  const present = (name: string): string | undefined => (env[name] === '' ? undefined : env[name]);
  const problems: string[] = [];
  const mode = nodeEnv.optional().safeParse(present('NODE_ENV'));
  if (!mode.success) problems.push(`NODE_ENV: ${mode.error.issues.map((issue) => issue.message).join('; ')}`);
  // An unreadable NODE_ENV takes no local default either: it may have meant production.
  const production = !mode.success || mode.data === 'production';
  const receiving = needs.receiving ?? true;
  // The service publishes only with its relay on: a pod without it needs no broker.
  const relayOn = settings.shape.relayEnabled.safeParse(present('RELAY_ENABLED')).data ?? true;
  const uses: ProcessNeeds = { receiving, publishing: needs.publishing ?? (receiving && relayOn) };
  const localDefaults: string[] = [];
  const valueOf = ({ env: name, local }: SettingSource): string | undefined => {
    const value = present(name);
    if (value !== undefined || local === undefined || (local.neededBy !== undefined && !uses[local.neededBy]))
      return value;
    if (!production) {
      localDefaults.push(name);
      return local.value;
    }
    if (local.requiredInProduction !== undefined && mode.success)
      problems.push(`${name}: is required with NODE_ENV=production (${local.requiredInProduction})`);
    return undefined;
  };
  const base = readGroup(settings, valueOf, problems);
  const reconciliation = readGroup(reconciliationSettings, valueOf, problems);
  if (present('PAYMENT_API_URL') !== undefined && present('PAYMENT_API_CREDENTIALS') === undefined)
    problems.push(
      'PAYMENT_API_CREDENTIALS: is required with PAYMENT_API_URL (comma-separated posId:clientId:clientSecret entries)',
    );
  if (reconciliation && reconciliation.giveUpMs <= reconciliation.afterMs)
    problems.push('RECONCILE_GIVE_UP: must be longer than RECONCILE_AFTER');
  if (reconciliation && inClear(reconciliation.paymentApiUrl, production) && !reconciliation.allowHttp)
    problems.push(
      'PAYMENT_API_URL: is http:// (in clear): the client secrets and tokens would travel unencrypted; use https://, or set ' +
        'PAYMENT_API_ALLOW_HTTP=true if that is meant (a TLS sidecar on this host, a test double)',
    );
  if (
    base !== null &&
    production &&
    base.consoleSessionSecret === null &&
    base.consoleOperatorTokens.length + base.consoleViewerTokens.length > 0
  )
    problems.push(
      'CONSOLE_SESSION_SECRET: is required with NODE_ENV=production when console tokens are set (32 characters or ' +
        'more, the same on every replica)',
    );
  if (base === null || reconciliation === null || problems.length > 0) throw new ConfigError(problems);
  const { paymentApiUrl, allowHttp: _checkedAbove, ...client } = reconciliation;
  return {
    ...base,
    production,
    localDefaults,
    // What src/reconciliation/ takes, checked here: a setting added to one side only fails tsc.
    reconciliation:
      paymentApiUrl === undefined ? null : ({ ...client, paymentApiUrl } satisfies ReconciliationSettings),
  };
}

/**
 * What a valid configuration may still get wrong, said at start (warn): settings that let anyone in, or
 * that do not take effect as written. Never a secret.
 */
/** The broker of a process that publishes: loadConfig required AMQP_URL for it (never null there). */
export function brokerUrl(config: Pick<Config, 'amqpUrl'>): string {
  if (config.amqpUrl === null)
    throw new ConfigError(['AMQP_URL: is required to publish or watch events (amqp://user:password@host:port)']);
  return config.amqpUrl;
}

/**
 * Recording transactions at once: DATABASE_WRITE_LANES, capped so that one connection of the pool stays
 * free for readiness and the admin API.
 */
export function writeLanes(config: Pick<Config, 'databaseWriteLanes' | 'databasePoolMax'>): number {
  return Math.min(config.databaseWriteLanes, Math.max(1, config.databasePoolMax - 1));
}

/**
 * Everyone who may sign in to the console: its operators and viewers, and ADMIN_TOKEN's holder as the operator
 * `admin` (the admin API's token keeps working, in the console too).
 */
export function consoleTokens(
  config: Pick<Config, 'consoleOperatorTokens' | 'consoleViewerTokens' | 'adminToken'>,
): ConsoleToken[] {
  const named = [...config.consoleOperatorTokens, ...config.consoleViewerTokens];
  return config.adminToken === null || named.some((t) => t.name === 'admin')
    ? named
    : [...named, { name: 'admin', token: config.adminToken, role: 'operator' }];
}

export function configurationWarnings(config: Config): string[] {
  const warnings: string[] = [];
  if (writeLanes(config) < config.databaseWriteLanes)
    warnings.push(
      `DATABASE_WRITE_LANES=${config.databaseWriteLanes} is more than DATABASE_POOL_MAX - 1 allows: ` +
        `${writeLanes(config)} lane(s) run; raise DATABASE_POOL_MAX or lower DATABASE_WRITE_LANES`,
    );
  if (config.sourceAllowlist.any) warnings.push('ALLOWED_SOURCE_IPS=any: the source address check is disabled');
  if ((config.sourceAllowlist.production || config.sourceAllowlist.any) && config.secondKeys.some(isPublicSandboxKey)) {
    warnings.push(
      `SECOND_KEYS holds the public sandbox key of POS ${PUBLIC_SANDBOX_KEY.posId} (published in the payment ` +
        "service's documentation) while production senders are allowed: anyone can sign with it; remove it",
    );
  }
  if (config.reconciliation && config.adminToken === null && !isLoopbackHost(config.host)) {
    warnings.push(
      `PAYMENT_API_URL is set (reconciliation on) and ADMIN_TOKEN is not, while the admin port listens on ` +
        `HOST=${config.host}: whoever reaches ADMIN_PORT can read every order and make this service ask the payment ` +
        'API with its credentials; set ADMIN_TOKEN, or HOST=127.0.0.1',
    );
  }
  if (config.trustProxy.kind === 'hops') {
    warnings.push(
      `TRUST_PROXY=${config.trustProxy.hops} believes X-Forwarded-For from whichever peer connects: any client ` +
        "that reaches the port directly can choose its source address; list the proxies' addresses instead",
    );
  }
  return warnings;
}
