import { randomBytes } from 'node:crypto';
import { cpSync, mkdtempSync, readdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { MIGRATIONS_DIR, migrate } from '../../src/database/migrations';
import { createDb, createPool, ensureDatabaseExists, type Db } from '../../src/database/pool';
import { createLogger } from '../../src/observability/logger';
import { ORDER_LOCK_SEED } from '../../src/recording/batchQueries';

export const PG_SERVER = process.env.TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432';

/** A database of the test's own, dropped at the end (never a shared one). */
export interface TestDatabase {
  name: string;
  url: string;
  drop(): Promise<void>;
}

export function testDatabase(prefix = 'nr_test'): TestDatabase {
  return databaseNamed(`${prefix}_${randomBytes(5).toString('hex')}`);
}

function databaseNamed(name: string): TestDatabase {
  return {
    name,
    url: `${PG_SERVER}/${name}`,
    async drop() {
      const client = new pg.Client({ connectionString: `${PG_SERVER}/postgres` });
      await client.connect();
      try {
        await client.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`);
      } finally {
        await client.end();
      }
    },
  };
}

/**
 * The environment variable naming the jest run's migrated database (test/globalSetup.ts): a test's service
 * starts on a copy of it (startTestService) instead of applying every migration to an empty database again,
 * over half a second a start. Its service still runs the migrations at start, and finds nothing to apply.
 */
export const MIGRATED_TEMPLATE = 'NR_TEST_MIGRATED_TEMPLATE';

/** Creates and migrates the run's template (its name in MIGRATED_TEMPLATE); dropped by test/globalTeardown.ts. */
export async function createMigratedTemplate(): Promise<void> {
  const template = testDatabase('nr_template');
  await ensureDatabaseExists(template.url);
  await migrate(template.url, createLogger('silent'));
  process.env[MIGRATED_TEMPLATE] = template.name;
}

export async function dropMigratedTemplate(): Promise<void> {
  const name = process.env[MIGRATED_TEMPLATE];
  if (name === undefined) return;
  await databaseNamed(name).drop();
  delete process.env[MIGRATED_TEMPLATE];
}

/**
 * Creates `database` as a copy of the run's migrated template, where there is one (the integration tier's); a
 * database that exists already (a restart's, a second replica's) is left as it is.
 */
export async function createFromTemplate(database: TestDatabase): Promise<void> {
  const template = process.env[MIGRATED_TEMPLATE];
  if (template === undefined) return;
  const client = new pg.Client({ connectionString: `${PG_SERVER}/postgres` });
  await client.connect();
  try {
    await client.query(
      `CREATE DATABASE ${pg.escapeIdentifier(database.name)} TEMPLATE ${pg.escapeIdentifier(template)}`,
    );
  } catch (error) {
    // 42P04: it exists; 23505: another start created it at the same moment.
    const { code } = error as { code?: string };
    if (code !== '42P04' && code !== '23505') throw error;
  } finally {
    await client.end();
  }
}

/** Runs one query against a test database, on a short connection of its own (for assertions on what was stored). */
export async function query<T extends pg.QueryResultRow>(
  url: string,
  text: string,
  values: unknown[] = [],
): Promise<T[]> {
  // Without JIT, as the service's own pools: compiling a plan over many day partitions costs seconds.
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000, options: '-c jit=off' });
  await client.connect();
  try {
    return (await client.query<T>(text, values)).rows;
  } finally {
    await client.end();
  }
}

/** The migrations before the one numbered `number` (e.g. '007'), copied into a directory of their own. */
export function migrationsBefore(number: string): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), `migrations-before-${number}-`));
  for (const file of readdirSync(MIGRATIONS_DIR).filter((f) => /^\d+_.+\.sql$/.test(f) && f < number))
    cpSync(path.join(MIGRATIONS_DIR, file), path.join(dir, file));
  return dir;
}

/** Runs `work` with a Kysely database of a small pool of its own, closed afterwards (to call a query module). */
export async function withDb<T>(url: string, work: (db: Db) => Promise<T>): Promise<T> {
  const db = createDb(createPool({ url, poolMax: 2, timeoutMs: 10_000 }, createLogger('silent')));
  try {
    return await work(db);
  } finally {
    await db.destroy();
  }
}

/**
 * Runs `whileLocked` while another transaction holds an order's lock, the advisory lock the recorder
 * takes for it (lockOrders in src/recording/batchQueries.ts, with its ORDER_LOCK_SEED), then releases it: a recording
 * transaction that needs the order waits on it meanwhile. A batch decided from kept state takes no lock
 * (docs/decisions/0024): the lanes' rows of recorder_lanes are held too, which its one statement moves, so it waits as
 * well (on its write, not on a read). A batch of known repeats writes only deliveries, and waits for neither.
 */
export async function whileOrderLocked<T>(pool: pg.Pool, orderId: string, whileLocked: () => Promise<T>): Promise<T> {
  const blocker = await pool.connect();
  try {
    await blocker.query('BEGIN');
    await blocker.query('SELECT pg_advisory_xact_lock(hashtextextended($1, $2))', [orderId, ORDER_LOCK_SEED]);
    await blocker.query('SELECT 1 FROM recorder_lanes FOR UPDATE');
    return await whileLocked();
  } finally {
    await blocker.query('ROLLBACK');
    blocker.release();
  }
}

/**
 * Watches every pg client in the process and records the most queries one client had issued and
 * not yet seen answered at once (1 means each query left only after the one before was answered), and
 * the texts of the queries sent.
 */
export function watchQueryOverlap(): { most(): number; texts(): string[]; stop(): void } {
  type Query = (this: pg.Client, ...args: unknown[]) => unknown;
  const prototype = pg.Client.prototype as unknown as { query: Query };
  const original = prototype.query;
  const outstanding = new WeakMap<pg.Client, number>();
  let most = 0;
  const texts: string[] = [];
  prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const [first] = args;
    const text = typeof first === 'string' ? first : (first as { text?: unknown } | undefined)?.text;
    if (typeof text === 'string') texts.push(text);
    const now = (outstanding.get(this) ?? 0) + 1;
    outstanding.set(this, now);
    most = Math.max(most, now);
    const answered = (): void => void outstanding.set(this, (outstanding.get(this) ?? 1) - 1);
    const result = original.apply(this, args);
    if (result instanceof Promise) result.then(answered, answered);
    else answered(); // a callback or submittable query: not one the service issues
    return result;
  };
  return { most: () => most, texts: () => [...texts], stop: () => void (prototype.query = original) };
}
