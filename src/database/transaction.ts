import {
  DummyDriver,
  Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type Compilable,
  type CompiledQuery,
  type RawBuilder,
} from 'kysely';
import type pg from 'pg';
import { breaksConnection } from './databaseErrors';
import type { Database } from './schema';

/**
 * The recorder's and the relay's transactions: Kysely-built queries sent on one pg connection without
 * waiting for each answer (pipelined), the hot ones prepared by name. Everything else goes through
 * Kysely itself (createDb); these two paths need what Kysely's own transactions cannot give: BEGIN sent
 * with the first statements and the last statement sent with COMMIT (two round trips per batch instead
 * of four), and statements parsed and planned once per connection (docs/decisions/).
 */

/** A compiled Kysely query, with the name it is prepared under on each connection when it is a hot one. */
export type Statement<Row = unknown> = CompiledQuery<Row> & { readonly name?: string };

/** Compiles queries without a connection (Kysely's documented "compile only" setup). */
const compiler = new Kysely<Database>({
  dialect: {
    createAdapter: () => new PostgresAdapter(),
    createDriver: () => new DummyDriver(),
    createIntrospector: (db) => new PostgresIntrospector(db),
    createQueryCompiler: () => new PostgresQueryCompiler(),
  },
});

/**
 * The Kysely instance to build statements with for a Transaction (`queries.selectFrom(...).compile()`);
 * it has no connection: executing through it does nothing.
 */
export const queries: Kysely<Database> = compiler;

/** A query to compile: a `sql` template, or one built with `queries`. */
export type Query<Row> = RawBuilder<Row> | Compilable<Row>;

const compile = <Row>(query: Query<Row>): CompiledQuery<Row> =>
  'isRawBuilder' in query ? query.compile(compiler) : query.compile();

/**
 * A hot statement: its text must be the same at every call (data goes in parameters, e.g. one JSON
 * array of rows), so each connection parses and plans it once.
 */
export function prepared<Row>(name: string, query: Query<Row>): Statement<Row> {
  return { ...compile(query), name };
}

/** A value of a hot statement, named when its text is compiled and filled at each run (preparedStatement). */
export type Slot = string & { readonly slot: unique symbol };
export type Slots<Args> = { readonly [K in keyof Args]: Slot };

/**
 * A hot statement whose text is compiled once, when the module loads: `build` uses a Slot where a value goes
 * (`${slots.rows}::json`), and each run only fills the values in. Compiling a statement of many columns and
 * fragments at each batch cost the recorder more than the rest of its work on it.
 */
export function preparedStatement<Args extends Record<string, unknown>, Row>(
  name: string,
  build: (slots: Slots<Args>) => Query<Row>,
): (args: Args) => Statement<Row> {
  const prefix = `\u0000${name}:`;
  // Any key read gives its slot; Slots<Args> lets build read only the keys of Args.
  const slots = new Proxy({}, { get: (_target, key) => `${prefix}${String(key)}` }) as Slots<Args>;
  const compiled = compile(build(slots));
  const filled = compiled.parameters.map((value) =>
    typeof value === 'string' && value.startsWith(prefix) ? value.slice(prefix.length) : undefined,
  );
  return (args) => ({
    ...compiled,
    name,
    parameters: compiled.parameters.map((value, i) => {
      const key = filled[i];
      return key === undefined ? value : args[key];
    }),
  });
}

/** A statement run once in a while (unnamed: parsed and planned at each run, with its arguments). */
export function statement<Row>(query: Query<Row>): Statement<Row> {
  return compile(query);
}

/** Runs one statement on a client the caller holds (a lock's session), outside any transaction of this module's. */
export async function runOn<Row>(client: pg.ClientBase, query: Statement<Row>): Promise<Row[]> {
  return (await client.query(toPg(query, undefined))).rows as Row[];
}

/**
 * A session on one connection, outside transactions: partition work (a day is detached concurrently) and the
 * audit trail's retention run on one.
 */
export interface ConnectionSession {
  run<Row>(query: Query<Row>): Promise<Row[]>;
}

export const sessionOn = (client: pg.ClientBase): ConnectionSession => ({
  run: (query) => runOn(client, statement(query)),
});

/** A session on one connection Kysely lends (`db.connection().execute(...)`: the command line's). */
export const sessionOnKysely = (connection: Kysely<Database>): ConnectionSession => ({
  run: async <Row>(query: Query<Row>): Promise<Row[]> => [
    ...(await connection.executeQuery<Row>(statement(query))).rows,
  ],
});

/** The statements of one transaction, on one connection. */
export interface Transaction {
  /** Sends a statement; on a pipelined connection it leaves without waiting for the ones before. */
  run<Row>(statement: Statement<Row>): Promise<Row[]>;
  /**
   * Sends the statement and COMMIT together and resolves once both succeeded; nothing else may run in
   * the transaction after it (a statement issued then is refused). As the transaction's first statement,
   * it is sent alone, without BEGIN or COMMIT. With `timeoutMs`, it fails when unanswered by then (the
   * connection is then given up, and whether the COMMIT took effect is unknown).
   */
  runAndCommit<Row>(statement: Statement<Row>, timeoutMs?: number): Promise<Row[]>;
}

