import { existsSync } from 'node:fs';
import { z } from 'zod';
import type { ReconciliationSettings } from '../reconciliation/reconciliation';
import { isLoopbackHost } from './runtime';
import { doubtfulKeys } from './warnings';
import { tokenSettingsProblems } from '../admin/tokens';
import {
  ConfigError,
  RETIRED_SETTINGS,
  reconciliationSettings,
  settings,
  sourceOf,
  type Config,
  type ProcessNeeds,
  type SettingSource,
} from './settingsSchema';

/**
 * An http:// address the client secrets must not go to without PAYMENT_API_ALLOW_HTTP: any in production; outside
 * it, one of another host (a double on this machine is what local runs and the tests use).
 */
function inClear(url: string | undefined, production: boolean): boolean {
  if (url === undefined) return false;
  const { protocol, hostname } = new URL(url);
  return protocol === 'http:' && (production || !isLoopbackHost(hostname));
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
  if (production) {
    // Read apart from their groups, so that these are listed with any other problem.
    const keys = settings.shape.secondKeys.safeParse(present('SECOND_KEYS')).data ?? [];
    const clients = reconciliationSettings.shape.credentials.safeParse(present('PAYMENT_API_CREDENTIALS')).data ?? [];
    for (const doubt of doubtfulKeys(keys, clients)) problems.push(`${doubt}; refused with NODE_ENV=production`);
  }
  // One name in both console roles or for a person and a team, one token for two holders: refused (exit 78),
  // naming the entries, never a token. Read apart from their group, so that these are listed with any other problem.
  const { adminToken, consoleOperatorTokens, consoleViewerTokens, eventTeamTokens } = settings.shape;
  problems.push(
    ...tokenSettingsProblems({
      adminToken: adminToken.safeParse(present('ADMIN_TOKEN')).data ?? null,
      operators: consoleOperatorTokens.safeParse(present('CONSOLE_OPERATOR_TOKENS')).data ?? [],
      viewers: consoleViewerTokens.safeParse(present('CONSOLE_VIEWER_TOKENS')).data ?? [],
      teams: eventTeamTokens.safeParse(present('EVENT_TEAM_TOKENS')).data ?? [],
    }),
  );
  if (base === null || reconciliation === null || problems.length > 0) throw new ConfigError(problems);
  const { paymentApiUrl, allowHttp: _checkedAbove, ...client } = reconciliation;
  return {
    ...base,
    production,
    localDefaults,
    retiredSettings: Object.keys(RETIRED_SETTINGS).filter((name) => present(name) !== undefined),
    unusedSettings:
      paymentApiUrl === undefined
        ? Object.values(reconciliationSettings.shape)
            .map((schema) => sourceOf(schema).env)
            .filter((name) => present(name) !== undefined)
        : [],
    // What src/reconciliation/ takes, checked here: a setting added to one side only fails tsc.
    reconciliation:
      paymentApiUrl === undefined ? null : ({ ...client, paymentApiUrl } satisfies ReconciliationSettings),
  };
}
