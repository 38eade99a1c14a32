import { ConfigError, loadConfig, loadDotEnv } from '../config';
import { createLogger } from '../observability/logger';
import { prepareDatabase } from '../service';

/** `npm run migrate`: creates the database if needed and applies pending migrations, then exits. */
async function main(): Promise<void> {
  loadDotEnv();
  // Migrations need only the database; the rest of the config may be absent (a Helm hook Job).
  const config = loadConfig(process.env, { receiving: false });
  const logger = createLogger(config.logLevel);
  await prepareDatabase(config, logger);
  logger.info('migrations up to date');
}

main().catch((error: unknown) => {
  process.stderr.write(
    `${error instanceof ConfigError ? error.message : `migration failed: ${(error as Error).message}`}\n`,
  );
  process.exit(1);
});
