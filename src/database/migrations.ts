import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { sql } from 'kysely';
import pg from 'pg';
import type { Logger } from '../observability/logger';
import { ADVISORY_LOCKS } from './advisoryLocks';
import { columnsOf, tableOf } from './columns';
import { inTransaction, queries, runOn, statement, type Query } from './transaction';

/** sql/ beside src/ (in development) or beside dist/ (built). */
export const MIGRATIONS_DIR = path.resolve(__dirname, '..', '..', 'sql');

/** Serializes concurrent migrators (replicas starting together, the Helm hook Job). */
const MIGRATION_LOCK = ADVISORY_LOCKS.migrations;

/**
 * Applies the plain SQL files of sql/ in name order, each once, each in its own transaction.
 * Safe to run concurrently: the second runner waits on an advisory lock, then finds nothing to do.
 */
export async function migrate(databaseUrl: string, logger: Logger, dir = MIGRATIONS_DIR): Promise<string[]> {
  const files = (await readdir(dir)).filter((f) => /^\d+_.+\.sql$/.test(f)).sort();
  const client = new pg.Client({
    connectionString: databaseUrl,
    application_name: 'payment-notification-receiver:migrate',
  });
  await client.connect();
  const applied: string[] = [];
  try {
    const run = <Row>(query: Query<Row>): Promise<Row[]> => runOn(client, statement(query));
    await run(sql`SELECT pg_advisory_lock(${MIGRATION_LOCK}::bigint)`);
    const m = columnsOf('schema_migrations');
    await run(sql`CREATE TABLE IF NOT EXISTS ${tableOf('schema_migrations')} (
      ${m('name')} text PRIMARY KEY, ${m('sha256')} text NOT NULL, ${m('applied_at')} timestamptz NOT NULL DEFAULT now())`);
    const done = new Map(
      (await run(queries.selectFrom('schema_migrations').select(['name', 'sha256']))).map((r) => [r.name, r.sha256]),
    );
    for (const file of files) {
      const text = await readFile(path.join(dir, file), 'utf8');
      const sha256 = createHash('sha256').update(text).digest('hex');
      const previous = done.get(file);
      if (previous !== undefined) {
        if (previous !== sha256)
          logger.warn({ migration: file }, 'applied migration file has changed since; not re-applied');
        continue;
      }
      try {
        await inTransaction(client, async (trx) => {
          // The file as it is: its statements, in one simple query.
          await trx.run(statement(sql.raw(text)));
          await trx.runAndCommit(statement(queries.insertInto('schema_migrations').values({ name: file, sha256 })));
        });
      } catch (error) {
        throw new Error(`migration ${file} failed: ${(error as Error).message}`, { cause: error });
      }
      applied.push(file);
      logger.info({ migration: file }, 'migration applied');
    }
  } finally {
    await runOn(client, statement(sql`SELECT pg_advisory_unlock(${MIGRATION_LOCK}::bigint)`)).catch(() => undefined);
    await client.end();
  }
  return applied;
}