/** pg's query config, with its per-query client-side timeout (which its types leave out). */
type PgQuery = pg.QueryConfig<unknown[]> & { query_timeout?: number };

/**
 * Sends one client's queries in the order they are issued. On a pipelined client they leave at once
 * and share round trips; on any other, each leaves once the one before has been answered, failed or
 * not (pg 8 queues queries issued while one runs only with a deprecation warning, and pg 9 drops that
 * queue).
 */
function sender(client: pg.ClientBase): (query: PgQuery) => Promise<pg.QueryResult> {
  // Pool clients are pg.Client instances too, though their type does not say so.
  if ('pipeline' in client && client.pipeline === true) return (query) => client.query(query);
  let previous: Promise<unknown> = Promise.resolve();
  return (query) => {
    const result = previous.then(() => client.query(query));
    previous = result.catch(() => undefined);
    return result;
  };
}

function toPg(statement: Statement<unknown>, timeoutMs: number | undefined): PgQuery {
  return {
    text: statement.sql,
    values: [...statement.parameters],
    ...(statement.name === undefined ? {} : { name: statement.name }),
    ...(timeoutMs === undefined ? {} : { query_timeout: timeoutMs }),
  };
}

/**
 * BEGIN, the work's statements, COMMIT, on one client; BEGIN leaves with the work's first statement, and a
 * work whose first statement is also its last (runAndCommit) sends it alone: one statement is a transaction
 * of its own. A COMMIT that Postgres turns into a rollback (an earlier statement failed and the work
 * swallowed it) is a failure, never a commit. Rolling back after a failure is the caller's.
 */
async function runTransaction<T>(
  send: (query: PgQuery) => Promise<pg.QueryResult>,
  work: (trx: Transaction) => Promise<T>,
): Promise<T> {
  let begun: Promise<unknown> | null = null;
  let ended = false;
  const commit = async (timeoutMs?: number): Promise<void> => {
    ended = true;
    const { command } = await send({
      text: 'COMMIT',
      ...(timeoutMs === undefined ? {} : { query_timeout: timeoutMs }),
    });
    if (command !== 'COMMIT') throw new Error(`transaction ended with ${command}, not COMMIT`);
  };
  const run = async <Row>(statement: Statement<Row>, timeoutMs?: number): Promise<Row[]> => {
    if (ended) throw new Error('the transaction has ended: no statement may follow its last');
    begun ??= send({ text: 'BEGIN' });
    const [, result] = await Promise.all([begun, send(toPg(statement, timeoutMs))]);
    return result.rows as Row[];
  };
  const runAndCommit = async <Row>(statement: Statement<Row>, timeoutMs?: number): Promise<Row[]> => {
    if (begun === null) {
      ended = true;
      return (await send(toPg(statement, timeoutMs))).rows as Row[];
    }
    const rows = run(statement, timeoutMs);
    const committed = commit(timeoutMs);
    // When the statement fails, its error is the one to report (COMMIT then only says ROLLBACK).
    committed.catch(() => undefined);
    const result = await rows;
    await committed;
    return result;
  };
  const result = await work({ run, runAndCommit });
  if (begun !== null && !ended) await commit();
  return result;
}

/**
 * Runs work in one transaction on a client the caller holds (the relay's, which keeps its session lock).
 * On failure the transaction is rolled back (as far as the connection still allows: a caller that keeps
 * the client after an error must check it) and the error rethrown.
 */
export async function inTransaction<T>(client: pg.ClientBase, work: (trx: Transaction) => Promise<T>): Promise<T> {
  const send = sender(client);
  try {
    return await runTransaction(send, work);
  } catch (error) {
    await send({ text: 'ROLLBACK' }).catch(() => undefined);
    throw error;
  }
}

/**
 * Transactions on connections of a pool (the recorder's). A connection whose statement failed at the
 * connection level (lost, or unanswered past its timeout) is destroyed, not handed to the next one.
 */
export class PooledTransactions {
  constructor(private readonly pool: pg.Pool) {}

  transaction<T>(work: (trx: Transaction) => Promise<T>): Promise<T> {
    return this.withClient(async (client, giveUp) => {
      const send = sender(client);
      try {
        return await runTransaction(send, work);
      } catch (error) {
        if (breaksConnection(error)) giveUp(error);
        else await send({ text: 'ROLLBACK' }).catch(giveUp);
        throw error;
      }
    });
  }

  /** Lends a client to work, which calls giveUp() when the connection must not be reused. */
  private async withClient<T>(
    work: (client: pg.PoolClient, giveUp: (error: unknown) => void) => Promise<T>,
  ): Promise<T> {
    const client = await this.pool.connect();
    let broken: Error | undefined;
    try {
      return await work(client, (error) => (broken = error instanceof Error ? error : new Error(String(error))));
    } finally {
      client.release(broken ?? false);
    }
  }
}
