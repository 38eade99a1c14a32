import v8 from 'node:v8';
import { ConfigError, loadConfig, loadDotEnv } from './config';
import { createLogger } from './observability/logger';
import { startService } from './service';

/**
 * V8 allocates an allocation site's objects straight into the old generation once it has seen most
 * of them survive a scavenge (allocation-site pretenuring). In a burst the recorder's and pg's
 * per-batch objects do survive one, and once pretenured they keep filling the old generation at an
 * ordinary rate although they die within milliseconds: at 1,000 notifications/s that was a
 * mark-compact every 1.5-3 s, each holding the answers queued behind it for 15-35 ms. Without it the
 * same traffic made 2-5 mark-compacts in a process's life instead of 17-25 (docs/PERFORMANCE.md,
 * change 28). Set here because NODE_OPTIONS does not accept the flag; it is read as the heap works,
 * so setting it before the service starts takes effect.
 */
function tuneGarbageCollection(): void {
  v8.setFlagsFromString('--no-allocation-site-pretenuring');
}

async function main(): Promise<void> {
  tuneGarbageCollection();
  loadDotEnv();
  let config;
  try {
    config = loadConfig(process.env);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(78); // EX_CONFIG
    }
    throw error;
  }
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
  main().catch((error: unknown) => {
    process.stderr.write(`failed to start: ${(error as Error).message}\n`);
    process.exit(1);
  });
}
