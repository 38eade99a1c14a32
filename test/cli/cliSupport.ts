import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, readdirSync, rmdirSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { AMQP_URL } from '../support/broker';
import { OTHER_KEY, OTHER_POS_ID, POS_ID, SECOND_KEY } from '../support/signing';

export const ROOT = path.resolve(__dirname, '..', '..');
export const CLI = path.join(ROOT, 'dist', 'cli', 'index.js');

function newestSourceMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestSourceMtime(full));
    else if (entry.name.endsWith('.ts')) newest = Math.max(newest, statSync(full).mtimeMs);
  }
  return newest;
}

function builtMtime(): number {
  try {
    return statSync(CLI).mtimeMs;
  } catch {
    return 0;
  }
}

const isStale = (): boolean => builtMtime() < newestSourceMtime(path.join(ROOT, 'src'));

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Builds dist/ (npm run build) when any source is newer than the built CLI. Test files run in
 * parallel workers, so one builds while the others wait on a lock directory.
 */
export async function ensureBuilt(): Promise<void> {
  if (!isStale()) return;
  const lock = path.join(os.tmpdir(), `notification-receiver-cli-build-${Buffer.from(ROOT).toString('hex').slice(-24)}.lock`);
  const deadline = Date.now() + 180_000;
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch {
      // Another worker builds; a lock older than three minutes is left over from a killed run.
      try {
        if (Date.now() - statSync(lock).mtimeMs > 180_000) rmdirSync(lock);
      } catch {
        // gone meanwhile
      }
      if (Date.now() > deadline) throw new Error('timed out waiting for another test worker to build dist/');
      await sleep(250);
    }
  }
  try {
    if (!isStale()) return;
    const result = spawnSync(process.execPath, [path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'], {
      cwd: ROOT,
      encoding: 'utf8',
    });
    // tsc emits despite type errors (exit 2); `npm test` type-checks separately, so only a missing build fails here.
    if (result.status !== 0 && (result.status !== 2 || isStale())) {
      throw new Error(`build failed (${result.status}):\n${result.stdout}${result.stderr}`);
    }
  } finally {
    rmdirSync(lock);
  }
}

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The environment of a CLI run: only what is given (the developer's own .env and variables stay out). */
export function cliEnv(vars: Record<string, string | undefined>): Record<string, string> {
  const env: Record<string, string> = { PATH: process.env.PATH ?? '', AMQP_URL, SECOND_KEYS: `${POS_ID}:${SECOND_KEY},${OTHER_POS_ID}:${OTHER_KEY}` };
  for (const [name, value] of Object.entries(vars)) {
    if (value === undefined) delete env[name];
    else env[name] = value;
  }
  return env;
}

export interface RunOptions {
  input?: Buffer | string;
  timeoutMs?: number;
}

/**
 * Runs the built CLI as a child process, from a scratch directory (so no ./.env is read), and
 * collects its output.
 */
export function runCli(args: string[], env: Record<string, string>, options: RunOptions = {}): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { cwd: os.tmpdir(), env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`CLI ${args.join(' ')} did not finish within ${options.timeoutMs ?? 60_000} ms\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, options.timeoutMs ?? 60_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(options.input ?? '');
  });
}

/** Starts the CLI without waiting for it (for `events watch`). */
export function startCli(args: string[], env: Record<string, string>): { child: ChildProcess; result: Promise<CliRun>; stderrIncludes(text: string, timeoutMs?: number): Promise<void> } {
  const child = spawn(process.execPath, [CLI, ...args], { cwd: os.tmpdir(), env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const result = new Promise<CliRun>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
  return {
    child,
    result,
    async stderrIncludes(text, timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs;
      while (!stderr.includes(text)) {
        if (Date.now() > deadline || child.exitCode !== null) throw new Error(`CLI never wrote "${text}" to stderr; stderr: ${stderr}`);
        await sleep(25);
      }
    },
  };
}

/** Parses a --json run's stdout, failing with the output when it is not JSON. */
export function parseJson<T>(run: CliRun): T {
  try {
    return JSON.parse(run.stdout) as T;
  } catch {
    throw new Error(`not JSON (exit ${run.code}):\nstdout: ${run.stdout}\nstderr: ${run.stderr}`);
  }
}

/** Polls until the check passes (returns a value other than undefined/false). */
export async function eventually<T>(check: () => Promise<T | undefined | false>, timeoutMs = 15_000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}
