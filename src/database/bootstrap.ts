import { reasonOf, StartupError } from '../errors';
import type { Logger } from '../observability/logger';
import { describeDatabase, openDatabaseServer, type DatabaseServer } from '../embeddedPostgres/embeddedPostgres';
import { migrate } from './migrations';
import { ensureDatabaseExists } from './pool';

/**
 * Getting a database ready to use, for the service, the tools and the command line: the server (the
 * embedded one without DATABASE_URL), the database on it, and the migrations.
 */

/** What the bootstrap reads of the configuration. */
export interface DatabaseSettings {
  /** DATABASE_URL; null: the embedded Postgres in dataDir. */
  databaseUrl: string | null;
  dataDir: string;
}

/** The setting a database failure points at. */
export const databaseSetting = (settings: Pick<DatabaseSettings, 'databaseUrl'>): string =>
  settings.databaseUrl === null ? 'DATA_DIR' : 'DATABASE_URL';

/**
 * Prepares the database: creates it on a fresh server and applies pending migrations. A server that
 * cannot be reached is a StartupError naming it and the setting.
 */
export async function prepareDatabase(
  settings: Pick<DatabaseSettings, 'databaseUrl'>,
  url: string,
  logger: Logger,
): Promise<void> {
  let created: boolean;
  try {
    created = await ensureDatabaseExists(url);
  } catch (error) {
    throw new StartupError(
      `cannot connect to Postgres at ${describeDatabase(url)} (${databaseSetting(settings)}): ${reasonOf(error)}`,
      databaseSetting(settings),
    );
  }
  if (created) logger.info({ database: describeDatabase(url) }, 'database created');
  await migrate(url, logger);
}

/**
 * Opens the database server (the embedded one without DATABASE_URL) and, unless told not to, prepares the
 * database. `shared`: an embedded server already running on DATA_DIR is used (migrations, the relay); the
 * service refuses it.
 */
export async function openDatabase(
  settings: DatabaseSettings,
  logger: Logger,
  { prepare = true, shared = false }: { prepare?: boolean; shared?: boolean } = {},
): Promise<DatabaseServer> {
  const server = await openDatabaseServer(settings, logger, { shared });
  if (server.embedded) {
    const { clusterDir, elsewhere, created, startedHere, runsAs } = server.embedded;
    logger.info(
      { dataDir: clusterDir, created, startedHere, runsAs },
      `${created ? 'created and started' : startedHere ? 'started' : 'using the running'} embedded Postgres in ` +
        `${clusterDir} (DATA_DIR${elsewhere === null ? '' : `: ${elsewhere}`}), running as ${runsAs}; ` +
        'set DATABASE_URL=postgres://user@host:port/database to use a Postgres of your own',
    );
  }
  try {
    if (prepare) await prepareDatabase(settings, server.url, logger);
  } catch (error) {
    await server.stop();
    throw error;
  }
  return server;
}
