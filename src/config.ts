import { existsSync } from 'node:fs';
import bytes from 'bytes';
import { z } from 'zod';
import { isPublicSandboxKey, parseSecondKeys, PUBLIC_SANDBOX_KEY, type SecondKey } from './verification/secondKeys';
import { parsePaymentApiCredentials } from './paymentApi/credentials';
import type { ReconciliationSettings } from './reconciliation/reconciliation';
import { parseSourceAllowlist, parseTrustProxy, type SourceAllowlist, type TrustProxy } from './intake/sourceAddress';

/** The whole configuration, read once from the environment at start (documented in .env.example). */
export interface Config {
  port: number;
  adminPort: number;
  host: string;
  /** NODE_ENV=production: no local default is ever taken (SECOND_KEYS and DATABASE_URL required). */
  production: boolean;
  /** The settings that took a local default (unset, not production), for the start log. */
  localDefaults: LocalDefault[];
  /** null: unset, outside production; the embedded Postgres in dataDir is used. */
  databaseUrl: string | null;
  /** DATA_DIR: where the embedded Postgres keeps its cluster. */
  dataDir: string;
  databasePoolMax: number;
  /** Longest a request waits for the database (pool slot or statement) before answering 503. */
  databaseTimeoutMs: number;
  /** Send a batch's statements without waiting for each answer (pg's pipeline mode). */
  databasePipeline: boolean;
  /** Recording transactions run at once (each on its own connection; at most DATABASE_POOL_MAX - 1). */
  databaseWriteLanes: number;
  migrateOnStart: boolean;
  secondKeys: SecondKey[];
  sourceAllowlist: SourceAllowlist;
  /** Express `trust proxy` value: false (none), a hop count, or proxy addresses/CIDRs. */
  trustProxy: TrustProxy;
  notifyBasicAuth: { user: string; password: string } | null;
  bodyLimitBytes: number;
  /** Bytes held at once for bodies whose signature is not checked yet; past it, 503. */
  unverifiedBodiesLimitBytes: number;
  /** Bearer token for the admin port's data routes; null: open (the port must not be reachable). */
  adminToken: string | null;
  /** Admin data requests served at once; past it, 503. */
  adminConcurrency: number;
  logLevel: string;
  shutdownTimeoutMs: number;
  relayEnabled: boolean;
  amqpUrl: string;
  amqpExchange: string;
  eventSource: string;
  outboxRetentionMs: number;
  /** Checking orders against the payment service's API; null (off) without PAYMENT_API_URL. */
  reconciliation: ReconciliationConfig | null;
}

/** The reconciliation settings (PAYMENT_API_*, RECONCILE_*), as src/reconciliation/ takes them. */
export type ReconciliationConfig = ReconciliationSettings;

/** A setting left unset that took a value meant for trying the service on one machine. */
export type LocalDefault = 'SECOND_KEYS' | 'ALLOWED_SOURCE_IPS' | 'DATABASE_URL';

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
const port = z.coerce.number().int().min(0).max(65535);

