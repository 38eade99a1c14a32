import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import type { Logger } from '../observability/logger';

/** sql/ beside src/ (in development) or beside dist/ (built). */
export const MIGRATIONS_DIR = path.resolve(__dirname, '..', '..', 'sql');

/** Serializes concurrent migrators (replicas starting together, the Helm hook Job). */
const MIGRATION_LOCK = 7_316_001;

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
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      name text PRIMARY KEY, sha256 text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
    const done = new Map(
      (await client.query<{ name: string; sha256: string }>('SELECT name, sha256 FROM schema_migrations')).rows.map(
        (r) => [r.name, r.sha256],
      ),
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
      await client.query('BEGIN');
      try {
        await client.query(text);
        await client.query('INSERT INTO schema_migrations (name, sha256) VALUES ($1, $2)', [file, sha256]);
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK');
        throw new Error(`migration ${file} failed: ${(error as Error).message}`, { cause: error });
      }
      applied.push(file);
      logger.info({ migration: file }, 'migration applied');
    }
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]).catch(() => undefined);
    await client.end();
  }
  return applied;
}
