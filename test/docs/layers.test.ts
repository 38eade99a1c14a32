/**
 * ARCHITECTURE.md's layer table is what `.dependency-cruiser.cjs` enforces: the same layers in the same order,
 * each with the same folders, and every folder and file under src/ in one of them.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from '../support/build';

interface LayerRule {
  name: string;
  comment: string;
  from: { path: string };
  to: { path: string[] };
}

interface Layer {
  name: string;
  /** What the layer holds under src/, as the table writes it: `src/cli/` (a folder) or `src/main.ts`. */
  entries: string[];
}

const slug = (name: string): string => name.replace(/\W+/g, '-');

/** The layers as `.dependency-cruiser.cjs` builds its rules from LAYERS: one rule per layer below the top. */
async function cruiserLayers(): Promise<Array<{ name: string; pattern: RegExp }>> {
  const config = (await import(path.join(ROOT, '.dependency-cruiser.cjs'))) as { forbidden: LayerRule[] };
  const rules = config.forbidden.filter((rule) => rule.name.startsWith('no-import-up-from-'));
  const last = rules[rules.length - 1];
  if (!last) throw new Error('.dependency-cruiser.cjs has no layer rules');
  // The bottom layer's rule lists every layer above it, from the top, by pattern and (in its comment) by name.
  const above = last.comment.slice(last.comment.indexOf('above it: ') + 'above it: '.length).split(', ');
  const names = [...above, last.name.slice('no-import-up-from-'.length)];
  const patterns = [...last.to.path, last.from.path];
  // Each rule is its layer's: its pattern and name (a check that the reading above is right).
  expect(rules.map((rule) => [rule.from.path, rule.name])).toEqual(
    patterns.slice(1).map((pattern, i) => [pattern, `no-import-up-from-${slug(names[i + 1] ?? '')}`]),
  );
  return patterns.map((pattern, i) => ({ name: slug(names[i] ?? ''), pattern: new RegExp(pattern) }));
}

/** The rows of the table under ARCHITECTURE.md's "## Layers". */
function documentedLayers(): Layer[] {
  const text = readFileSync(path.join(ROOT, 'ARCHITECTURE.md'), 'utf8');
  const section = text.slice(text.indexOf('\n## Layers\n'));
  const rows = section
    .split('\n')
    .filter((line) => line.startsWith('|'))
    .slice(2); // the header and its rule
  return rows.map((row) => {
    const [name = '', folders = ''] = row
      .split('|')
      .slice(1, 3)
      .map((cell) => cell.trim());
    return { name, entries: [...folders.matchAll(/`([^`]+)`/g)].map((m) => m[1] as string) };
  });
}

/** Every folder and file directly under src/, written as the table writes them. */
const srcEntries = (): string[] =>
  readdirSync(path.join(ROOT, 'src'), { withFileTypes: true }).map((e) =>
    e.isDirectory() ? `src/${e.name}/` : `src/${e.name}`,
  );

const NONE = '(none)';

describe("ARCHITECTURE.md's layer table", () => {
  it('When it is read beside .dependency-cruiser.cjs, then both name the same layers in the same order', async () => {
    const documented = documentedLayers();
    expect(documented.length).toBeGreaterThan(5);
    expect(documented.map((layer) => slug(layer.name))).toEqual((await cruiserLayers()).map((layer) => layer.name));
  });

  it('When each folder and file under src/ is looked up, then the table puts it in the layer whose rule matches it', async () => {
    const layers = await cruiserLayers();
    const documented = documentedLayers();
    const entries = srcEntries();
    const byTable = entries.map((e) => [e, slug(documented.find((l) => l.entries.includes(e))?.name ?? NONE)]);
    const byRules = entries.map((e) => [e, layers.find((l) => l.pattern.test(e))?.name ?? slug(NONE)]);
    expect(byTable).toEqual(byRules);
    expect(byRules.filter(([, layer]) => layer === slug(NONE))).toEqual([]);
  });

  it('When the table names a folder or file, then it exists under src/', () => {
    const present = new Set(srcEntries());
    const named = documentedLayers().flatMap((layer) => layer.entries);
    expect(named.filter((entry) => !present.has(entry))).toEqual([]);
  });
});

/** The files and folders of src/ that hold SQL, as lint/localRules.cjs tells them (its infrastructure aside). */
function queryModules(): string[] {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { isQueryModule } = require('../../lint/localRules.cjs') as { isQueryModule: (file: string) => boolean };
  const found = new Set<string>();
  const walk = (dir: string): void => {
    for (const entry of readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
      const file = `${dir}/${entry.name}`;
      if (entry.isDirectory()) walk(file);
      else if (file.endsWith('.ts') && !file.startsWith('src/database/') && isQueryModule(file))
        found.add(/\/queries\//.test(file) ? file.slice(0, file.lastIndexOf('/') + 1) : file);
    }
  };
  walk('src');
  return [...found].sort();
}

/** The paths the first column of ARCHITECTURE.md's table of query modules links. */
function documentedQueryModules(): string[] {
  const text = readFileSync(path.join(ROOT, 'ARCHITECTURE.md'), 'utf8');
  const section = text.slice(text.indexOf('\n## The data layer\n'), text.indexOf('\n## Layers\n'));
  return section
    .split('\n')
    .filter((line) => line.startsWith('| ['))
    .map((line) => /^\| \[`[^`]+`\]\(([^)]+)\)/.exec(line)?.[1] ?? line)
    .sort();
}

describe("ARCHITECTURE.md's data layer", () => {
  it('When the query modules of src/ are listed, then the table of query modules names each of them, and only them', () => {
    expect(documentedQueryModules()).toEqual(queryModules());
  });

  it('When it says where a new query goes, then each place it names exists', () => {
    const text = readFileSync(path.join(ROOT, 'ARCHITECTURE.md'), 'utf8');
    const section = text.slice(text.indexOf('\n### Where does a new page'), text.indexOf('\n## Layers\n'));
    // `src/console/<page>/<page>Queries.ts` names its folder.
    const places = [...section.matchAll(/`(src\/[^`]+)`/g)].map((m) =>
      (m[1] as string).replace(/\/[^/]*<.*$/, '').replace(/\/$/, ''),
    );
    expect(places.length).toBeGreaterThan(2);
    for (const place of places) expect(existsSync(path.join(ROOT, place)) ? place : `${place} (missing)`).toBe(place);
  });
});