const duration = z.string().transform((value, ctx) => {
  const ms = parseDuration(value);
  if (ms === null) {
    ctx.addIssue({ code: 'custom', message: 'must be a duration such as 30s, 15m, 12h or 7d' });
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

const schema = z.object({
  PORT: port.default(8080),
  ADMIN_PORT: port.default(9090),
  HOST: z.string().trim().min(1).default('0.0.0.0'),
  DATABASE_URL: z
    .string()
    .trim()
    .optional()
    .refine(
      (v) => v === undefined || /^postgres(ql)?:\/\/[^/]+\/[^/?]+/.test(v),
      'must be postgres://user@host:port/database',
    ),
  DATA_DIR: z.string().trim().min(1).default('.data'),
  DATABASE_POOL_MAX: z.coerce.number().int().min(1).max(200).default(10),
  DATABASE_TIMEOUT: duration.default(3000).pipe(z.number().min(100).max(60_000)),
  DATABASE_PIPELINE: boolean.default(true),
  DATABASE_WRITE_LANES: z.coerce.number().int().min(1).max(16).default(1),
  MIGRATE_ON_START: boolean.default(true),
  SECOND_KEYS: z
    .string()
    .default('')
    .transform((value, ctx) => {
      if (value === '') return [];
      const { keys, problems } = parseSecondKeys(value);
      for (const message of problems) ctx.addIssue({ code: 'custom', message });
      return keys;
    }),
  ALLOWED_SOURCE_IPS: z.string().transform((value, ctx) => {
    const { allowlist, problems } = parseSourceAllowlist(value);
    for (const message of problems) ctx.addIssue({ code: 'custom', message });
    return allowlist;
  }),
  TRUST_PROXY: z
    .string()
    .default('')
    .transform((value, ctx) => {
      const { trust, problems } = parseTrustProxy(value);
      for (const message of problems) ctx.addIssue({ code: 'custom', message });
      return trust;
    }),
  NOTIFY_BASIC_AUTH: z
    .string()
    .optional()
    .transform((value, ctx) => {
      if (value === undefined || value === '') return null;
      const colon = value.indexOf(':');
      if (colon <= 0) {
        ctx.addIssue({ code: 'custom', message: 'must be user:password' });
        return null;
      }
      return { user: value.slice(0, colon), password: value.slice(colon + 1) };
    }),
  BODY_LIMIT: size('64kb', 1024, 64 * 1024 * 1024),
  UNVERIFIED_BODIES_LIMIT: size('32mb', 64 * 1024, 1024 * 1024 * 1024),
  ADMIN_TOKEN: z
    .string()
    .optional()
    .refine((v) => v === undefined || v.length >= 16, 'must be at least 16 characters'),
  ADMIN_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(4),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  SHUTDOWN_TIMEOUT: duration.default(20_000).pipe(z.number().min(0).max(300_000)),
  RELAY_ENABLED: boolean.default(true),
  AMQP_URL: z
    .string()
    .trim()
    .default('amqp://guest:guest@127.0.0.1:5672')
    .refine((v) => /^amqps?:\/\//.test(v), 'must be amqp://user:password@host:port[/vhost]'),
  AMQP_EXCHANGE: z.string().trim().min(1).default('payment.events'),
  EVENT_SOURCE: z.string().trim().min(1).default('urn:payment-notification-receiver'),
  OUTBOX_RETENTION: duration.default(7 * 86_400_000),
  PAYMENT_API_URL: z
    .string()
    .trim()
    .optional()
    .refine((v) => v === undefined || isBaseUrl(v), 'must be an http(s) base URL such as https://secure.example.com'),
  PAYMENT_API_CREDENTIALS: z
    .string()
    .optional()
    .transform((value, ctx) => {
      if (value === undefined) return [];
      const { credentials, problems } = parsePaymentApiCredentials(value);
      for (const message of problems) ctx.addIssue({ code: 'custom', message });
      return credentials;
    }),
  PAYMENT_API_ALLOW_HTTP: boolean.default(false),
  PAYMENT_API_TIMEOUT: duration.default(10_000).pipe(z.number().min(100).max(300_000)),
  PAYMENT_API_MAX_IN_FLIGHT: z.coerce.number().int().min(1).max(64).default(4),
  PAYMENT_API_MAX_PER_SECOND: z.coerce.number().min(0.1).max(1000).default(10),
  RECONCILE_AFTER: duration.default(5 * 60_000).pipe(z.number().min(1000)),
  RECONCILE_GIVE_UP: duration.default(7 * 86_400_000).pipe(z.number().min(60_000)),
  RECONCILE_INTERVAL: duration.default(30_000).pipe(z.number().min(100).max(86_400_000)),
});

function isBaseUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.search === '' && url.hash === '';
  } catch {
    return false;
  }
}

/** This machine only: localhost, 127.0.0.0/8 or ::1 (a URL's hostname brackets IPv6). */
const isLoopbackHost = (host: string): boolean => /^(localhost|127(\.\d{1,3}){3}|\[?::1\]?)$/i.test(host);

/** An http:// address of another host than this one (loopback: a local double, or a sidecar that adds TLS). */
function inClear(url: string | undefined): boolean {
  if (url === undefined) return false;
  const { protocol, hostname } = new URL(url);
  return protocol === 'http:' && !isLoopbackHost(hostname);
}

/** Loads ./.env for local runs (Node's own loader); variables already set win. */
export function loadDotEnv(): void {
  if (existsSync('.env')) process.loadEnvFile('.env');
}

/**
 * Reads and validates the environment; throws ConfigError naming every problem (never a value).
 * Outside production (NODE_ENV not `production`), SECOND_KEYS, ALLOWED_SOURCE_IPS and DATABASE_URL
 * left unset take local defaults (the public sandbox key, loopback, the embedded Postgres), named
 * in `localDefaults`; in production each is required or keeps its production default. Tools that
 * only migrate or relay pass `{ receiving: false }` (no SECOND_KEYS needed).
 */
export function loadConfig(env: NodeJS.ProcessEnv, { receiving = true }: { receiving?: boolean } = {}): Config {
  // Empty strings mean "not set", so a blank line in .env or a Helm value falls back to the default.
  const present = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const production = present.NODE_ENV === 'production';
  const localDefaults: LocalDefault[] = [];
  const withDefaults = { ...present };
  if (!production) {
    if (receiving && present.SECOND_KEYS === undefined) {
      localDefaults.push('SECOND_KEYS');
      withDefaults.SECOND_KEYS = `${PUBLIC_SANDBOX_KEY.posId}:${PUBLIC_SANDBOX_KEY.key}`;
    }
    if (present.ALLOWED_SOURCE_IPS === undefined) {
      localDefaults.push('ALLOWED_SOURCE_IPS');
      withDefaults.ALLOWED_SOURCE_IPS = LOOPBACK_SOURCES;
    }
    if (present.DATABASE_URL === undefined) localDefaults.push('DATABASE_URL');
  }
  withDefaults.ALLOWED_SOURCE_IPS ??= 'production';
  const result = schema.safeParse(withDefaults);
  const problems = result.success
    ? []
    : result.error.issues.map((issue) => `${issue.path.join('.') || 'environment'}: ${issue.message}`);
  if (receiving && withDefaults.SECOND_KEYS === undefined)
    problems.push(
      'SECOND_KEYS: is required with NODE_ENV=production (comma-separated posId:secondKey entries); ' +
        'the public sandbox key is a local default only',
    );
  if (production && present.DATABASE_URL === undefined)
    problems.push(
      'DATABASE_URL: is required with NODE_ENV=production (postgres://user@host:port/database); ' +
        'the embedded Postgres is for local runs only',
    );
  if (present.PAYMENT_API_URL !== undefined && present.PAYMENT_API_CREDENTIALS === undefined)
    problems.push(
      'PAYMENT_API_CREDENTIALS: is required with PAYMENT_API_URL (comma-separated posId:clientId:clientSecret entries)',
    );
  if (result.success && result.data.RECONCILE_GIVE_UP <= result.data.RECONCILE_AFTER)
    problems.push('RECONCILE_GIVE_UP: must be longer than RECONCILE_AFTER');
  if (result.success && inClear(result.data.PAYMENT_API_URL) && !result.data.PAYMENT_API_ALLOW_HTTP)
    problems.push(
      'PAYMENT_API_URL: is http:// to another host than this one, so the client secrets and tokens would travel in ' +
        'clear; use https://, or set PAYMENT_API_ALLOW_HTTP=true if that is meant (a test double)',
    );
  if (!result.success || problems.length > 0) throw new ConfigError(problems);
  const c = result.data;
  return {
    port: c.PORT,
    adminPort: c.ADMIN_PORT,
    host: c.HOST,
    production,
    localDefaults,
    databaseUrl: c.DATABASE_URL ?? null,
    dataDir: c.DATA_DIR,
    databasePoolMax: c.DATABASE_POOL_MAX,
    databaseTimeoutMs: c.DATABASE_TIMEOUT,
    databasePipeline: c.DATABASE_PIPELINE,
    databaseWriteLanes: c.DATABASE_WRITE_LANES,
    migrateOnStart: c.MIGRATE_ON_START,
    secondKeys: c.SECOND_KEYS,
    sourceAllowlist: c.ALLOWED_SOURCE_IPS,
    trustProxy: c.TRUST_PROXY,
    notifyBasicAuth: c.NOTIFY_BASIC_AUTH,
    bodyLimitBytes: c.BODY_LIMIT,
    unverifiedBodiesLimitBytes: c.UNVERIFIED_BODIES_LIMIT,
    adminToken: c.ADMIN_TOKEN ?? null,
    adminConcurrency: c.ADMIN_CONCURRENCY,
    logLevel: c.LOG_LEVEL,
    shutdownTimeoutMs: c.SHUTDOWN_TIMEOUT,
    relayEnabled: c.RELAY_ENABLED,
    amqpUrl: c.AMQP_URL,
    amqpExchange: c.AMQP_EXCHANGE,
    eventSource: c.EVENT_SOURCE,
    outboxRetentionMs: c.OUTBOX_RETENTION,
    reconciliation:
      c.PAYMENT_API_URL === undefined
        ? null
        : {
            paymentApiUrl: c.PAYMENT_API_URL,
            credentials: c.PAYMENT_API_CREDENTIALS,
            timeoutMs: c.PAYMENT_API_TIMEOUT,
            maxInFlight: c.PAYMENT_API_MAX_IN_FLIGHT,
            maxPerSecond: c.PAYMENT_API_MAX_PER_SECOND,
            afterMs: c.RECONCILE_AFTER,
            giveUpMs: c.RECONCILE_GIVE_UP,
            intervalMs: c.RECONCILE_INTERVAL,
          },
  };
}

/**
 * What a valid configuration may still get wrong, said at start (warn): settings that let anyone in.
 * Never a value.
 */
export function configurationWarnings(config: Config): string[] {
  const warnings: string[] = [];
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
