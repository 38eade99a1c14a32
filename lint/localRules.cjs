/**
 * The project's own lint rules (eslint.config.mjs turns them on for src/; test/unit/localRules.test.ts tests
 * them). They make the data layer's and the console's conventions facts (ARCHITECTURE.md, "The data layer"):
 *
 * - `local/queries-in-query-modules`: SQL is written in query modules only: a file named `*Queries.ts`, a file
 *   under a `queries/` folder, or the data layer's own infrastructure in `src/database/`. Elsewhere, no `sql`
 *   from kysely (whatever its local name), no namespace import of kysely, no `CompiledQuery` (`.raw` takes any
 *   text), no query builder (`selectFrom`, `insertInto`, `updateTable`, `deleteFrom`, ...) and no pg
 *   `.query('…')` given SQL text.
 * - `local/typed-sql-names`: no table or column of src/database/schema.ts written by hand inside a `sql`
 *   template or given to `sql.raw`/`sql.ref`/`sql.table`/`sql.id`, as a string or as a constant of the file
 *   holding one: each goes through `columnsOf(table)` or `sql.table(table)` with `table: Table`
 *   (src/database/columns.ts), or a constant that `satisfies Table`, so renaming one fails tsc. `sql.ref` itself
 *   is columns.ts's only. The tag is known through its import from kysely, whatever it is called here.
 * - `local/html-by-tag-only`: `Html` and `Href` are made by src/console/frame/html.ts alone (its tag, its escaping
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

/**
 * How a file can name kysely's `sql` tag: the local names it is imported (or later assigned) as, and the names of
 * kysely's namespace imports (`k.sql`). Read from the program's imports, so `sql as s` is still the tag.
 */
function sqlBindings(program) {
  const tags = new Set();
  const namespaces = new Set();
  for (const statement of program.body) {
    if (statement.type !== 'ImportDeclaration' || statement.source.value !== 'kysely') continue;
    for (const specifier of statement.specifiers) {
      if (specifier.type === 'ImportNamespaceSpecifier') namespaces.add(specifier.local.name);
      else if (specifier.type === 'ImportSpecifier' && importedName(specifier) === 'sql')
        tags.add(specifier.local.name);
    }
  }
  return { tags, namespaces };
}

const importedName = (specifier) =>
  specifier.imported.type === 'Identifier' ? specifier.imported.name : String(specifier.imported.value);

/** Whether `node` is kysely's `sql` tag as this file names it: `sql`, `s` (imported as), `k.sql`, or an alias. */
function isSqlOf(bindings, node) {
  if (!node) return false;
  if (node.type === 'Identifier') return bindings.tags.has(node.name);
  return (
    node.type === 'MemberExpression' &&
    !node.computed &&
    node.object.type === 'Identifier' &&
    bindings.namespaces.has(node.object.name) &&
    node.property.type === 'Identifier' &&
    node.property.name === 'sql'
  );
}

/** The const declarator of this file that `identifier` refers to, or null (a parameter, an import, a `let`). */
function constDeclarator(context, identifier) {
  let scope = context.sourceCode.getScope(identifier);
  while (scope) {
    const variable = scope.set.get(identifier.name);
    if (variable) {
      const def = variable.defs[0];
      return def && def.type === 'Variable' && def.parent.kind === 'const' ? def.node : null;
    }
    scope = scope.upper;
  }
  return null;
}

/**
 * The text a name given to `sql.raw`/`sql.table`/`sql.id` spells out by hand: a string, or a const of this file
 * initialised with one (also `as const`). Null when it is typed (`satisfies Table`, a `Table` parameter) or
 * computed.
 */
function handWrittenText(context, node) {
  const text = literalText(node);
  if (text !== null || !node || node.type !== 'Identifier') return text;
  const declarator = constDeclarator(context, node);
  let init = declarator && declarator.init;
  if (declarator && declarator.id.typeAnnotation) return null;
  while (init && init.type === 'TSAsExpression') init = init.expression;
  return init ? literalText(init) : null;
}

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
    let bindings = { tags: new Set(), namespaces: new Set() };
    return {
      Program(program) {
        bindings = sqlBindings(program);
      },
      VariableDeclarator(node) {
        // `const s = sql;` is the tag under another name.
        if (node.id.type === 'Identifier' && isSqlOf(bindings, node.init)) bindings.tags.add(node.id.name);
      },
      TaggedTemplateExpression(node) {
        if (!isSqlOf(bindings, node.tag)) return;
        for (const quasi of node.quasi.quasis) check(quasi, quasi.value.cooked ?? quasi.value.raw);
      },
      CallExpression(node) {
        const callee = node.callee;
        if (
          callee.type !== 'MemberExpression' ||
          !isSqlOf(bindings, callee.object) ||
          callee.property.type !== 'Identifier'
        )
          return;
        const method = callee.property.name;
        if (method === 'ref' && file !== 'src/database/columns.ts') {
          context.report({ node, messageId: 'untypedRef' });
          return;
        }
        const text = handWrittenText(context, node.arguments[0]);
        if (text === null) return;
        if (method === 'raw') check(node.arguments[0], text);
        else if (method === 'ref' || method === 'table' || method === 'id')
          check(node.arguments[0], `"${text.split('.').join('"."')}"`);
      },
    };
  },
};

