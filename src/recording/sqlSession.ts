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

/** Part of a statement, with parameters of its own: `fragment\`... ${value} ...\``, spliced into a statement. */
export class Fragment {
  constructor(
    readonly strings: readonly string[],
    readonly values: readonly unknown[],
  ) {}
}

export const fragment = (strings: TemplateStringsArray, ...values: unknown[]): Fragment =>
  new Fragment(strings, values);

/**
 * `statement('name')\`SELECT ... ${value} ...\`` -> text with $1, $2, ... and the values. A
 * Fragment among the values is spliced in as text, its own values numbered in their place.
 */
export function statement(name: string) {
  return (strings: TemplateStringsArray, ...values: unknown[]): Statement => {
    const parameters: unknown[] = [];
    const splice = (parts: readonly string[], inserted: readonly unknown[]): string =>
      inserted.reduce<string>(
        (text, value, i) =>
          text +
          (value instanceof Fragment ? splice(value.strings, value.values) : `$${parameters.push(value)}`) +
          (parts[i + 1] ?? ''),
        parts[0] ?? '',
      );
    const text = splice(strings, values);
    return { name, text, values: parameters };
  };
}

/** Where statements run: a raw pg client (prepared by name) or a Kysely transaction (tools, tests). */
export interface SqlSession {
  run<Row>(statement: Statement): Promise<Row[]>;
}

/** A query as pg takes it, with pg's per-query client-side timeout (which its types leave out). */
export type PgQuery = pg.QueryConfig<unknown[]> & { query_timeout?: number };

/** Sends one client's queries in the order they are issued, without the caller waiting between them. */
export type QuerySender = <Row extends pg.QueryResultRow>(query: PgQuery | string) => Promise<pg.QueryResult<Row>>;

/**
 * The sender for work that issues a client's statements together (BEGIN with the first ones, the
 * last with COMMIT). On a pipelined client they leave at once and share round trips. On any other,
 * each leaves once the one before has been answered, failed or not (as Postgres would run them):
 * pg 8 queues queries issued while one runs only with a deprecation warning, and pg 9 drops that
 * queue.
 */
export function queriesInOrder(client: pg.Client): QuerySender {
  if (client.pipeline) return (query) => client.query(query);
  let previous: Promise<unknown> = Promise.resolve();
  return <Row extends pg.QueryResultRow>(query: PgQuery | string) => {
    const result = previous.then(() => client.query<Row>(query));
    previous = result.catch(() => undefined);
    return result;
  };
}

/**
 * Statements prepared by name, sent through `send`. `timeoutMs` replaces the pool's client-side
 * query timeout for them: past it the statement fails and its connection is given up.
 */
export function pgSession(send: QuerySender, timeoutMs?: number): SqlSession {
  const timeout = timeoutMs === undefined ? {} : { query_timeout: timeoutMs };
  return {
    async run<Row>(s: Statement): Promise<Row[]> {
      return (await send({ name: s.name, text: s.text, values: s.values, ...timeout })).rows as Row[];
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
