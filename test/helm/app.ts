/**
 * Test support for running the real app the way the image and the chart run it: build it
 * when needed, find free ports, start a command as a child process with only the given
 * environment, wait for an HTTP answer, stop it with SIGTERM, and make/drop a throwaway
 * database on the local Postgres (127.0.0.1:5432, trust auth).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { Client } from 'pg';
import { REPO_ROOT } from './helm';

const POSTGRES = 'postgres://postgres@127.0.0.1:5432';

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(full) : statSync(full).mtimeMs);
  }
  return newest;
}

function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** Runs `npm run build` when dist/main.js is missing or older than src/ (once across workers). */
export function ensureBuilt(): void {
  const main = path.join(REPO_ROOT, 'dist', 'main.js');
  const upToDate = (): boolean => existsSync(main) && statSync(main).mtimeMs >= newestMtime(path.join(REPO_ROOT, 'src'));
  if (upToDate()) return;
  const lock = path.join(REPO_ROOT, 'node_modules', '.cache', 'helm-tests-build.lock');
  mkdirSync(path.dirname(lock), { recursive: true });
  const deadline = Date.now() + 120_000;
  for (;;) {
    try {
      mkdirSync(lock); // atomic: only one worker builds
      break;
    } catch {
      if (existsSync(lock) && Date.now() - statSync(lock).mtimeMs > 180_000) rmSync(lock, { recursive: true, force: true });
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${lock}`);
      sleepSync(250);
      if (upToDate()) return;
    }
  }
  try {
    if (upToDate()) return;
    const result = spawnSync('npm', ['run', 'build', '--silent'], { cwd: REPO_ROOT, encoding: 'utf8' });
    if (result.status !== 0) throw new Error(`npm run build failed:\n${result.stdout}\n${result.stderr}`);
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

export interface RunningApp {
  child: ChildProcess;
  /** Everything the process wrote so far (stdout and stderr), for failure messages. */
  output: () => string;
  /** Resolves with the exit code (or signal name) once the process ended. */
  exited: Promise<number | string>;
}

/** Starts `command` with exactly `env` (plus PATH and HOME), in `cwd`. */
export function start(command: string[], cwd: string, env: Record<string, string>): RunningApp {
  const [file = 'node', ...args] = command;
  const child = spawn(file === 'node' ? process.execPath : file, args, {
    cwd,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  const exited = new Promise<number | string>((resolve) => {
    child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown'));
  });
  return { child, output: () => output, exited };
}

/** Polls `url` until it answers `status`; fails early if the process exits. */
export async function waitForStatus(app: RunningApp, url: string, status: number, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = 'no answer';
  let ended: number | string | undefined;
  void app.exited.then((code) => (ended = code));
  while (Date.now() < deadline) {
    if (ended !== undefined) throw new Error(`process exited (${ended}) before ${url} answered ${status}:\n${app.output()}`);
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(2000) });
      if (response.status === status) return;
      last = `status ${response.status}`;
    } catch (error) {
      last = (error as Error).message;
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`${url} did not answer ${status} within ${timeoutMs} ms (last: ${last}):\n${app.output()}`);
}

/** Sends SIGTERM and waits for the exit (SIGKILL after `timeoutMs`); returns the exit code. */
export async function stop(app: RunningApp, timeoutMs = 25_000): Promise<number | string> {
  if (app.child.exitCode !== null || app.child.signalCode !== null) return app.exited;
  app.child.kill('SIGTERM');
  const timer = setTimeout(() => app.child.kill('SIGKILL'), timeoutMs);
  try {
    return await app.exited;
  } finally {
    clearTimeout(timer);
  }
}

/** A database URL for a fresh, not yet existing database (the app creates it). */
export function throwawayDatabaseUrl(prefix: string): { url: string; name: string } {
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  return { url: `${POSTGRES}/${name}`, name };
}

export async function dropDatabase(name: string): Promise<void> {
  if (!/^[a-z0-9_]+$/.test(name)) throw new Error(`refusing to drop ${name}`);
  const client = new Client({ connectionString: `${POSTGRES}/postgres` });
  await client.connect();
  try {
    await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  } finally {
    await client.end();
  }
}
