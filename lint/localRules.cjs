/**
 * The project's own lint rules (eslint.config.mjs turns them on for src/; test/unit/localRules.test.ts tests
 * them). They make the data layer's and the console's conventions facts (ARCHITECTURE.md, "The data layer"):
 *
 * - `local/queries-in-query-modules`: SQL is written in query modules only: a file named `*Queries.ts`, a file
 *   under a `queries/` folder, or the data layer's own infrastructure in `src/database/`. Elsewhere, no `sql`
 *   from kysely and no query builder (`selectFrom`, `insertInto`, `updateTable`, `deleteFrom`, ...).
 * - `local/typed-sql-names`: no table or column of src/database/schema.ts written by hand inside a `sql`
 *   template or a `sql.raw`/`sql.ref`/`sql.table`/`sql.id` string: each goes through `columnsOf(table)` or
 *   `sql.table(table)` with `table: Table` (src/database/columns.ts), so renaming one fails tsc. `sql.ref` itself
 *   is columns.ts's only.
 * - `local/html-by-tag-only`: `Html` and `Href` are made by src/console/html.ts alone (its tag, its escaping
 *   helpers, its route builder): no `new Html(`/`new Href(`, no `as Html`/`as Href`, anywhere else.
 *
 * The names are read from schema.ts itself (its `Database` interface and the table interfaces it names), never
 * listed here.
 */
'use strict';

const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..');
const SCHEMA = path.join(ROOT, 'src', 'database', 'schema.ts');

/** @type {Map<string, { tables: Set<string>, columns: Set<string> }>} */
const namesBySchema = new Map();

/**
 * The tables (the properties of `interface Database`) and the columns (the properties of the interfaces those
 * tables are typed with) of a schema.ts's text.
 */
function schemaNames(text) {
  const ts = require('typescript');
  const source = ts.createSourceFile('schema.ts', text, ts.ScriptTarget.Latest, false);
  const interfaces = new Map();
  for (const statement of source.statements)
    if (ts.isInterfaceDeclaration(statement)) interfaces.set(statement.name.text, statement);
  const database = interfaces.get('Database');
  if (!database) throw new Error('schema.ts has no interface Database');
  const tables = new Set();
  const columns = new Set();
  for (const member of database.members) {
    if (!ts.isPropertySignature(member) || !member.name || !ts.isIdentifier(member.name)) continue;
    tables.add(member.name.text);
    const type = member.type;
    const table = type && ts.isTypeReferenceNode(type) ? interfaces.get(type.typeName.getText(source)) : undefined;
    if (!table) throw new Error(`schema.ts: the table ${member.name.text} is not typed by an interface of its own`);
    for (const column of table.members)
      if (ts.isPropertySignature(column) && column.name && ts.isIdentifier(column.name)) columns.add(column.name.text);
  }
  return { tables, columns };
}

/** The names of the schema at `file` (src/database/schema.ts unless a test gives its own), read once. */
function namesOf(file = SCHEMA) {
  let names = namesBySchema.get(file);
  if (!names) {
    names = schemaNames(fs.readFileSync(file, 'utf8'));
    namesBySchema.set(file, names);
  }
  return names;
}

/** The file's path from the repository's root, with forward slashes. */
const relative = (context) => path.relative(ROOT, context.filename).split(path.sep).join('/');

/** Where SQL may be written: query modules, and the data layer's own infrastructure. */
const isQueryModule = (file) =>
  /(^|\/)[^/]*Queries\.ts$/.test(file) || /(^|\/)queries\/[^/]+\.ts$/.test(file) || file.startsWith('src/database/');

/**
 * The identifiers a piece of SQL text names: outside string literals, quoted identifiers kept, comments dropped;
 * not a type after `::`, an alias after `AS`, nor a function's name (written against its `(`).
 */
function sqlIdentifiers(text) {
  const found = [];
  const stripped = text.replace(/--[^\n]*/g, ' ').replace(/'(?:[^']|'')*'/g, "''");
  const token = /"((?:[^"]|"")+)"|([A-Za-z_][A-Za-z0-9_$]*)/g;
  let match;
  while ((match = token.exec(stripped)) !== null) {
    const name = match[1] ?? match[2];
    const before = stripped.slice(0, match.index);
    const after = stripped.slice(match.index + match[0].length);
    if (/::\s*$/.test(before) || /\bAS\s+$/i.test(before) || after.startsWith('(')) continue;
    found.push(name);
  }
  return found;
}

/** `sql`, the kysely tag, as the callee's object or the tag itself. */
const isSql = (node) => node && node.type === 'Identifier' && node.name === 'sql';

/** A string the source spells out in full: a string literal, or a template literal without expressions. */
function literalText(node) {
  if (!node) return null;
  if (node.type === 'Literal' && typeof node.value === 'string') return node.value;
  if (node.type === 'TemplateLiteral' && node.expressions.length === 0) return node.quasis[0].value.cooked;
  return null;
}

