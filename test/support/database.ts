import { randomBytes } from 'node:crypto';
import pg from 'pg';

export const PG_SERVER = process.env.TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432';

/** A database of the test's own, dropped at the end (never a shared one). */
export interface TestDatabase {
  name: string;
  url: string;
  drop(): Promise<void>;
}

export function testDatabase(prefix = 'nr_test'): TestDatabase {
  const name = `${prefix}_${randomBytes(5).toString('hex')}`;
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

/** Runs one query against a test database (for assertions on what was stored). */
export async function query<T extends pg.QueryResultRow>(url: string, text: string, values: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(text, values)).rows;
  } finally {
    await client.end();
  }
}
