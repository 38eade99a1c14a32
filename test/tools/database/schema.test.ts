import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { ROOT } from '../../support/build';

// Every column of src/database/schema.ts is named in a typed way everywhere src/ names it (issues 47 and 57):
// renamed in schema.ts, one at a time, it fails the type check of every file of src/ that names it, not only of
// one. With the lint rule local/typed-sql-names (no name written by hand in SQL), that makes a renamed column fail
// tsc wherever it is used, never at run time.
//
// The places that name a column are found by the type checker in the unrenamed program, never by their text: a
// name whose symbol is the column's property in schema.ts (through aliases, unions and homomorphic mapped types);
// and a string or an object literal's key that its context types as a column: Kysely's `.select('status')`,
// `where('o.status', ...)`, `.values({ status })`, `columnsOf('orders')('status')` (src/database/columns.ts), a
// generic parameter's context by its constraint, every overload's. Whose column such a string or key names, the
// context alone does not tell ('status' is in three tables): a probe program, whose schema gives each table one
// more column named after it (markerOf), does: 'status' names orders.status where its context there also takes
// orders' marker, and not a name of no table (a `string`). A string its context does not type as a column (a raw
// SQL string) is not found: local/typed-sql-names keeps src/ free of them.
//
// Then each rename makes a program that shares every file but schema.ts with the last (TypeScript's oldProgram)
// and checks only the files that name the column, each of which must fail: about 350 files for 170 columns, 1.6
// times the old check of the first failing file (270 s against 164 s on 2 busy cores, 2026-12-03). Nothing is
// written: schema.ts is replaced in memory. The last test runs the same on three files held in memory, one of
// which names a column where its rename is no error, and shows that file reported with the line.

const SRC = path.join(ROOT, 'src');
const SCHEMA = path.join(SRC, 'database', 'schema.ts');

/** Columns no module of src/ reads or writes: the migration gives them their value, and nothing asks for it. */
const UNUSED = new Set(['reconciliation_progress.singleton', 'database_watch.singleton', 'outbox_cursor.singleton']);

interface SchemaColumn {
  table: string;
  column: string;
  /** Where its name is in schema.ts's text. */
  start: number;
  end: number;
}

/** The columns of every table of `interface Database`, with where each is declared. */
function schemaColumns(fileName: string, text: string): SchemaColumn[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true);
  const interfaces = new Map(
    source.statements.filter(ts.isInterfaceDeclaration).map((declaration) => [declaration.name.text, declaration]),
  );
  const database = interfaces.get('Database');
  if (!database) throw new Error(`${fileName} has no interface Database`);
  return database.members.filter(ts.isPropertySignature).flatMap((table) => {
    const type = table.type && ts.isTypeReferenceNode(table.type) ? table.type.typeName.getText(source) : '';
    const members: readonly ts.TypeElement[] = interfaces.get(type)?.members ?? [];
    return members.filter(ts.isPropertySignature).map(({ name }) => ({
      table: table.name.getText(source),
      column: name.getText(source),
      start: name.getStart(source),
      end: name.getEnd(),
    }));
  });
}

const keyOf = ({ table, column }: SchemaColumn): string => `${table}.${column}`;

/** The schema's text with each of `columns` renamed by `rename`. */
function renamed(text: string, columns: readonly SchemaColumn[], rename: (c: SchemaColumn) => string): string {
  let out = text;
  for (const c of [...columns].sort((a, b) => b.start - a.start))
    out = `${out.slice(0, c.start)}${rename(c)}${out.slice(c.end)}`;
  return out;
}

/**
 * The probe: the schema with one more column in each table, named after the table. A context that takes a table's
 * marker takes that table's columns; one that takes any name (`string`) takes the marker of no table too.
 */
const markerOf = (table: string): string => `probe_marker_of_${table}`;
const NO_TABLE = markerOf('no_table');

function withMarkers(fileName: string, text: string): string {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true);
  const interfaces = new Map(
    source.statements.filter(ts.isInterfaceDeclaration).map((declaration) => [declaration.name.text, declaration]),
  );
  const tables: readonly ts.TypeElement[] = interfaces.get('Database')?.members ?? [];
  const ends = tables.filter(ts.isPropertySignature).flatMap((table) => {
    const type = table.type && ts.isTypeReferenceNode(table.type) ? table.type.typeName.getText(source) : '';
    const declaration = interfaces.get(type);
    return declaration ? [{ at: declaration.getEnd() - 1, table: table.name.getText(source) }] : [];
  });
  let out = text;
  for (const { at, table } of ends.sort((a, b) => b.at - a.at))
    out = `${out.slice(0, at)}  ${markerOf(table)}?: string;\n${out.slice(at)}`;
  return out;
}