const typedSqlNames = {
  meta: {
    type: 'problem',
    docs: { description: 'no table or column name written by hand in SQL: name them through columnsOf/sql.table' },
    schema: [{ type: 'object', properties: { schema: { type: 'string' } }, additionalProperties: false }],
    messages: {
      handWritten:
        '{{kind}} `{{name}}` is written by hand in SQL: name it through columnsOf(...)/sql.table(table: Table) ' +
        '(src/database/columns.ts), so that renaming it fails tsc',
      untypedRef: 'sql.ref takes any string: name columns through columnsOf(table) (src/database/columns.ts)',
    },
  },
  create(context) {
    const option = context.options[0];
    const names = namesOf(option && option.schema ? path.resolve(ROOT, option.schema) : SCHEMA);
    const file = relative(context);
    const check = (node, text) => {
      for (const name of sqlIdentifiers(text)) {
        const kind = names.tables.has(name) ? 'The table' : names.columns.has(name) ? 'The column' : null;
        if (kind) context.report({ node, messageId: 'handWritten', data: { kind, name } });
      }
    };
    return {
      TaggedTemplateExpression(node) {
        if (!isSql(node.tag)) return;
        for (const quasi of node.quasi.quasis) check(quasi, quasi.value.cooked ?? quasi.value.raw);
      },
      CallExpression(node) {
        const callee = node.callee;
        if (callee.type !== 'MemberExpression' || !isSql(callee.object) || callee.property.type !== 'Identifier')
          return;
        const method = callee.property.name;
        if (method === 'ref' && file !== 'src/database/columns.ts') {
          context.report({ node, messageId: 'untypedRef' });
          return;
        }
        const text = literalText(node.arguments[0]);
        if (text === null) return;
        if (method === 'raw') check(node.arguments[0], text);
        else if (method === 'ref' || method === 'table' || method === 'id')
          check(node.arguments[0], `"${text.split('.').join('"."')}"`);
      },
    };
  },
};

const BUILDER_ENTRIES = new Set(['selectFrom', 'insertInto', 'updateTable', 'deleteFrom', 'mergeInto', 'replaceInto']);

const queriesInQueryModules = {
  meta: {
    type: 'problem',
    docs: { description: 'SQL only in query modules (*Queries.ts, queries/, src/database/)' },
    schema: [],
    messages: {
      sqlTag:
        'SQL is written in query modules only (a *Queries.ts file, a queries/ folder, src/database/): ' +
        'call one from here (ARCHITECTURE.md, "The data layer")',
      builder:
        '`{{method}}` builds a query: queries are built in query modules only (a *Queries.ts file, a queries/ ' +
        'folder, src/database/); call one from here (ARCHITECTURE.md, "The data layer")',
    },
  },
  create(context) {
    if (isQueryModule(relative(context))) return {};
    return {
      ImportDeclaration(node) {
        if (node.source.value !== 'kysely') return;
        for (const specifier of node.specifiers)
          if (specifier.type === 'ImportSpecifier' && specifier.imported.name === 'sql')
            context.report({ node: specifier, messageId: 'sqlTag' });
      },
      CallExpression(node) {
        const callee = node.callee;
        if (
          callee.type === 'MemberExpression' &&
          callee.property.type === 'Identifier' &&
          BUILDER_ENTRIES.has(callee.property.name)
        )
          context.report({ node: callee.property, messageId: 'builder', data: { method: callee.property.name } });
      },
    };
  },
};

const MADE_BY_HTML_TS = new Set(['Html', 'Href']);

const htmlByTagOnly = {
  meta: {
    type: 'problem',
    docs: { description: 'Html and Href are made by src/console/html.ts only' },
    schema: [],
    messages: {
      made:
        '{{name}} is made only by src/console/html.ts (the html tag, its escaping helpers, href()): ' +
        'build markup with html`...` and links with href(...)',
    },
  },
  create(context) {
    if (relative(context) === 'src/console/html.ts') return {};
    const report = (node, name) => context.report({ node, messageId: 'made', data: { name } });
    const madeName = (type) =>
      type &&
      type.type === 'TSTypeReference' &&
      type.typeName.type === 'Identifier' &&
      MADE_BY_HTML_TS.has(type.typeName.name)
        ? type.typeName.name
        : null;
    return {
      NewExpression(node) {
        if (node.callee.type === 'Identifier' && MADE_BY_HTML_TS.has(node.callee.name)) report(node, node.callee.name);
      },
      TSAsExpression(node) {
        const name = madeName(node.typeAnnotation);
        if (name) report(node, name);
      },
      TSTypeAssertion(node) {
        const name = madeName(node.typeAnnotation);
        if (name) report(node, name);
      },
    };
  },
};

module.exports = {
  meta: { name: 'local' },
  rules: {
    'typed-sql-names': typedSqlNames,
    'queries-in-query-modules': queriesInQueryModules,
    'html-by-tag-only': htmlByTagOnly,
  },
  /** For tests: what the rules read. */
  schemaNames,
  sqlIdentifiers,
  isQueryModule,
};
