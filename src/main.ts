import { loadConfig, loadDotEnv } from './config';
import { createLogger } from './observability/logger';
import { reportStartFailure } from './cli/startFailure';
import { startService } from './service';

async function main(): Promise<void> {
  loadDotEnv();
  const config = loadConfig(process.env);
  const logger = createLogger(config.logLevel);
  process.on('uncaughtException', (error) => {
    logger.fatal({ err: error }, 'uncaught exception');
    process.exit(1);
  });
  process.on('unhandledRejection', (reason) => {
    logger.fatal({ err: reason }, 'unhandled rejection');
    process.exit(1);
  });

  const service = await startService(config, logger);
  const shutdown = (signal: string): void => {
    logger.info({ signal }, 'signal received');
    const forced = setTimeout(() => {
      logger.error('shutdown took too long; exiting');
      process.exit(1);
    }, config.shutdownTimeoutMs + 5000);
    forced.unref();
    service.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

if (require.main === module) {
  main().catch((error: unknown) => process.exit(reportStartFailure(error)));
}
