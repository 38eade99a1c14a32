import type { AdminTokens } from '../admin/tokens';
import type { ConsoleToken } from '../console/sessions/session';
import type { RecordingContext } from '../recording/projectionFold';
import { ConfigError, type Config } from './settingsSchema';

/** This machine only: localhost, 127.0.0.0/8 or ::1. */
export const isLoopbackHost = (host: string): boolean => /^(localhost|127(\.\d{1,3}){3}|\[?::1\]?)$/i.test(host);

/** The broker of a process that publishes: loadConfig required AMQP_URL for it (never null there). */
export function brokerUrl(config: Pick<Config, 'amqpUrl'>): string {
  if (config.amqpUrl === null)
    throw new ConfigError(['AMQP_URL: is required to publish or watch events (amqp://user:password@host:port)']);
  return config.amqpUrl;
}

/** The journal of recorded notifications (src/failover/), or null: JOURNAL_RETENTION=off, or no broker at all. */
export function journalSettings(
  config: Pick<Config, 'journalAmqpUrl' | 'amqpUrl' | 'journalQueue' | 'journalRetentionMs' | 'journalMaxBytes'>,
): { url: string; queue: string; retentionMs: number; maxBytes: number } | null {
  const url = config.journalAmqpUrl ?? config.amqpUrl;
  if (url === null || config.journalRetentionMs === null) return null;
  return { url, queue: config.journalQueue, retentionMs: config.journalRetentionMs, maxBytes: config.journalMaxBytes };
}

/** What the events the recorder builds take from the settings: their source and the zone of their booking time. */
export const recordingContext = (config: Pick<Config, 'eventSource' | 'paymentServiceTimeZone'>): RecordingContext => ({
  eventSource: config.eventSource,
  paymentServiceTimeZone: config.paymentServiceTimeZone,
});

/** The POS the service receives for: those SECOND_KEYS has keys of, each once, in their order. */
export const receivedPos = (config: Pick<Config, 'secondKeys'>): string[] => [
  ...new Set(config.secondKeys.map((key) => key.posId)),
];

/**
 * Recording transactions at once: DATABASE_WRITE_LANES, capped so that one connection of the pool stays
 * free for readiness and the admin API.
 */
export function writeLanes(config: Pick<Config, 'databaseWriteLanes' | 'databasePoolMax'>): number {
  return Math.min(config.databaseWriteLanes, Math.max(1, config.databasePoolMax - 1));
}

/**
 * Everyone who may sign in to the console: its operators and viewers, and ADMIN_TOKEN's holder as the operator
 * `admin` (the admin API's token keeps working, in the console too; no person may take that name: load.ts).
 */
export function consoleTokens(
  config: Pick<Config, 'consoleOperatorTokens' | 'consoleViewerTokens' | 'adminToken'>,
): ConsoleToken[] {
  const named = [...config.consoleOperatorTokens, ...config.consoleViewerTokens];
  return config.adminToken === null ? named : [...named, { name: 'admin', token: config.adminToken, role: 'operator' }];
}

/** Every token the admin port takes, with its holder (admin/tokens.ts): what each door compares a token with. */
export function adminTokens(
  config: Pick<Config, 'consoleOperatorTokens' | 'consoleViewerTokens' | 'adminToken' | 'eventTeamTokens'>,
): AdminTokens {
  return {
    adminToken: config.adminToken,
    people: [...config.consoleOperatorTokens, ...config.consoleViewerTokens],
    teams: config.eventTeamTokens,
  };
}

/**
 * Whether the admin port's doors are shut for want of a token (issue 45): its JSON data routes without
 * ADMIN_TOKEN, its event routes without ADMIN_TOKEN or a team's token (EVENT_TEAM_TOKENS), its console without any
 * console token (ADMIN_TOKEN signs in too), whenever HOST is not loopback. Shut, they answer 401 (the JSON API) and
 * 403 (the console) on every request; probes and /metrics stay open. Open (no token, loopback HOST) only this
 * machine reaches them, as the operator `local`.
 */
export function adminDoors(
  config: Pick<Config, 'host' | 'adminToken' | 'consoleOperatorTokens' | 'consoleViewerTokens' | 'eventTeamTokens'>,
): {
  dataRoutes: 'token' | 'open' | 'closed';
  events: 'token' | 'open' | 'closed';
  console: 'tokens' | 'open' | 'closed';
} {
  const loopback = isLoopbackHost(config.host);
  const signIn = consoleTokens(config).length > 0;
  const door = (tokens: boolean): 'token' | 'open' | 'closed' => (tokens ? 'token' : loopback ? 'open' : 'closed');
  return {
    dataRoutes: door(config.adminToken !== null),
    events: door(config.adminToken !== null || config.eventTeamTokens.length > 0),
    console: signIn ? 'tokens' : loopback ? 'open' : 'closed',
  };
}
