import { existsSync } from 'node:fs';
import bytes from 'bytes';
import proxyAddr from 'proxy-addr';
import { z } from 'zod';
import { parseSecondKeys, type SecondKey } from './verification/secondKeys';
import { parseSourceAllowlist, type SourceAllowlist } from './intake/sourceAddress';

/** The whole configuration, read once from the environment at start (documented in .env.example). */
export interface Config {
  port: number;
  adminPort: number;
  host: string;
  databaseUrl: string;
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
  trustProxy: false | number | string[];
  notifyBasicAuth: { user: string; password: string } | null;
  bodyLimitBytes: number;
  logLevel: string;
  shutdownTimeoutMs: number;
  relayEnabled: boolean;
  amqpUrl: string;
  amqpExchange: string;
  eventSource: string;
  outboxRetentionMs: number;
}

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

const schema = z.object({
  PORT: port.default(8080),
  ADMIN_PORT: port.default(9090),
  HOST: z.string().trim().min(1).default('0.0.0.0'),
  DATABASE_URL: z
    .string()
    .trim()
    .default('postgres://postgres@127.0.0.1:5432/notifications')
    .refine((v) => /^postgres(ql)?:\/\/[^/]+\/[^/?]+/.test(v), 'must be postgres://user@host:port/database'),
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
  ALLOWED_SOURCE_IPS: z
    .string()
    .default('production')
    .transform((value, ctx) => {
      const { allowlist, problems } = parseSourceAllowlist(value);
      for (const message of problems) ctx.addIssue({ code: 'custom', message });
      return allowlist;
    }),
  TRUST_PROXY: z
    .string()
    .trim()
    .default('')
    .transform((value, ctx): false | number | string[] => {
      if (value === '' || ['none', 'false', '0'].includes(value.toLowerCase())) return false;
      if (/^\d+$/.test(value)) return Number(value);
      const entries = value
        .split(',')
        .map((e) => e.trim())
        .filter((e) => e !== '');
      try {
        proxyAddr.compile(entries);
      } catch {
        ctx.addIssue({
          code: 'custom',
          message: 'must be none, a hop count, or comma-separated proxy addresses/CIDRs',
        });
      }
      return entries;
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
  BODY_LIMIT: z
    .string()
    .default('1mb')
    .transform((value, ctx) => {
      const limit = bytes.parse(value);
      if (limit === null || !Number.isFinite(limit) || limit < 1024 || limit > 64 * 1024 * 1024) {
        ctx.addIssue({ code: 'custom', message: 'must be a size between 1kb and 64mb, such as 1mb' });
        return 0;
      }
      return limit;
    }),
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
});

/** Loads ./.env for local runs (Node's own loader); variables already set win. */
export function loadDotEnv(): void {
  if (existsSync('.env')) process.loadEnvFile('.env');
}

/**
 * Reads and validates the environment; throws ConfigError naming every problem (never a value).
 * SECOND_KEYS is required to receive notifications; tools that only migrate or relay pass
 * `{ receiving: false }`.
 */
export function loadConfig(env: NodeJS.ProcessEnv, { receiving = true }: { receiving?: boolean } = {}): Config {
  // Empty strings mean "not set", so a blank line in .env or a Helm value falls back to the default.
  const present = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const result = schema.safeParse(present);
  const problems = result.success
    ? []
    : result.error.issues.map((issue) => `${issue.path.join('.') || 'environment'}: ${issue.message}`);
  if (receiving && present.SECOND_KEYS === undefined)
    problems.push('SECOND_KEYS: is required (comma-separated posId:secondKey entries)');
  if (!result.success || problems.length > 0) throw new ConfigError(problems);
  const c = result.data;
  return {
    port: c.PORT,
    adminPort: c.ADMIN_PORT,
    host: c.HOST,
    databaseUrl: c.DATABASE_URL,
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
    logLevel: c.LOG_LEVEL,
    shutdownTimeoutMs: c.SHUTDOWN_TIMEOUT,
    relayEnabled: c.RELAY_ENABLED,
    amqpUrl: c.AMQP_URL,
    amqpExchange: c.AMQP_EXCHANGE,
    eventSource: c.EVENT_SOURCE,
    outboxRetentionMs: c.OUTBOX_RETENTION,
  };
}
