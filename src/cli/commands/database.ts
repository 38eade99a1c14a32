import { ConfigError, loadConfig, type Config, type ProcessNeeds } from '../../config';
import { createLogger } from '../../observability/logger';
import { createDb, createPool, type Db } from '../../database/pool';
import { PooledTransactions } from '../../database/transaction';
import { openDatabaseServer, type DatabaseServer } from '../../embeddedPostgres/embeddedPostgres';
import { EX_CONFIG, StartupError } from '../../errors';
import { prepareDatabase } from '../../database/bootstrap';
import { CliError, UsageError, type CliIo } from './io';

/**
 * The service's configuration (environment and ./.env, loaded by the entry point), with the
 * command's flags applied on top as the variables they stand for. A command neither receives nor
 * publishes unless it says so. Invalid configuration is a usage error naming every problem.
 */
export function readConfig(
  io: CliIo,
  overrides: Record<string, string | undefined> = {},
  { receiving = false, publishing = false }: Partial<ProcessNeeds> = {},
): Config {
  const env: NodeJS.ProcessEnv = { ...io.env };
  for (const [name, value] of Object.entries(overrides)) if (value !== undefined) env[name] = value;
  try {
    return loadConfig(env, { receiving, publishing });
  } catch (error) {
    if (error instanceof ConfigError) throw new UsageError(error.message);
    throw error;
  }
}

/** Statement and connection timeout of the command-line tools: long enough for big batches. */
const CLI_DATABASE_TIMEOUT_MS = 120_000;

/**
 * Opens a small pool for one command and always closes it: Kysely for the queries, and the recorder's
 * transactions (quarantine retry records through the recorder). Without DATABASE_URL it uses the
 * embedded Postgres in DATA_DIR: the service's while it runs, or else started for this command
 * (migrated, and stopped after it). `work` gets the server's URL too, for connections of its own.
 */
export async function withDatabase<T>(
  io: CliIo,
  config: Config,
  work: (db: Db, transactions: PooledTransactions, url: string) => Promise<T>,
): Promise<T> {
  const logger = createLogger('silent');
  let server: DatabaseServer;
  try {
    server = await openDatabaseServer(config, logger, { shared: true });
    if (server.embedded?.startedHere) {
      io.stderr.write(
        `the service is not running: started the embedded Postgres in ${server.embedded.clusterDir} for this command\n`,
      );
      await prepareDatabase(config, server.url, logger);
    }
  } catch (error) {
    if (error instanceof StartupError)
      throw error.exitCode === EX_CONFIG ? new UsageError(error.message) : new CliError(error.message);
    throw error;
  }
  const pool = createPool(
    {
      url: server.url,
      poolMax: 2,
      timeoutMs: CLI_DATABASE_TIMEOUT_MS,
      applicationName: 'payment-notification-receiver:cli',
    },
    logger,
  );
  const db = createDb(pool);
  try {
    return await work(db, new PooledTransactions(pool), server.url);
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code === '42P01')
      throw new CliError(
        `the database has no such table (${(error as Error).message}); run the migrations first (npm run migrate)`,
      );
    if (code === '3D000') throw new CliError(`the database does not exist: ${(error as Error).message}`);
    if (code === 'ECONNREFUSED') throw new CliError(`cannot connect to the database: ${(error as Error).message}`);
    throw error;
  } finally {
    await db.destroy();
    await server.stop();
  }
}
