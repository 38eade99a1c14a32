import { loadConfig, loadDotEnv } from '../config';
import { createLogger } from '../observability/logger';
import { openDatabase } from '../database/bootstrap';
import { reportStartFailure } from './startFailure';

/**
 * `npm run migrate`: creates the database if needed and applies pending migrations, then exits
 * (without DATABASE_URL, on the embedded Postgres in DATA_DIR).
 */
async function main(): Promise<void> {
  loadDotEnv();
  // Migrations need only the database; the rest of the config may be absent (a Helm hook Job).
  const config = loadConfig(process.env, { receiving: false, publishing: false });
  const logger = createLogger(config.logLevel);
  const server = await openDatabase(config, logger, { shared: true });
  await server.stop();
  logger.info('migrations up to date');
}

main().catch((error: unknown) => process.exit(reportStartFailure(error)));
