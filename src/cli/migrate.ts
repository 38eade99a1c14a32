import { loadConfig, loadDotEnv } from '../config';
import { createLogger } from '../observability/logger';
import { openDatabase } from '../database/bootstrap';
import { makeDaysOn } from '../partitions/partitionMaintenance';
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
  try {
    // The days from yesterday to a week ahead, as the service's maintainer makes them: a database migrated
    // here takes writes at once, even if a day was removed by hand.
    const daysMade = await makeDaysOn(server.url, Date.now());
    logger.info({ daysMade }, 'migrations up to date; history partitions made');
  } finally {
    await server.stop();
  }
}

main().catch((error: unknown) => process.exit(reportStartFailure(error)));