/** The text given to a pg `.query(...)`: a string, a template (its fixed parts), or a `{ text }` config. */
function queryText(node) {
  if (!node) return null;
  if (node.type === 'TemplateLiteral') return node.quasis.map((q) => q.value.cooked ?? q.value.raw).join(' ');
  if (node.type === 'ObjectExpression') {
    const text = node.properties.find(
      (p) => p.type === 'Property' && !p.computed && p.key.type === 'Identifier' && p.key.name === 'text',
    );
    return text ? queryText(text.value) : null;
  }
  return literalText(node);
}

/** SQL text: it opens (past comments and blanks) with a statement's keyword, as every statement does. */
const SQL_STATEMENT =
  /^(?:\s|--[^\n]*\n|\/\*[\s\S]*?\*\/)*(?:SELECT|INSERT|UPDATE|DELETE|MERGE|WITH|VALUES|TABLE|BEGIN|START|COMMIT|END|ROLLBACK|ABORT|SAVEPOINT|RELEASE|SET|RESET|SHOW|DISCARD|CREATE|ALTER|DROP|TRUNCATE|COPY|LISTEN|UNLISTEN|NOTIFY|LOCK|VACUUM|ANALYZE|EXPLAIN|DO|CALL|GRANT|REVOKE|PREPARE|EXECUTE|DEALLOCATE|DECLARE|FETCH|MOVE|CLOSE|REFRESH|REINDEX|CLUSTER|COMMENT)\b/i;
const isSqlText = (text) => text !== null && SQL_STATEMENT.test(text);

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
      namespace:
        'a namespace import of kysely reaches `sql` and `CompiledQuery`: import the types by name here, and write ' +
        'SQL in a query module (a *Queries.ts file, a queries/ folder, src/database/)',
      compiledQuery:
        '`CompiledQuery` takes any SQL text (`CompiledQuery.raw`): write SQL in a query module (a *Queries.ts ' +
        'file, a queries/ folder, src/database/)',
      sqlText:
        '`.query(...)` is given SQL text: SQL is written in query modules only (a *Queries.ts file, a queries/ ' +
        'folder, src/database/); call one from here',
    },
  },
  create(context) {
    if (isQueryModule(relative(context))) return {};
    return {
      ImportDeclaration(node) {
        if (node.source.value !== 'kysely') return;
        for (const specifier of node.specifiers) {
          if (specifier.type === 'ImportNamespaceSpecifier')
            context.report({ node: specifier, messageId: 'namespace' });
          if (specifier.type !== 'ImportSpecifier') continue;
          // A type-only import (`import { type CompiledQuery }`, `import type { ... }`) writes no SQL.
          if (specifier.importKind === 'type' || node.importKind === 'type') continue;
          if (importedName(specifier) === 'sql') context.report({ node: specifier, messageId: 'sqlTag' });
          if (importedName(specifier) === 'CompiledQuery')
            context.report({ node: specifier, messageId: 'compiledQuery' });
        }
      },
      CallExpression(node) {
        const callee = node.callee;
        if (callee.type !== 'MemberExpression' || callee.property.type !== 'Identifier') return;
        const method = callee.property.name;
        if (BUILDER_ENTRIES.has(method))
          context.report({ node: callee.property, messageId: 'builder', data: { method } });
        else if (method === 'query' && isSqlText(queryText(node.arguments[0])))
          context.report({ node: callee.property, messageId: 'sqlText' });
      },
    };
  },
};

const MADE_BY_HTML_TS = new Set(['Html', 'Href']);

const htmlByTagOnly = {
  meta: {
    type: 'problem',
    docs: { description: 'Html and Href are made by src/console/frame/html.ts only' },
    schema: [],
    messages: {
      made:
        '{{name}} is made only by src/console/frame/html.ts (the html tag, its escaping helpers, href()): ' +
        'build markup with html`...` and links with href(...)',
    },
  },
  create(context) {
    if (relative(context) === 'src/console/frame/html.ts') return {};
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
  isSqlText,
};
