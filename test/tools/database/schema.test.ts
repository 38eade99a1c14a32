import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { ROOT } from '../../support/build';

// Every column of src/database/schema.ts is named in a typed way wherever src/ uses it (issue 47): renamed in
// schema.ts, one at a time, it fails the type check. With the lint rule local/typed-sql-names (no name written by
// hand in SQL), that makes a renamed column fail tsc wherever it is used, never at run time. One program, reused:
// each rename makes a new program that shares every other file with the last (TypeScript's oldProgram), and only
// the files of src/ that mention the column are checked, query modules first, until one fails. The tree is never
// written: schema.ts is replaced in memory.

const SRC = path.join(ROOT, 'src');
const SCHEMA = path.join(SRC, 'database', 'schema.ts');
const original = readFileSync(SCHEMA, 'utf8');

/** Columns no module of src/ reads or writes: the migration gives them their value, and nothing asks for it. */
const UNUSED = new Set(['reconciliation_progress.singleton', 'database_watch.singleton']);

interface SchemaColumn {
  table: string;
  column: string;
  /** Where its name is in schema.ts's text. */
  start: number;
  end: number;
}

/** The columns of every table of `interface Database`, with where each is declared. */
function schemaColumns(): SchemaColumn[] {
  const source = ts.createSourceFile(SCHEMA, original, ts.ScriptTarget.Latest, true);
  const interfaces = new Map(
    source.statements.filter(ts.isInterfaceDeclaration).map((declaration) => [declaration.name.text, declaration]),
  );
  const database = interfaces.get('Database');
  if (!database) throw new Error('schema.ts has no interface Database');
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
const rootNames = config.fileNames.filter((f) => path.resolve(f).startsWith(SRC + path.sep));

/** Every file parsed once for all the programs, but schema.ts, which each program has its own of. */
const parsed = new Map<string, ts.SourceFile | undefined>();
let previous: ts.Program | undefined;

function compile(schema: string): ts.Program {
  const host = ts.createCompilerHost(options, true);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (fileName, languageVersion, onError) => {
    if (path.resolve(fileName) === SCHEMA) return ts.createSourceFile(fileName, schema, languageVersion, true);
    if (!parsed.has(fileName)) parsed.set(fileName, getSourceFile(fileName, languageVersion, onError));
    return parsed.get(fileName);
  };
  previous = ts.createProgram({ rootNames, options, host, oldProgram: previous });
  return previous;
}

/** The files of src/ but schema.ts, with their text: query modules first, then the smallest first. */
const sources = ((): Array<{ file: string; text: string }> => {
  const files: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const file = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(file);
      else if (file.endsWith('.ts') && file !== SCHEMA) files.push(file);
    }
  };
  walk(SRC);
  const queryModule = (file: string) => /Queries\.ts$|\/queries\/|\/database\/|batchRows\.ts$/.test(file);
  return files
    .sort((a, b) => Number(queryModule(b)) - Number(queryModule(a)) || statSync(a).size - statSync(b).size)
    .map((file) => ({ file, text: readFileSync(file, 'utf8') }));
})();

/**
 * The first file of src/ that no longer type-checks, or null: of the files that name the column, those that also
 * name its table first (where it is likeliest used).
 */
function firstFailing(program: ts.Program, { table, column }: SchemaColumn): string | null {
  const naming = (name: string) => sources.filter(({ text }) => new RegExp(`\\b${name}\\b`).test(text));
  const candidates = naming(column);
  const withTable = new Set(naming(table));
  for (const { file } of [
    ...candidates.filter((s) => withTable.has(s)),
    ...candidates.filter((s) => !withTable.has(s)),
  ]) {
    const source = program.getSourceFile(file);
    if (source && program.getSemanticDiagnostics(source).length > 0) return path.relative(ROOT, file);
  }
  return null;
}

describe('schema.ts', () => {
  const columns = schemaColumns();

  it('When it is read, then every table has its columns, and the unused columns named here exist', () => {
    expect(columns.length).toBeGreaterThan(100);
    const names = new Set(columns.map((c) => `${c.table}.${c.column}`));
    for (const unused of UNUSED) expect(names).toContain(unused);
  });

  it('When each column is renamed, one at a time, then the type check of src/ fails', () => {
    const failsIn: Array<{ column: string; file: string | null }> = [];
    for (const c of columns) {
      const renamed = `${original.slice(0, c.start)}${c.column}_renamed${original.slice(c.end)}`;
      const file = firstFailing(compile(renamed), c);
      failsIn.push({ column: `${c.table}.${c.column}`, file: UNUSED.has(`${c.table}.${c.column}`) ? 'unused' : file });
    }
    expect(failsIn.filter((f) => f.file === null)).toEqual([]);
  });

  it('When a column is listed as unused, then no file of src/ but schema.ts names it', () => {
    for (const unused of UNUSED) {
      const column = unused.split('.')[1] ?? '';
      const naming = sources.filter(({ text }) => new RegExp(`\\b${column}\\b`).test(text)).map((s) => s.file);
      expect({ unused, naming }).toEqual({ unused, naming: [] });
    }
  });
});