/**
 * TypeScript's ContextFlags.Completions (internal to it): the contextual type an editor completes a string from.
 * Without it, a generic parameter's argument (Kysely's `where<RE extends ReferenceExpression<DB, TB>>(lhs: RE)`)
 * is typed by what was inferred from the argument itself, `'status'`, whatever the schema says; with it, by the
 * parameter's constraint: every column the query may name.
 */
const COMPLETIONS = 4;

/**
 * The types a string or an object literal is checked against: its contextual type, and where it is a call's
 * argument (or an element of an array that is), the parameter's type in each of the callee's overloads, a type
 * parameter by its constraint. The contextual type alone is one overload's (`select(['a'])` for `select('a')`).
 */
function contextsOf(checker: ts.TypeChecker, node: ts.Expression): readonly ts.Type[] {
  const getContextualType: (node: ts.Expression, flags: number) => ts.Type | undefined =
    checker.getContextualType.bind(checker);
  const types: ts.Type[] = [];
  const contextual = getContextualType(node, COMPLETIONS);
  if (contextual) types.push(contextual);
  const element = ts.isArrayLiteralExpression(node.parent);
  const argument = element ? node.parent : node;
  const call = argument.parent;
  if (ts.isCallExpression(call) && call.arguments.some((a) => a === argument)) {
    const index = call.arguments.findIndex((a) => a === argument);
    // The callee's own signatures: those the call resolved to are instantiated with what was inferred from it.
    const candidates = checker.getSignaturesOfType(checker.getTypeAtLocation(call.expression), ts.SignatureKind.Call);
    for (const signature of candidates) {
      const parameters = signature.getParameters();
      const last = parameters[parameters.length - 1];
      const rest =
        last?.valueDeclaration && ts.isParameter(last.valueDeclaration) && last.valueDeclaration.dotDotDotToken;
      const parameter = index < parameters.length - (rest ? 1 : 0) ? parameters[index] : rest ? last : undefined;
      if (!parameter) continue;
      let type: ts.Type | undefined = checker.getTypeOfSymbol(parameter);
      if (rest && parameter === last) type = checker.getIndexTypeOfType(type, ts.IndexKind.Number);
      if (type && element) type = checker.getIndexTypeOfType(type, ts.IndexKind.Number);
      if (type?.isTypeParameter()) type = checker.getBaseConstraintOfType(type);
      if (type) types.push(type);
    }
  }
  // `any`, as the contextual type of an argument its call's inference is blocked from, says nothing.
  return types
    .filter((type) => !(type.flags & (ts.TypeFlags.Any | ts.TypeFlags.Unknown)))
    .flatMap((type) => (type.isUnion() ? type.types : [type]));
}

/** `'status'`, `'o.status'`, `'orders.status as s'`: the column, and what qualifies it. */
function columnReference(text: string): { qualifier: string | null; column: string } {
  const reference = text.split(' as ')[0]?.trim() ?? '';
  const dot = reference.lastIndexOf('.');
  return dot < 0
    ? { qualifier: null, column: reference }
    : { qualifier: reference.slice(0, dot), column: reference.slice(dot + 1) };
}

/** Where each column is named: file, then the lines. */
type Places = Map<string, Map<string, number[]>>;

interface Workspace {
  schemaFile: string;
  schemaText: string;
  /** The files that may name a column: all but the schema. */
  files: readonly string[];
  compile(schemaText: string): ts.Program;
}

/**
 * Every place of `files` that names a column, found by `program`'s checker; `probe` is the program whose schema
 * has the tables' markers (withMarkers), and tells which table's column a string or a key names.
 */
