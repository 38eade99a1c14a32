/** CONTRIBUTING.md's "Run" table names every command of the command line, and no other. */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import { buildProgram } from '../../src/cli/index';
import { ROOT } from '../support/build';

describe("CONTRIBUTING.md's command list", () => {
  it('When it is read beside the program, then it names exactly the commands the program has', () => {
    const discard = new Writable({ write: (_chunk, _encoding, done) => done() });
    const program = buildProgram({ stdout: discard, stderr: discard, env: {} }, { exitCode: 0 });
    const row = readFileSync(path.join(ROOT, 'CONTRIBUTING.md'), 'utf8')
      .split('\n')
      .find((line) => line.startsWith('| `npm run cli -- <command>` |'));
    const listed = /\(([^)]*)\)/.exec(row ?? '')?.[1] ?? '';
    expect([...listed.matchAll(/`([a-z-]+)`/g)].map((m) => m[1]).sort()).toEqual(
      program.commands.map((command) => command.name()).sort(),
    );
  });
});
