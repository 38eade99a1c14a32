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