function namingPlaces(
  { schemaFile, files }: Workspace,
  columns: readonly SchemaColumn[],
  program: ts.Program,
  probe: ts.Program,
): Places {
  const checker = program.getTypeChecker();
  const probeChecker = probe.getTypeChecker();
  const schema = program.getSourceFile(schemaFile);
  if (!schema) throw new Error(`${schemaFile} is not in the program`);
  const byStart = new Map(columns.map((c) => [c.start, keyOf(c)]));
  const tablesOf = new Map<string, string[]>();
  for (const { table, column } of columns) tablesOf.set(column, [...(tablesOf.get(column) ?? []), table]);
  const tableNames = new Set(columns.map((c) => c.table));

  const places: Places = new Map();
  const add = (key: string, source: ts.SourceFile, node: ts.Node): void => {
    const byFile = places.get(key) ?? new Map<string, number[]>();
    places.set(key, byFile);
    const lines = byFile.get(source.fileName) ?? [];
    byFile.set(source.fileName, lines);
    const line = source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
    if (!lines.includes(line)) lines.push(line);
  };

  /** The columns a symbol is: its declarations, or those of what it was derived from. */
  const columnsOfSymbol = (symbol: ts.Symbol | undefined, into: Set<string>, seen = new Set<ts.Symbol>()): void => {
    if (!symbol || seen.has(symbol)) return;
    seen.add(symbol);
    if (symbol.flags & ts.SymbolFlags.Alias) columnsOfSymbol(checker.getAliasedSymbol(symbol), into, seen);
    for (const declaration of symbol.declarations ?? []) {
      const inSchema = declaration.getSourceFile() === schema && ts.isPropertySignature(declaration);
      const column = inSchema ? byStart.get(declaration.name.getStart(schema)) : undefined;
      if (column !== undefined) into.add(column);
    }
    for (const root of checker.getRootSymbols(symbol)) if (root !== symbol) columnsOfSymbol(root, into, seen);
  };
  const propertiesNamed = (types: readonly ts.Type[], name: string, on: ts.TypeChecker): ts.Symbol[] =>
    types.flatMap((type) => on.getPropertyOfType(type, name) ?? []);

  /** A name: a property access's, an object literal's key, a destructured property, `T['column']`. */
  const visitName = (source: ts.SourceFile, node: ts.Identifier | ts.StringLiteral, name: string): void => {
    const found = new Set<string>();
    const symbols = [checker.getSymbolAtLocation(node)];
    const parent = node.parent;
    const objectLiteral =
      (ts.isPropertyAssignment(parent) || ts.isShorthandPropertyAssignment(parent)) &&
      parent.name === node &&
      ts.isObjectLiteralExpression(parent.parent)
        ? parent.parent
        : undefined;
    if (objectLiteral) {
      symbols.push(...propertiesNamed(contextsOf(checker, objectLiteral), name, checker));
      // A key of a mapped type of Kysely's (`.values({...})`, `.set({...})`) has no declaration to follow: the
      // probe tells whose column it is, if its context there takes the table's marker too.
      const probeTypes = contextsOf(probeChecker, objectLiteral);
      const takes = (key: string) => propertiesNamed(probeTypes, key, probeChecker).length > 0;
      if (takes(name) && !takes(NO_TABLE))
        for (const table of tablesOf.get(name) ?? []) if (takes(markerOf(table))) found.add(`${table}.${name}`);
    }
    if (ts.isBindingElement(parent) && (parent.propertyName ?? parent.name) === node)
      symbols.push(...propertiesNamed([checker.getTypeAtLocation(parent.parent)], name, checker));
    for (const symbol of symbols) columnsOfSymbol(symbol, found);
    for (const key of found) add(key, source, node);
  };

  /** A string its context types as a column of a table: in the probe, it takes the table's marker in its place. */
  const visitString = (source: ts.SourceFile, node: ts.StringLiteral | ts.NoSubstitutionTemplateLiteral): void => {
    const { qualifier, column } = columnReference(node.text);
    const tables = (tablesOf.get(column) ?? []).filter(
      (t) => qualifier === null || !tableNames.has(qualifier) || t === qualifier,
    );
    if (tables.length === 0) return;
    const probeTypes = contextsOf(probeChecker, node);
    const at = node.text.lastIndexOf(column, node.text.includes(' as ') ? node.text.indexOf(' as ') : undefined);
    const takes = (name: string) => {
      const literal = probeChecker.getStringLiteralType(
        `${node.text.slice(0, at)}${name}${node.text.slice(at + column.length)}`,
      );
      return probeTypes.some((type) => probeChecker.isTypeAssignableTo(literal, type));
    };
    if (!takes(column) || takes(NO_TABLE)) return;
    for (const table of tables) if (takes(markerOf(table))) add(`${table}.${column}`, source, node);
  };

  for (const file of files) {
    const source = program.getSourceFile(file);
    if (!source) throw new Error(`${file} is not in the program`);
    const visit = (node: ts.Node): void => {
      if (ts.isIdentifier(node) && tablesOf.has(node.text)) visitName(source, node, node.text);
      else if (
        ts.isStringLiteral(node) &&
        (ts.isPropertyAssignment(node.parent) || ts.isLiteralTypeNode(node.parent))
      ) {
        if (tablesOf.has(node.text)) visitName(source, node, node.text);
      } else if (
        (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) &&
        !ts.isImportDeclaration(node.parent) &&
        !ts.isExportDeclaration(node.parent) &&
        !ts.isExternalModuleReference(node.parent)
      )
        visitString(source, node);
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return places;
}

/** The schema's columns, and where `workspace`'s files name each, found in the unrenamed program. */
function columnPlaces(workspace: Workspace): { columns: SchemaColumn[]; places: Places } {
  const columns = schemaColumns(workspace.schemaFile, workspace.schemaText);
  const program = workspace.compile(workspace.schemaText);
  const probe = workspace.compile(withMarkers(workspace.schemaFile, workspace.schemaText));
  return { columns, places: namingPlaces(workspace, columns, program, probe) };
}

/**
 * Renames each column in turn and checks the files that name it: one line for each column that a file names but
 * does not fail on, with where it names it there (file:line, relative to `root`); and the columns named nowhere.
 */
function unbrokenUses(
  workspace: Workspace,
  { columns, places }: { columns: SchemaColumn[]; places: Places },
  root: string,
  unused: ReadonlySet<string>,
): string[] {
  const { schemaText } = workspace;
  const problems: string[] = [];
  for (const c of columns) {
    const key = keyOf(c);
    const byFile = places.get(key);
    if (unused.has(key)) {
      if (byFile) problems.push(`${key}: listed as unused, but named`);
      continue;
    }
    if (!byFile) {
      problems.push(`${key}: named nowhere the type checker sees`);
      continue;
    }
    const renamedProgram = workspace.compile(renamed(schemaText, [c], (r) => `${r.column}_renamed`));
    const unbroken = [...byFile].flatMap(([file, lines]) => {
      const source = renamedProgram.getSourceFile(file);
      if (!source) throw new Error(`${file} is not in the program`);
      return renamedProgram.getSemanticDiagnostics(source).length > 0
        ? []
        : lines.map((line) => `${path.relative(root, file)}:${line}`);
    });
    if (unbroken.length > 0) problems.push(`${key}: ${unbroken.join(', ')}`);
  }
  return problems;
}

/** One program after another over the same files, each sharing all but the schema with the last (oldProgram). */
function workspaceOf(
  schemaFile: string,
  rootNames: readonly string[],
  options: ts.CompilerOptions,
  host: ts.CompilerHost,
): Workspace {
  const parsed = new Map<string, ts.SourceFile | undefined>();
  let previous: ts.Program | undefined;
  const getSourceFile = host.getSourceFile.bind(host);
  return {
    schemaFile,
    schemaText: host.readFile(schemaFile) ?? '',
    files: rootNames.filter((f) => f !== schemaFile),
    compile(schemaText) {
      const programHost: ts.CompilerHost = {
        ...host,
        getSourceFile(fileName, languageVersion, onError) {
          if (path.resolve(fileName) === schemaFile)
            return ts.createSourceFile(fileName, schemaText, languageVersion, true);
          if (!parsed.has(fileName)) parsed.set(fileName, getSourceFile(fileName, languageVersion, onError));
          return parsed.get(fileName);
        },
      };
      previous = ts.createProgram({ rootNames, options, host: programHost, oldProgram: previous });
      return previous;
    },
  };
}

/** src/'s program, as tsconfig.json makes it. */
function srcWorkspace(): Workspace {
  const config = ts.getParsedCommandLineOfConfigFile(
    path.join(ROOT, 'tsconfig.json'),
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (d) => {
        throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
      },
    },
  );
  if (!config) throw new Error('tsconfig.json could not be read');
  const options: ts.CompilerOptions = { ...config.options, noEmit: true, incremental: false, composite: false };
  const rootNames = config.fileNames.map((f) => path.resolve(f)).filter((f) => f.startsWith(SRC + path.sep));
  return workspaceOf(SCHEMA, rootNames, options, ts.createCompilerHost(options, true));
}

/** A program of files held in memory, beside the TypeScript's own lib files. */
function memoryWorkspace(files: Record<string, string>, schemaFile: string): Workspace {
  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.CommonJS,
    types: [],
  };
  const disk = ts.createCompilerHost(options, true);
  const host: ts.CompilerHost = {
    ...disk,
    fileExists: (f) => f in files || disk.fileExists(f),
    directoryExists: (d) => Object.keys(files).some((f) => f.startsWith(d + path.sep)) || ts.sys.directoryExists(d),
    readFile: (f) => files[f] ?? disk.readFile(f),
    getSourceFile: (f, languageVersion, onError) => {
      const text = files[f];
      return text === undefined
        ? disk.getSourceFile(f, languageVersion, onError)
        : ts.createSourceFile(f, text, languageVersion, true);
    },
    writeFile: () => {
      throw new Error('nothing is written');
    },
  };
  return workspaceOf(schemaFile, Object.keys(files), options, host);
}

