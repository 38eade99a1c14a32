import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

// Rows typed to their table (issue 39): renaming a column in src/database/schema.ts fails tsc wherever src/ names
// the old column. The project compiled with a schema.ts of one column renamed, kept in memory (the tree is never
// written), for a few columns named in the recorder's writes and reads, the projections and the relay.

const ROOT = path.resolve(__dirname, '../..');
const SCHEMA = path.join(ROOT, 'src/database/schema.ts');
const RENAMED: ReadonlyArray<{ table: string; column: string }> = [
  { table: 'OutboxEventsTable', column: 'next_attempt_at' },
  { table: 'OrdersTable', column: 'total_amount' },
  { table: 'EventStreamsTable', column: 'last_sequence' },
];

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
const rootNames = config.fileNames.filter((f) => path.resolve(f).startsWith(path.join(ROOT, 'src') + path.sep));

/** Every source file parsed once for all the programs but schema.ts, which each program has its own of. */
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

/** src/ files but schema.ts, with the lines (1-based) that name the column outside a comment. */
function placesNaming(column: string): Map<string, number[]> {
  const places = new Map<string, number[]>();
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const file = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(file);
      else if (file.endsWith('.ts') && file !== SCHEMA) {
        const lines = readFileSync(file, 'utf8')
          .split('\n')
          .flatMap((line, i) =>
            new RegExp(`\\b${column}\\b`).test(line) && !/^\s*(\/\/|\*|\/\*)/.test(line) ? [i + 1] : [],
          );
        if (lines.length > 0) places.set(file, lines);
      }
    }
  };
  walk(path.join(ROOT, 'src'));
  return places;
}

/** The lines of a file a diagnostic covers (from its start to its end). */
function linesWithErrors(program: ts.Program, file: string): Set<number> {
  const source = program.getSourceFile(file);
  if (!source) throw new Error(`${file} is not in the program`);
  const lines = new Set<number>();
  for (const d of program.getSemanticDiagnostics(source)) {
    if (d.start === undefined) continue;
    const first = source.getLineAndCharacterOfPosition(d.start).line + 1;
    const last = source.getLineAndCharacterOfPosition(d.start + (d.length ?? 0)).line + 1;
    for (let line = first; line <= last; line++) lines.add(line);
  }
  return lines;
}

describe('columns typed to their table', () => {
  const original = readFileSync(SCHEMA, 'utf8');

  it('When schema.ts is as it is, then the places that name those columns compile', () => {
    const program = compile(original);
    for (const { column } of RENAMED)
      for (const file of placesNaming(column).keys())
        expect([file, [...linesWithErrors(program, file)]]).toEqual([file, []]);
  }, 120_000);

  it.each(RENAMED)(
    'When $column of $table is renamed in schema.ts, then tsc fails at every line of src/ naming it',
    ({ table, column }) => {
      const block = new RegExp(`(interface ${table} \\{[^}]*?)\\b${column}:`);
      expect(original).toMatch(block);
      const program = compile(original.replace(block, `$1${column}_renamed:`));
      const places = placesNaming(column);
      expect(places.size).toBeGreaterThan(0);
      for (const [file, lines] of places) {
        const failing = linesWithErrors(program, file);
        const relative = path.relative(ROOT, file);
        expect({ file: relative, lines: lines.filter((l) => !failing.has(l)) }).toEqual({ file: relative, lines: [] });
      }
    },
    120_000,
  );
});
