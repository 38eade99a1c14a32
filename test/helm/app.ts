/**
 * Test support for running the real app the way the image and the chart run it (dist/ is
 * built by jest's globalSetup): find free ports, start a command as a child process with only
 * the given environment, wait for an HTTP answer, stop it with SIGTERM. The databases it runs against come
 * from testDatabase() (test/support/database.ts): created by the app itself, dropped by the test.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { sleep } from '../support/wait';

export { freePort } from '../support/net';

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
    if (ended !== undefined)
      throw new Error(`process exited (${ended}) before ${url} answered ${status}:\n${app.output()}`);
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(2000) });
      if (response.status === status) return;
      last = `status ${response.status}`;
    } catch (error) {
      last = (error as Error).message;
    }
    await sleep(200);
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
