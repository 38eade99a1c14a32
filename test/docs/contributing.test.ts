/**
 * CONTRIBUTING.md's rule for where tests go: a module's tests are found by its name in its tier's folder. Every
 * test file of the tiers that test modules (test/unit, test/integration, test/cli, test/browser, test/tools) is
 * named after a module of src/ (or of the example consumer, examples/consumer/src/, the lint rules,
 * lint/localRules.cjs, or the benchmark, test/benchmark/, under its folder's name: benchmarkAb): its file's name, its folder's for an
 * index.ts, or its folder's and its own together (database/schema.ts: databaseSchema); test/tools/architecture
 * tests ARCHITECTURE.md's map of src/. test/cli tests src/cli/, the command line; the other tiers, the rest of src/. test/docs, test/contracts, test/helm and test/reliability test the docs, the contracts, the
 * chart and the fault scenarios, and are named after those.
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from '../support/build';

const TIERS = ['unit', 'integration', 'cli', 'browser', 'tools'];

/**
 * The names a module of src/ may be tested under, with the modules each names; in test/cli, a name that src/cli/
 * holds once names that module (the command line's `relay` is src/cli/relay.ts), in the other tiers, a name held
 * once outside src/cli/ names that one (`relay` is the outbox's).
 */
function moduleNames(tier: string): Map<string, string[]> {
  const names = new Map<string, string[]>();
  const add = (name: string, module: string): void => void names.set(name, [...(names.get(name) ?? []), module]);
  const walk = (dir: string): void => {
    for (const entry of readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
      const file = `${dir}/${entry.name}`;
      if (entry.isDirectory()) walk(file);
      else if (entry.name.endsWith('.ts')) {
        const base = entry.name.slice(0, -'.ts'.length);
        const folder = path.basename(dir);
        if (base === 'index') add(folder, file);
        else {
          add(base, file);
          add(`${folder}${base[0]?.toUpperCase() ?? ''}${base.slice(1)}`, file);
        }
      }
    }
  };
  walk('src');
  walk('examples/consumer/src');
  // The benchmark is a tool of its own: its modules are named with their folder's name (benchmarkAb).
  for (const entry of readdirSync(path.join(ROOT, 'test/benchmark')))
    if (entry.endsWith('.ts'))
      add(`benchmark${entry[0]?.toUpperCase() ?? ''}${entry.slice(1, -'.ts'.length)}`, `test/benchmark/${entry}`);
  add('localRules', 'lint/localRules.cjs');
  // ARCHITECTURE.md's map of src/ (and the names of src/), checked in the tools tier.
  add('architecture', 'ARCHITECTURE.md');
  const preferred = (all: string[]): string[] => {
    // The service's own module before the example's (`main`).
    const modules = all.some((m) => m.startsWith('src/')) ? all.filter((m) => m.startsWith('src/')) : all;
    const inCli = modules.filter((m) => m.startsWith('src/cli/'));
    const mine = tier === 'cli' ? inCli : modules.filter((m) => !inCli.includes(m));
    return mine.length === 1 ? mine : modules;
  };
  return new Map([...names].map(([name, modules]) => [name, preferred(modules)]));
}

describe("CONTRIBUTING.md's rule for test files", () => {
  it('When the test files of the tiers are listed, then each is named after a module of src/', () => {
    const unnamed = TIERS.flatMap((tier) => {
      const names = moduleNames(tier);
      return readdirSync(path.join(ROOT, 'test', tier))
        .filter((file) => file.endsWith('.test.ts') && !names.has(file.slice(0, -'.test.ts'.length)))
        .map((file) => `test/${tier}/${file}`);
    });
    expect(unnamed).toEqual([]);
  });

  it('When a test is named after a module, then the name is that module’s alone', () => {
    const ambiguous = TIERS.flatMap((tier) => {
      const names = moduleNames(tier);
      return readdirSync(path.join(ROOT, 'test', tier))
        .filter((file) => file.endsWith('.test.ts'))
        .map((file) => [`test/${tier}/${file}`, names.get(file.slice(0, -'.test.ts'.length)) ?? []] as const)
        .filter(([, modules]) => modules.length > 1);
    });
    expect(ambiguous).toEqual([]);
  });
});
