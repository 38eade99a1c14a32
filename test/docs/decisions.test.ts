/** docs/decisions/README.md lists every decision record, in order, each by its number and its file. */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from '../support/build';

const DIR = path.join(ROOT, 'docs', 'decisions');

describe('the decision records list', () => {
  it('When the records are listed, then the README names each file, in order, with its number', () => {
    const records = readdirSync(DIR)
      .filter((file) => /^\d{4}-.+\.md$/.test(file))
      .sort();
    const listed = [
      ...readFileSync(path.join(DIR, 'README.md'), 'utf8').matchAll(/^\| \[(\d{4})\]\(([^)]+)\) \|/gm),
    ].map((m) => [m[1], m[2]]);
    expect(listed).toEqual(records.map((file) => [file.slice(0, 4), file]));
  });
});
