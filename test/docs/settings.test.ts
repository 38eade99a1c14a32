/**
 * README.md's settings table is what the configuration schema reads: the same variables, no more, no fewer, and
 * .env.example lists each of them too.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { SETTING_VARIABLES } from '../../src/config';
import { ROOT } from '../support/build';

/** The first cell of every row of the table under README.md's "## Configuration". */
function documentedVariables(): string[] {
  const text = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const start = text.indexOf('\n## Configuration\n');
  const section = text.slice(start, text.indexOf('\n## ', start + 1));
  return section
    .split('\n')
    .filter((line) => line.startsWith('| `'))
    .map((line) => /^\| `([A-Z0-9_]+)`/.exec(line)?.[1] ?? line);
}

/** Every variable .env.example names, set or commented out. */
function exampleVariables(): string[] {
  const text = readFileSync(path.join(ROOT, '.env.example'), 'utf8');
  return [...new Set([...text.matchAll(/^#? ?([A-Z][A-Z0-9_]+)=/gm)].map((m) => m[1] as string))];
}

describe("README.md's settings table", () => {
  it('When it is read beside the configuration schema, then it names exactly the variables the service reads', () => {
    expect([...documentedVariables()].sort()).toEqual([...SETTING_VARIABLES].sort());
  });

  it('When it is read, then it names each variable once', () => {
    const names = documentedVariables();
    expect(names.filter((name, i) => names.indexOf(name) !== i)).toEqual([]);
  });

  it('When .env.example is read beside the schema, then it names exactly the variables the service reads', () => {
    expect(exampleVariables().sort()).toEqual([...SETTING_VARIABLES].sort());
  });
});
