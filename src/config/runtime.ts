import type { ConsoleToken } from '../console/session';
import { ConfigError, type Config } from './schema';

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
