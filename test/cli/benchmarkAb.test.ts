import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runAb } from '../benchmark/ab';
import { isRunning, TREE_PREFIX } from '../benchmark/abRef';
import { query } from '../support/database';
import { ROOT } from '../support/build';
import { waitUntil } from '../support/wait';

// `npm run bench -- --ab <ref>` refuses what it cannot compare (exit 2) and leaves nothing behind: no temporary
// tree, no git worktree, no database; interrupted while it builds the ref, it stops the build and cleans up too.
// Run in process (runAb is what the command runs), on refs of a small repository made here.

const PG = process.env.TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432';
let repository: string;
let stderr: string;
const commits: Record<string, string> = {};

/** Commits `files` in the scratch repository as a new commit and names it. */
function commit(name: string, files: Record<string, string>): void {
  for (const [file, text] of Object.entries(files)) writeFileSync(path.join(repository, file), text);
  const git = (...args: string[]) =>
    execFileSync('git', ['-c', 'user.name=bench', '-c', 'user.email=bench@example.com', ...args], {
      cwd: repository,
      encoding: 'utf8',
    }).trim();
  git('add', '-A');
  git('commit', '-q', '-m', name);
  commits[name] = git('rev-parse', 'HEAD');
}

/** A package.json with these scripts, and a lockfile that names no package (so this tree's node_modules serve it). */
const project = (scripts: Record<string, string>) => ({
  'package.json': JSON.stringify({ name: 'scratch', version: '1.0.0', scripts }),
  'package-lock.json': JSON.stringify({ name: 'scratch', lockfileVersion: 3, packages: { '': { name: 'scratch' } } }),
});

/** What the run left: its temporary trees, the repository's worktrees, the A/B databases of this process. */
async function leftovers() {
  const worktrees = (dir: string) => execFileSync('git', ['worktree', 'list'], { cwd: dir, encoding: 'utf8' });
  const databases = await query<{ datname: string }>(
    `${PG}/postgres`,
    `SELECT datname FROM pg_database WHERE datname LIKE 'bench\\_ab\\_${process.pid}\\_%'`,
  );
  return {
    trees: readdirSync(os.tmpdir()).filter((entry) => entry.startsWith(`${TREE_PREFIX}${process.pid}-`)),
    worktrees: [worktrees(repository), worktrees(ROOT)],
    databases: databases.map((row) => row.datname),
  };
}

let before: Awaited<ReturnType<typeof leftovers>>;

beforeAll(async () => {
  repository = mkdtempSync(path.join(os.tmpdir(), 'bench-ab-test-repo-'));
  execFileSync('git', ['init', '-q'], { cwd: repository });
  commit('no-benchmark', project({ build: 'node -e 0' }));
  commit(
    'broken',
    project({ bench: 'node bench.js', build: 'node -e "console.error(\'broken on purpose\'); process.exit(1)"' }),
  );
  commit(
    'slow',
    project({
      bench: 'node bench.js',
      build: `node -e "require('fs').writeFileSync('building', String(process.pid)); setInterval(() => {}, 1000)"`,
    }),
  );
  before = await leftovers();
});
afterAll(() => rmSync(repository, { recursive: true, force: true }));

beforeEach(() => {
  stderr = '';
  jest.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
    stderr += chunk.toString();
    return true;
  });
});
afterEach(() => jest.restoreAllMocks());

describe('npm run bench -- --ab', () => {
  it('When an option is wrong, then it says so with the usage and exits 2', async () => {
    expect(await runAb(['--ab', 'main', '--rounds', '3'], repository)).toBe(2);
    expect(stderr).toMatch(/--rounds takes a whole number from 8/);
    expect(stderr).toMatch(/usage: npm run bench -- --ab <git ref>/);
  });

  it('When the ref names no commit, then it says so, exits 2 and leaves nothing behind', async () => {
    expect(await runAb(['--ab', 'no-such-ref'], repository)).toBe(2);
    expect(stderr).toMatch(/--ab no-such-ref: no such commit, branch or tag/);
    expect(await leftovers()).toEqual(before);
  });

  it('When the ref has no benchmark, then it says so, exits 2 and leaves nothing behind', async () => {
    expect(await runAb(['--ab', commits['no-benchmark'] as string], repository)).toBe(2);
    expect(stderr).toMatch(/has no benchmark: its package.json has no bench or build script/);
    expect(await leftovers()).toEqual(before);
  });

  it("When the ref does not build, then it says so with the build's last words, exits 2 and leaves nothing behind", async () => {
    expect(await runAb(['--ab', commits.broken as string], repository)).toBe(2);
    expect(stderr).toMatch(/does not build: npm run build --silent exited 1/);
    expect(stderr).toMatch(/broken on purpose/);
    expect(await leftovers()).toEqual(before);
  });

  it('When it is interrupted while it builds the ref, then it stops the build, exits 130 and leaves nothing behind', async () => {
    const controller = new AbortController();
    const run = runAb(['--ab', commits.slow as string], repository, controller.signal);
    const marker = await waitUntil('the build to start', () => {
      const tree = readdirSync(os.tmpdir()).find((entry) => entry.startsWith(`${TREE_PREFIX}${process.pid}-`));
      const file = tree && path.join(os.tmpdir(), tree, 'building');
      return file && existsSync(file) && readFileSync(file, 'utf8') !== '' ? file : undefined;
    });
    const buildPid = Number(readFileSync(marker, 'utf8'));
    controller.abort();
    expect(await run).toBe(130);
    expect(isRunning(buildPid)).toBe(false);
    expect(await leftovers()).toEqual(before);
  });
});
