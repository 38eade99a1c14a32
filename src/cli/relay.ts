import { ConfigError, loadConfig, loadDotEnv } from '../config';
import { createLogger } from '../observability/logger';
import { createMetrics } from '../observability/metrics';
import { OutboxRelay } from '../outbox/relay';

/** `npm run relay`: the outbox relay alone (no HTTP), for deployments that run it separately. */
async function main(): Promise<void> {
  loadDotEnv();
  const config = loadConfig(process.env, { receiving: false });
  const logger = createLogger(config.logLevel).child({ component: 'relay' });
  const relay = new OutboxRelay({
    databaseUrl: config.databaseUrl,
    amqpUrl: config.amqpUrl,
    exchange: config.amqpExchange,
    retentionMs: config.outboxRetentionMs,
    metrics: createMetrics(),
    logger,
  });
  relay.start();
  logger.info('relay started');
  const stop = (): void => {
    relay.stop().then(() => process.exit(0), () => process.exit(1));
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof ConfigError ? error.message : `relay failed: ${(error as Error).message}`}\n`);
  process.exit(1);
});
