import { Kysely, PostgresDialect, sql, type PostgresPool, type PostgresPoolClient } from 'kysely';
import pg from 'pg';
import type { Logger } from '../observability/logger';
import type { Database } from './schema';
import { breaksConnection } from './databaseErrors';
import { runOn, statement } from './transaction';

export type Db = Kysely<Database>;

export interface DatabaseOptions {
  url: string;
  poolMax: number;
  /** Longest wait for a pool slot, and the statement timeout. */
  timeoutMs: number;
  applicationName?: string;
  /**
   * Every statement on this pool is a lookup by key with its index (the service's pool): plan
   * without sequential scans, hash or merge joins. The recorder's statements are prepared once per connection and planned
   * generically; planned on a young database (no statistics yet: autovacuum analyzes once a
   * minute at most) they scanned whole tables that then grow, batch after batch, until the next
   * ANALYZE forced a re-plan: a sequential scan, or a whole index read into a hash join with a
   * batch's rows (a set-returning function is guessed at 100 rows). With those off, one index
   * probe per row is the plan from the first execution (docs/PERFORMANCE.md).
   * Tools that scan on purpose (purge, reproject) leave this off.
   */
  keyLookupsOnly?: boolean;
  /**
   * Plan every prepared statement once per connection, generically (`plan_cache_mode`), the service's pool: the
   * recorder's statements take rows as JSON parameters, so a plan made for one batch serves every batch, but
   * Postgres kept planning the write anew at each run (a custom plan of its guarded parts looked cheaper), 1.7 ms
   * of a batch (docs/PERFORMANCE.md). The history read, whose day partitions only its values name, asks for its
   * own plan each time (batchQueries.ts).
   */
  genericPlans?: boolean;
  /**
   * Send a query without waiting for the answer to the one before (pg's pipeline mode), so
   * statements issued together share one round trip; they still run in order, each its own
   * extended-protocol exchange. Refuses cursors (pg-cursor, Kysely's stream()), which the service
   * does not use.
   */
  pipelined?: boolean;
}

/**
 * A pg pool as Kysely sees it, except that a client whose query failed at the connection level is
 * destroyed on release instead of being handed to the next request (Kysely releases without
 * passing the error, so without this a half-dead socket would be reused after a network cut).
 */
function resilientPool(pool: pg.Pool): PostgresPool {
  return {
    async connect(): Promise<PostgresPoolClient> {
      const client = await pool.connect();
      let broken: Error | undefined;
      const query = (async (...args: unknown[]) => {
        try {
          return await (client.query as (...a: unknown[]) => Promise<unknown>)(...args);
        } catch (error) {
          if (breaksConnection(error)) broken = error as Error;
          throw error;
        }
      }) as PostgresPoolClient['query'];
      return { query, release: () => client.release(broken ?? false) };
    },
    end: () => pool.end(),
  };
}

export function createPool(options: DatabaseOptions, logger: Logger): pg.Pool {
  const pool = new pg.Pool({
    connectionString: options.url,
    max: options.poolMax,
    connectionTimeoutMillis: options.timeoutMs,
    statement_timeout: options.timeoutMs,
    // Client-side guard for a silent network: fires shortly after the server-side timeout would.
    query_timeout: options.timeoutMs + 1000,
    idle_in_transaction_session_timeout: options.timeoutMs * 4,
    keepAlive: true,
    application_name: options.applicationName ?? 'payment-notification-receiver',
    // JIT off on every pool: it compiles a plan node by node, and a query over the day partitions of
    // history (sql/007) spent a second and more compiling one scan per partition to read a few rows.
    options: [
      '-c jit=off',
      ...(options.keyLookupsOnly ? ['-c enable_seqscan=off -c enable_hashjoin=off -c enable_mergejoin=off'] : []),
      ...(options.genericPlans ? ['-c plan_cache_mode=force_generic_plan'] : []),
    ].join(' '),
    pipeline: options.pipelined ?? false,
  });
  // A client losing its connection must not crash the process: pg emits 'error' on the client
  // whether it is idle (the pool listens then) or checked out (nobody listens but us). The query
  // in flight fails on its own and the broken client is destroyed on release.
  pool.on('error', (error) => logger.warn({ err: { message: error.message } }, 'idle database connection lost'));
  pool.on('connect', (client) => {
    client.on('error', (error) => logger.warn({ err: { message: error.message } }, 'database connection lost'));
  });
  return pool;
}

export function createDb(pool: pg.Pool): Db {
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool: resilientPool(pool) }) });
}

/** Whether the database answers (readiness): a statement that reads nothing. */
export async function ping(db: Db): Promise<void> {
  await sql`SELECT 1`.execute(db);
}

/**
 * Creates the configured database when it does not exist yet (first start on a fresh server);
 * true when this call created it.
 */
export async function ensureDatabaseExists(url: string): Promise<boolean> {
  const target = new URL(url);
  const name = decodeURIComponent(target.pathname.replace(/^\//, ''));
  const admin = new URL(url);
  admin.pathname = '/postgres';
  const client = new pg.Client({ connectionString: admin.toString(), connectionTimeoutMillis: 5000 });
  await client.connect();
  try {
    const found = await runOn(client, statement(sql`SELECT 1 FROM pg_database WHERE datname = ${name}`));
    if (found.length !== 0) return false;
    try {
      await runOn(client, statement(sql`CREATE DATABASE ${sql.id(name)}`));
      return true;
    } catch (error) {
      // Another replica created it first.
      if ((error as { code?: string }).code !== '42P04') throw error;
      return false;
    }
  } finally {
    await client.end();
  }
}
