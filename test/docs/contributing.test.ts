/**
 * CONTRIBUTING.md's rule for where tests go: a module's tests are at its path in its tier,
 * `test/<tier>/<its path under src/>.test.ts` (test/cli: its path under src/cli/), where an aspect may add
 * `.<aspect>` (`recorder.lanes.test.ts`). A test of what is not a module of src/ (the example consumer,
 * examples/consumer/src/; the lint rules, lint/localRules.cjs; the benchmark, test/benchmark/, as benchmarkAb; a
 * module of src/ outside the tier's own, such as the service's entry src/main.ts in test/cli; ARCHITECTURE.md's map)
 * stays in the tier's folder under that name. test/docs, test/contracts, test/helm and test/reliability test the
 * docs, the contracts, the chart and the fault scenarios, and are named after those.
 */
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from '../support/build';

const TIERS = ['unit', 'integration', 'cli', 'browser', 'tools'];
/** The tiers of the README's test command: at least 80 % of their test files at their module's path. */
const COUNTED = ['unit', 'integration', 'cli'];

/** Every test file of a tier, its path under the tier's folder without `.test.ts`. */
function testFiles(tier: string): string[] {
  const found: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(path.join(ROOT, 'test', tier, dir), { withFileTypes: true })) {
      const file = dir === '' ? entry.name : `${dir}/${entry.name}`;
      if (entry.isDirectory()) walk(file);
      else if (entry.name.endsWith('.test.ts')) found.push(file.slice(0, -'.test.ts'.length));
    }
  };
  walk('');
  return found;
}

/** The module a test at `file` (under its tier, without `.test.ts`) is at the path of, or null. */
function moduleAtPath(tier: string, file: string): string | null {
  const under = tier === 'cli' ? 'src/cli' : 'src';
  const folder = path.dirname(file);
  const [name] = path.basename(file).split('.');
  const module = `${under}/${folder === '.' ? '' : `${folder}/`}${name ?? ''}.ts`;
  return existsSync(path.join(ROOT, module)) ? module : null;
}

/** The names a test of what is not at a module's path may have, flat in its tier's folder. */
function flatNames(): Set<string> {
  const names = new Set(['localRules', 'architecture']);
  const capital = (name: string): string => `${name[0]?.toUpperCase() ?? ''}${name.slice(1)}`;
  const walk = (dir: string, named: (base: string) => string): void => {
    for (const entry of readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
      const base = entry.name.slice(0, -'.ts'.length);
      if (entry.isDirectory()) walk(`${dir}/${entry.name}`, named);
      else if (entry.name.endsWith('.ts')) names.add(base === 'index' ? path.basename(dir) : named(base));
    }
  };
  walk('src', (base) => base);
  walk('examples/consumer/src', (base) => base);
  // The benchmark is a tool of its own: its modules are named with their folder's name (benchmarkAb).
  walk('test/benchmark', (base) => `benchmark${capital(base)}`);
  return names;
}

describe("CONTRIBUTING.md's rule for test files", () => {
  it('When the test files of the tiers are listed, then each is at its module’s path, or flat and named after what it tests', () => {
    const flat = flatNames();
    const astray = TIERS.flatMap((tier) =>
      testFiles(tier)
        .filter((file) => moduleAtPath(tier, file) === null)
        .filter((file) => file.includes('/') || !flat.has(file.split('.')[0] ?? ''))
        .map((file) => `test/${tier}/${file}.test.ts`),
    );
    expect(astray).toEqual([]);
  });

  it('When the README’s test command’s files are counted, then at least 80 % are at their module’s path', () => {
    const files = COUNTED.flatMap((tier) => testFiles(tier).map((file) => ({ tier, file })));
    const atPath = files.filter(({ tier, file }) => moduleAtPath(tier, file) !== null);
    expect(atPath.length / files.length).toBeGreaterThanOrEqual(0.8);
  });
});
