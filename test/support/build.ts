import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { sleep } from './wait';

export const ROOT = path.resolve(__dirname, '..', '..');

function newestMtime(target: string): number {
  const stat = fs.statSync(target);
  if (!stat.isDirectory()) return stat.mtimeMs;
  let newest = stat.mtimeMs;
  for (const entry of fs.readdirSync(target)) newest = Math.max(newest, newestMtime(path.join(target, entry)));
  return newest;
}

function sourcesMtime(): number {
  return Math.max(...['src', 'tsconfig.json', 'tsconfig.build.json'].map((name) => newestMtime(path.join(ROOT, name))));
}

/** A build there is complete and started after the last change to the sources. */
function isFresh(outDir: string, stamp: string): boolean {
  const complete = ['main.js', path.join('cli', 'index.js')].every((file) => fs.existsSync(path.join(outDir, file)));
  if (!complete || !fs.existsSync(stamp)) return false;
  const builtFrom = Number(fs.readFileSync(stamp, 'utf8'));
  return Number.isFinite(builtFrom) && builtFrom >= sourcesMtime();
}

async function acquireLock(lock: string, timeoutMs: number): Promise<() => void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const fd = fs.openSync(lock, 'wx');
      fs.writeSync(fd, String(process.pid));
      fs.closeSync(fd);
      return () => fs.rmSync(lock, { force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      // A lock left by a killed run is stale after two minutes (a build takes seconds).
      const age = Date.now() - (fs.statSync(lock, { throwIfNoEntry: false })?.mtimeMs ?? Date.now());
      if (age > 120_000) fs.rmSync(lock, { force: true });
      if (Date.now() > deadline) throw new Error(`build lock ${lock} held for too long`, { cause: error });
      await sleep(200);
    }
  }
}

/**
 * Compiles src/ (tsconfig.build.json) into `outDir` when any source is newer than the build there: the CLI,
 * chart and relay tests run dist/ (jest's globalSetup builds it once, before any test file starts), the fault
 * scenarios a private copy. A lock in `outDir` keeps two runs from building into it at once, and a stamp
 * written after a complete build (`.built-from`: the sources' time it was built from) tells a finished build
 * from one in progress.
 *
 * Emit only (`--noCheck`): the tiers type-check first (`npm run typecheck`, which builds dist/ itself, checked:
 * tsconfig.typecheck.json), and a test runs what was emitted whatever its types. Into dist/ it is `tsc -b`,
 * which finds the type check's build up to date and does nothing (a second compile of src/ otherwise); a build
 * it does make leaves the check to the next `tsc -b` (`npm run typecheck`, `npm start`).
 */
export async function buildIfStale(outDir = path.join(ROOT, 'dist')): Promise<void> {
  fs.mkdirSync(outDir, { recursive: true });
  const stamp = path.join(outDir, '.built-from');
  const release = await acquireLock(path.join(outDir, '.build-lock'), 120_000);
  try {
    if (isFresh(outDir, stamp)) return;
    const startedFrom = sourcesMtime();
    const tsc = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
    const args =
      outDir === path.join(ROOT, 'dist')
        ? ['-b', 'tsconfig.build.json', '--noCheck']
        : [
            '-p',
            'tsconfig.build.json',
            '--noCheck',
            '--outDir',
            outDir,
            '--tsBuildInfoFile',
            path.join(outDir, '.tsbuildinfo'),
          ];
    try {
      await promisify(execFile)(process.execPath, [tsc, ...args], { cwd: ROOT, maxBuffer: 16 * 1024 * 1024 });
    } catch (error) {
      // Without the check only a failed emit (a syntax error, a bad configuration) is an error.
      const { code, stdout = '', stderr = '' } = error as { code?: number; stdout?: string; stderr?: string };
      throw new Error(`building src/ into ${outDir} failed (${code}):\n${stdout}${stderr}`, { cause: error });
    }
    fs.writeFileSync(stamp, String(startedFrom));
  } finally {
    release();
  }
}
