import path from 'node:path';
import { RuleTester, type Rule } from 'eslint';
import tseslint from 'typescript-eslint';

// The project's own lint rules (lint/localRules.cjs), each on code that must pass and code that must not. jest
// loads the CommonJS plugin as it is; its rules read the table and column names from src/database/schema.ts.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const local = require('../../lint/localRules.cjs') as {
  rules: Record<string, Rule.RuleModule>;
  schemaNames: (text: string) => { tables: Set<string>; columns: Set<string> };
  sqlIdentifiers: (text: string) => string[];
};

const ROOT = path.resolve(__dirname, '../..');
const at = (file: string): string => path.join(ROOT, file);
/** The tag as src/ imports it: the rules know `sql` through its import from kysely. */
const KYSELY_SQL = "import { sql } from 'kysely'; ";
const tester = new RuleTester({
  languageOptions: { parser: tseslint.parser, ecmaVersion: 2022, sourceType: 'module' },
});

describe('local/typed-sql-names', () => {
  tester.run('typed-sql-names', local.rules['typed-sql-names'] as Rule.RuleModule, {
    valid: [
      {
        filename: at('src/outbox/outboxQueries.ts'),
        code:
          KYSELY_SQL +
          "const o = columnsOf('outbox_events', 'o'); sql`SELECT ${o('id')} FROM ${tableOf('outbox_events')} o`;",
      },
      {
        name: 'aliases, casts, CTE names, string literals and functions are not names of the schema',
        filename: at('src/x/xQueries.ts'),
        code:
          KYSELY_SQL +
          "sql`WITH gone (gone_id) AS (SELECT count(*)::int AS status, 'orders' AS id) SELECT gone_id FROM gone`;",
      },
      {
        name: 'a keyword in capitals is not a column in lower case (console_audit.at)',
        filename: at('src/x/xQueries.ts'),
        code: KYSELY_SQL + "sql`extract(hour from ${ref} AT TIME ZONE 'UTC')`;",
      },
      { filename: at('src/database/columns.ts'), code: 'sql.ref(column);' },
      { filename: at('src/x/xQueries.ts'), code: 'sql.table(partitionName(table, day)); sql.id(channel);' },
    ],
    invalid: [
      {
        name: 'a column written by hand',
        filename: at('src/reconciliation/scheduleQueries.ts'),
        code: KYSELY_SQL + 'sql`UPDATE ${checks} SET next_check_at = NULL`;',
        errors: [{ messageId: 'handWritten', data: { kind: 'The column', name: 'next_check_at' } }],
      },
      {
        name: 'a table written by hand, in a typed template, qualified or quoted',
        filename: at('src/x/xQueries.ts'),
        code: KYSELY_SQL + 'sql<{ n: string }>`SELECT o.status FROM "orders" o`;',
        errors: [
          { messageId: 'handWritten', data: { kind: 'The column', name: 'status' } },
          { messageId: 'handWritten', data: { kind: 'The table', name: 'orders' } },
        ],
      },
      {
        name: 'a table before its column list is a table, not a function',
        filename: at('src/database/migrations.ts'),
        code: KYSELY_SQL + 'sql`INSERT INTO schema_migrations (${m})`;',
        errors: [{ messageId: 'handWritten', data: { kind: 'The table', name: 'schema_migrations' } }],
      },
      {
        name: 'names given to sql.raw, sql.table and sql.id as strings',
        filename: at('src/x/xQueries.ts'),
        code: KYSELY_SQL + "sql.raw('DELETE FROM refunds'); sql.table('deliveries'); sql.id(`order_owners`);",
        errors: [
          { messageId: 'handWritten', data: { kind: 'The table', name: 'refunds' } },
          { messageId: 'handWritten', data: { kind: 'The table', name: 'deliveries' } },
          { messageId: 'handWritten', data: { kind: 'The table', name: 'order_owners' } },
        ],
      },
      {
        name: 'sql.ref, which takes any string, outside columns.ts',
        filename: at('src/console/order/orderQueries.ts'),
        code: KYSELY_SQL + 'const inDays = (column: string) => sql`${sql.ref(column)} = ANY(${ats})`;',
        errors: [{ messageId: 'untypedRef' }],
      },
      {
        name: 'the tag renamed at its import, or assigned to another name',
        filename: at('src/x/xQueries.ts'),
        code: "import { sql as s } from 'kysely'; s`SELECT status FROM x`; const q = s; q.raw('DELETE FROM refunds');",
        errors: [
          { messageId: 'handWritten', data: { kind: 'The column', name: 'status' } },
          { messageId: 'handWritten', data: { kind: 'The table', name: 'refunds' } },
        ],
      },
      {
        name: 'the tag through a namespace import of kysely',
        filename: at('src/x/xQueries.ts'),
        code: "import * as k from 'kysely'; k.sql`SELECT 1 FROM orders`; k.sql.table('deliveries');",
        errors: [
          { messageId: 'handWritten', data: { kind: 'The table', name: 'orders' } },
          { messageId: 'handWritten', data: { kind: 'The table', name: 'deliveries' } },
        ],
      },
      {
        name: 'names given through constants of the file, also as const and in quotes',
        filename: at('src/x/xQueries.ts'),
        code:
          KYSELY_SQL +
          "const T = 'deliveries'; const C = `order_owners` as const; const Q = '\"refunds\"'; " +
          'sql.table(T); sql.id(C); sql.raw(Q);',
        errors: [
          { messageId: 'handWritten', data: { kind: 'The table', name: 'deliveries' } },
          { messageId: 'handWritten', data: { kind: 'The table', name: 'order_owners' } },
          { messageId: 'handWritten', data: { kind: 'The table', name: 'refunds' } },
        ],
      },
    ],
  });
});

