/**
 * The rooms a newcomer finds by name (issue 57): no two modules of src/ share a file name (index.ts aside: a
 * folder's entry is found by the folder's name), and ARCHITECTURE.md is a map of the tree: every path of src/ it
 * names exists, and it names every folder of src/ (as `src/<folder>/`).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from '../support/build';

/** Every folder and every module of src/, as paths from the repository's root (folders ending in `/`). */
function srcTree(): { folders: string[]; modules: string[] } {
  const folders: string[] = [];
  const modules: string[] = [];
  const walk = (dir: string): void => {
    folders.push(`${dir}/`);
    for (const entry of readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
      const file = `${dir}/${entry.name}`;
      if (entry.isDirectory()) walk(file);
      else if (entry.name.endsWith('.ts')) modules.push(file);
    }
  };
  walk('src');
  return { folders: folders.sort(), modules: modules.sort() };
}

/** The paths of src/ ARCHITECTURE.md names, in code spans or links; a placeholder (`<page>.ts`) names its folder. */
function mappedPaths(): string[] {
  const text = readFileSync(path.join(ROOT, 'ARCHITECTURE.md'), 'utf8');
  const paths = [...text.matchAll(/(?<![\w./-])src\/[\w./-]*/g)].map((m) => m[0].replace(/\.$/, ''));
  return [...new Set(paths)].sort();
}

describe('The names of src/', () => {
  it('When the modules of src/ are listed by file name, then no name is held by two (index.ts aside)', () => {
    const byName = new Map<string, string[]>();
    for (const module of srcTree().modules) {
      const name = path.basename(module);
      if (name !== 'index.ts') byName.set(name, [...(byName.get(name) ?? []), module]);
    }
    expect([...byName.values()].filter((modules) => modules.length > 1)).toEqual([]);
  });
});

describe("ARCHITECTURE.md's map", () => {
  it('When it names a path of src/, then that file or folder exists', () => {
    const paths = mappedPaths();
    expect(paths.length).toBeGreaterThan(50);
    expect(paths.filter((named) => !existsSync(path.join(ROOT, named)))).toEqual([]);
  });

  it('When the folders of src/ are listed, then it names each of them', () => {
    const named = new Set(mappedPaths().filter((p) => p.endsWith('/')));
    expect(srcTree().folders.filter((folder) => folder !== 'src/' && !named.has(folder))).toEqual([]);
  });
});
