/**
 * The history mode's databases: the built command line run against one of them (migrate, `history seed`,
 * `purge`), the seeded database settled as a year-old one would be, and what each takes on disk.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import pg from 'pg';
import { KEY, POS_ID, ROOT } from './options';

/** What a command printed on stdout, and how long it took from spawn to exit. */
export interface CommandRun {
  stdout: string;
  wallSeconds: number;
}

/** Runs a built entry point (dist/cli/…) against `databaseUrl`; stderr passes through (progress), stdout is kept. */
async function command(script: string, args: readonly string[], databaseUrl: string): Promise<CommandRun> {
  const started = performance.now();
  const child = spawn(process.execPath, [path.join(ROOT, 'dist', 'cli', script), ...args], {
    cwd: ROOT,
    // The service's POS and key: `history seed` gives its orders to the first POS of SECOND_KEYS.
    env: { ...process.env, DATABASE_URL: databaseUrl, SECOND_KEYS: `${POS_ID}:${KEY}` },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const chunks: Buffer[] = [];
  child.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', resolve);
  });
  if (code !== 0) throw new Error(`${script} ${args.join(' ')} exited with ${code}`);
  return { stdout: Buffer.concat(chunks).toString('utf8'), wallSeconds: (performance.now() - started) / 1000 };
}

/** `notification-receiver <args>`, the operator's command line. */
export const cli = (args: readonly string[], databaseUrl: string): Promise<CommandRun> =>
  command('index.js', args, databaseUrl);

/** Creates the database when it does not exist and applies the migrations (`npm run migrate`). */
export const migrate = (databaseUrl: string): Promise<CommandRun> => command('migrate.js', [], databaseUrl);

/** What `history seed --sample` printed: half its ids from the oldest month, half from the newest. */
export interface SeededIds {
  old: string[];
  recent: string[];
}

/** Seeds `orders` orders of history over `days` days ending now, and keeps the sample of their ids. */
export async function seedHistory(databaseUrl: string, orders: number, days: number, sample: number) {
  const run = await cli(
    ['history', 'seed', '--orders', String(orders), '--days', String(days), '--sample', String(sample)],
    databaseUrl,
  );
  const ids = run.stdout.split('\n').filter(Boolean);
  const half = Math.floor(ids.length / 2);
  const sampled: SeededIds = { old: ids.slice(0, half), recent: ids.slice(half) };
  return { seconds: run.wallSeconds, ordersPerSecond: Math.round(orders / run.wallSeconds), sampled };
}

/** Runs statements one by one on a database, on a connection of its own. */
async function onDatabase<T>(databaseUrl: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/**
 * Brings a freshly written database to the state a year-old one is in: its tables vacuumed and analyzed (as
 * autovacuum would have, long ago) and its writes checkpointed, so that the rounds measure the service rather
 * than Postgres working off the seeding. Returns the seconds it took.
 */
export async function settle(databaseUrl: string): Promise<number> {
  const started = performance.now();
  await onDatabase(databaseUrl, async (client) => {
    await client.query('VACUUM (ANALYZE)');
    await client.query('CHECKPOINT');
  });
  return (performance.now() - started) / 1000;
}

/** A database's size, and each table's with its indexes (a partitioned table's summed over its partitions), in bytes. */
export async function databaseSize(databaseUrl: string) {
  return onDatabase(databaseUrl, async (client) => {
    const database = await client.query<{ bytes: string }>('SELECT pg_database_size(current_database()) AS bytes');
    const tables = await client.query<{ table: string; bytes: string }>(
      `SELECT c.relname AS table,
              CASE WHEN c.relkind = 'p'
                   THEN (SELECT sum(pg_total_relation_size(t.relid)) FROM pg_partition_tree(c.oid) t)
                   ELSE pg_total_relation_size(c.oid) END AS bytes
         FROM pg_class c
         JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND NOT c.relispartition
        ORDER BY bytes DESC`,
    );
    return {
      bytes: Number(database.rows[0]?.bytes ?? 0),
      tables: tables.rows.map((row) => ({ table: row.table, bytes: Number(row.bytes) })),
    };
  });
}

/** What databaseSize measured. */
export type DatabaseSize = Awaited<ReturnType<typeof databaseSize>>;
