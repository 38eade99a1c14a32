import { spawn, type ChildProcess } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { runCli as runProgramInProcess } from '../../src/cli/index';
import { AMQP_URL } from '../support/broker';
import { ROOT } from '../support/build';
import { OTHER_KEY, OTHER_POS_ID, POS_ID, SECOND_KEY } from '../support/signing';
import { sleep } from '../support/wait';

export { ROOT };

export const CLI = path.join(ROOT, 'dist', 'cli', 'index.js');

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The environment of a CLI run: only what is given (the developer's own .env and variables stay out). */
export function cliEnv(vars: Record<string, string | undefined>): Record<string, string> {
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    AMQP_URL,
    SECOND_KEYS: `${POS_ID}:${SECOND_KEY},${OTHER_POS_ID}:${OTHER_KEY}`,
  };
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
 * Runs the command line's program in this process (src/cli/index.ts's runCli, with only `env` and its output
 * collected): for help and usage errors, which parse the arguments and touch nothing else. Anything that
 * reads configuration files, connects or signals runs the built CLI with runCli.
 */
export async function runProgram(args: string[], env: Record<string, string>): Promise<CliRun> {
  const collect = (): { stream: Writable; text: () => string } => {
    let text = '';
    const stream = new Writable({
      write(chunk: Buffer, _encoding, done) {
        text += chunk.toString('utf8');
        done();
      },
    });
    return { stream, text: () => text };
  };
  const stdout = collect();
  const stderr = collect();
  const code = await runProgramInProcess(args, { stdout: stdout.stream, stderr: stderr.stream, env });
  return { code, stdout: stdout.text(), stderr: stderr.text() };
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
      reject(
        new Error(
          `CLI ${args.join(' ')} did not finish within ${options.timeoutMs ?? 60_000} ms\nstdout: ${stdout}\nstderr: ${stderr}`,
        ),
      );
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
export function startCli(
  args: string[],
  env: Record<string, string>,
): { child: ChildProcess; result: Promise<CliRun>; stderrIncludes(text: string, timeoutMs?: number): Promise<void> } {
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
        if (Date.now() > deadline || child.exitCode !== null)
          throw new Error(`CLI never wrote "${text}" to stderr; stderr: ${stderr}`);
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
