import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

/**
 * The service runs as a real child process (SIGKILL, SIGTERM, RSS), built from the current src/ into
 * a private directory under the OS temp dir so the suite never races anyone else's `dist/`.
 * The build dir mirrors the repository layout the service expects: dist/ beside sql/ and node_modules/
 * (symlinks), so `dist/database/migrations.js` finds `../../sql`.
 */
export const REPO_ROOT = path.resolve(__dirname, '..', '..', '..');
export const BUILD_ROOT = path.join(
  os.tmpdir(),
  `nr-reliability-build-${createHash('sha256').update(REPO_ROOT).digest('hex').slice(0, 10)}`,
);
export const MAIN_JS = path.join(BUILD_ROOT, 'dist', 'main.js');
const STAMP = path.join(BUILD_ROOT, '.built-from');
const LOCK = path.join(BUILD_ROOT, '.build-lock');

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function newestMtime(target: string): number {
  const stat = fs.statSync(target);
  if (!stat.isDirectory()) return stat.mtimeMs;
  let newest = stat.mtimeMs;
  for (const entry of fs.readdirSync(target)) newest = Math.max(newest, newestMtime(path.join(target, entry)));
  return newest;
}

function sourcesMtime(): number {
  return Math.max(
    newestMtime(path.join(REPO_ROOT, 'src')),
    newestMtime(path.join(REPO_ROOT, 'tsconfig.json')),
    newestMtime(path.join(REPO_ROOT, 'tsconfig.build.json')),
  );
}

function isFresh(): boolean {
  if (!fs.existsSync(MAIN_JS) || !fs.existsSync(STAMP)) return false;
  const builtFrom = Number(fs.readFileSync(STAMP, 'utf8'));
  return Number.isFinite(builtFrom) && builtFrom >= sourcesMtime();
}

function link(name: string): void {
  const target = path.join(REPO_ROOT, name);
  const at = path.join(BUILD_ROOT, name);
  try {
    if (fs.readlinkSync(at) === target) return;
    fs.unlinkSync(at);
  } catch {
    // absent
  }
  fs.symlinkSync(target, at);
}

async function acquireLock(timeoutMs: number): Promise<() => void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const fd = fs.openSync(LOCK, 'wx');
      fs.writeSync(fd, String(process.pid));
      fs.closeSync(fd);
      return () => fs.rmSync(LOCK, { force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      // A lock left by a killed run is stale after two minutes (a build takes seconds).
      const age = Date.now() - (fs.statSync(LOCK, { throwIfNoEntry: false })?.mtimeMs ?? Date.now());
      if (age > 120_000) fs.rmSync(LOCK, { force: true });
      if (Date.now() > deadline) throw new Error(`build lock ${LOCK} held for too long`, { cause: error });
      await sleep(200);
    }
  }
}

let built: Promise<string> | null = null;

/**
 * Builds src/ with tsconfig.build.json into BUILD_ROOT/dist when any source is newer than the last
 * build; once per test process, so every scenario of a run tests the same code.
 */
export function ensureBuilt(): Promise<string> {
  built ??= build();
  return built;
}

async function build(): Promise<string> {
  fs.mkdirSync(BUILD_ROOT, { recursive: true });
  const release = await acquireLock(120_000);
  try {
    link('sql');
    link('node_modules');
    if (!isFresh()) {
      const startedFrom = sourcesMtime();
      const tsc = require.resolve('typescript/bin/tsc');
      try {
        await promisify(execFile)(
          process.execPath,
          [tsc, '-p', path.join(REPO_ROOT, 'tsconfig.build.json'), '--outDir', path.join(BUILD_ROOT, 'dist')],
          {
            cwd: REPO_ROOT,
            maxBuffer: 16 * 1024 * 1024,
          },
        );
      } catch (error) {
        const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string };
        throw new Error(`building the service failed:\n${stdout}${stderr}`, { cause: error });
      }
      fs.writeFileSync(STAMP, String(startedFrom));
    }
    return MAIN_JS;
  } finally {
    release();
  }
}
