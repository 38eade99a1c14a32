import { CompiledQuery, type Kysely, type Transaction } from 'kysely';
import type pg from 'pg';
import type { Database } from './schema';

/**
 * A SQL statement with a constant text and numbered parameters, so the hot path can run it as a
 * named prepared statement (parsed and planned once per connection, not once per batch).
 */
export interface Statement {
  name: string;
  text: string;
  values: unknown[];
}

/** `statement('name')\`SELECT ... ${value} ...\`` -> text with $1, $2, ... and the values. */
export function statement(name: string) {
  return (strings: TemplateStringsArray, ...values: unknown[]): Statement => {
    let text = strings[0] ?? '';
    values.forEach((_, i) => {
      text += `$${i + 1}${strings[i + 1] ?? ''}`;
    });
    return { name, text, values };
  };
}

/** Where statements run: a raw pg client (prepared by name) or a Kysely transaction (tools, tests). */
export interface SqlSession {
  run<Row>(statement: Statement): Promise<Row[]>;
}

/**
 * Statements on a raw pg client, prepared by name. `timeoutMs` replaces the pool's client-side
 * query timeout for them: past it the statement fails and its connection is given up.
 */
export function pgSession(client: pg.PoolClient | pg.Client, timeoutMs?: number): SqlSession {
  const timeout = timeoutMs === undefined ? {} : { query_timeout: timeoutMs };
  return {
    async run<Row>(s: Statement): Promise<Row[]> {
      return (await client.query({ name: s.name, text: s.text, values: s.values, ...timeout })).rows as Row[];
    },
  };
}

export function kyselySession(executor: Kysely<Database> | Transaction<Database>): SqlSession {
  return {
    async run<Row>(s: Statement): Promise<Row[]> {
      return (await executor.executeQuery<Row>(CompiledQuery.raw(s.text, s.values))).rows;
    },
  };
}