describe('local/queries-in-query-modules', () => {
  tester.run('queries-in-query-modules', local.rules['queries-in-query-modules'] as Rule.RuleModule, {
    valid: [
      { filename: at('src/outbox/outboxQueries.ts'), code: "import { sql } from 'kysely'; db.selectFrom('x');" },
      {
        filename: at('src/console/overview/overviewQueries.ts'),
        code: "import { sql } from 'kysely'; db.insertInto('x');",
      },
      { filename: at('src/database/pool.ts'), code: "import { sql } from 'kysely'; sql`SELECT 1`;" },
      {
        filename: at('src/console/overview/overviewRoutes.ts'),
        code: "import { type Kysely } from 'kysely'; readOrderStory(db, id);",
      },
      {
        name: 'types by name, and a query given no SQL text',
        filename: at('src/seeding/copyRows.ts'),
        code:
          "import { type CompiledQuery } from 'kysely'; import type { Kysely } from 'kysely';" +
          " client.query(copyFrom(target)); url.query('page=2'); db.query(statement);",
      },
    ],
    invalid: [
      {
        filename: at('src/console/overview/overviewRoutes.ts'),
        code: "import { sql } from 'kysely'; await db.selectFrom('orders').selectAll().execute();",
        errors: [{ messageId: 'sqlTag' }, { messageId: 'builder', data: { method: 'selectFrom' } }],
      },
      {
        filename: at('src/cli/commands/inspect.ts'),
        code: "trx.deleteFrom('refunds'); queries.updateTable('orders'); db.insertInto('x'); db.mergeInto('y');",
        errors: [
          { messageId: 'builder', data: { method: 'deleteFrom' } },
          { messageId: 'builder', data: { method: 'updateTable' } },
          { messageId: 'builder', data: { method: 'insertInto' } },
          { messageId: 'builder', data: { method: 'mergeInto' } },
        ],
      },
      {
        name: 'the tag renamed, a namespace import, CompiledQuery',
        filename: at('src/cli/commands/inspect.ts'),
        code:
          "import { sql as s } from 'kysely'; import * as k from 'kysely'; import { CompiledQuery } from 'kysely';" +
          " CompiledQuery.raw('SELECT 1');",
        errors: [{ messageId: 'sqlTag' }, { messageId: 'namespace' }, { messageId: 'compiledQuery' }],
      },
      {
        name: 'pg’s query given SQL text: a string, a template, a config with text, past a comment',
        filename: at('src/seeding/seedWorker.ts'),
        code:
          "client.query('BEGIN'); pool.query(`select * from x where y = ${y}`);" +
          " client.query({ text: 'UPDATE orders SET status = $1', values }); c.query('-- why\\n  SET jit = off');",
        errors: [
          { messageId: 'sqlText' },
          { messageId: 'sqlText' },
          { messageId: 'sqlText' },
          { messageId: 'sqlText' },
        ],
      },
    ],
  });
});

describe('local/html-by-tag-only', () => {
  tester.run('html-by-tag-only', local.rules['html-by-tag-only'] as Rule.RuleModule, {
    valid: [
      { filename: at('src/console/frame/html.ts'), code: 'const made = new Html(text);' },
      { filename: at('src/console/order/orderView.ts'), code: 'const page = html`<p>${x}</p>`; href(["orders", id]);' },
    ],
    invalid: [
      {
        filename: at('src/console/order/orderView.ts'),
        code: 'const raw = new Html(untrusted); const link = new Href(value);',
        errors: [
          { messageId: 'made', data: { name: 'Html' } },
          { messageId: 'made', data: { name: 'Href' } },
        ],
      },
      {
        filename: at('src/console/order/orderActionRoutes.ts'),
        code: 'const a = value as Href; const b = <Html>other;',
        errors: [
          { messageId: 'made', data: { name: 'Href' } },
          { messageId: 'made', data: { name: 'Html' } },
        ],
      },
    ],
  });
});

describe('the names the rules read', () => {
  it('When schema.ts is read, then its tables and their columns are the names, and nothing else', () => {
    const names = local.schemaNames(`
      interface OrdersTable { order_id: string; status: string }
      /** Not a table: Database does not name it. */
      interface Other { stray: string }
      export interface Database { orders: OrdersTable }`);
    expect([...names.tables]).toEqual(['orders']);
    expect([...names.columns]).toEqual(['order_id', 'status']);
  });

  it('When SQL text is read, then comments, strings, casts, aliases and function names are passed over', () => {
    expect(
      local.sqlIdentifiers(`SELECT a.x, "b" AS y, count(z)::int -- c d\n FROM t WHERE s = 'e f' AND g IS NOT NULL`),
    ).toEqual(['SELECT', 'a', 'x', 'b', 'AS', 'z', 'FROM', 't', 'WHERE', 's', 'AND', 'g', 'IS', 'NOT', 'NULL']);
  });
});