describe('schema.ts', () => {
  const original = readFileSync(SCHEMA, 'utf8');
  const columns = schemaColumns(SCHEMA, original);

  it('When it is read, then every table has its columns, and the unused columns named here exist', () => {
    expect(columns.length).toBeGreaterThan(100);
    const names = new Set(columns.map(keyOf));
    for (const unused of UNUSED) expect(names).toContain(unused);
  });

  it('When each column is renamed, one at a time, then every file of src/ that names it fails the type check', () => {
    const workspace = srcWorkspace();
    expect(unbrokenUses(workspace, columnPlaces(workspace), ROOT, UNUSED)).toEqual([]);
  });

  it('When a column is listed as unused, then no file of src/ but schema.ts names it', () => {
    const files: string[] = [];
    const walk = (dir: string): void => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const file = path.join(dir, entry.name);
        if (entry.isDirectory()) walk(file);
        else if (file.endsWith('.ts') && file !== SCHEMA) files.push(file);
      }
    };
    walk(SRC);
    for (const unused of UNUSED) {
      const column = unused.split('.')[1] ?? '';
      const naming = files.filter((file) => new RegExp(`\\b${column}\\b`).test(readFileSync(file, 'utf8')));
      expect({ unused, naming }).toEqual({ unused, naming: [] });
    }
  });

  it('When a file names a column but its rename is no error there, then that file is reported with file and line', () => {
    const dir = path.join(path.sep, 'memory');
    const file = (name: string) => path.join(dir, name);
    const workspace = memoryWorkspace(
      {
        [file('schema.ts')]: [
          'export interface ThingsTable { id: string; label: string | null }',
          'export interface Database { things: ThingsTable }',
        ].join('\n'),
        [file('columns.ts')]: [
          "import type { Database } from './schema';",
          'export const columnsOf = <T extends keyof Database>(_table: T) => (column: keyof Database[T] & string) => column;',
        ].join('\n'),
        [file('typed.ts')]: [
          "import { columnsOf } from './columns';",
          "import type { ThingsTable } from './schema';",
          "export const labelColumn = columnsOf('things')('label');",
          'export const unlabelled = (thing: ThingsTable): ThingsTable => ({ ...thing, label: null });',
        ].join('\n'),
        [file('hole.ts')]: [
          "import type { ThingsTable } from './schema';",
          'export const ids = (things: ThingsTable[]) => things.map((thing) => thing.id);',
          '// Inferred, the result takes any key: renamed, label is written beside the column, which keeps its value.',
          'export const unlabelled = (things: ThingsTable[]) =>',
          "  things.map((thing) => (thing.id === '' ? thing : { ...thing, label: null }));",
        ].join('\n'),
      },
      file('schema.ts'),
    );
    const found = columnPlaces(workspace);
    const where = (key: string) =>
      Object.fromEntries([...(found.places.get(key) ?? [])].map(([f, lines]) => [path.relative(dir, f), lines]));
    expect(where('things.label')).toEqual({ 'typed.ts': [3, 4], 'hole.ts': [5] });
    expect(where('things.id')).toEqual({ 'hole.ts': [2, 5] });
    expect(unbrokenUses(workspace, found, dir, new Set())).toEqual(['things.label: hole.ts:5']);
  });
});
