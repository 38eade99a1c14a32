import { spawn } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { deleteExchange, uniqueExchange } from '../support/broker';
import { testDatabase } from '../support/database';
import { fingerprintKey } from '../../src/verification/secondKeys';
import { freePort } from '../support/net';
import { orderBody, POS_ID, SECOND_KEY, sign, uniqueId } from '../support/signing';
import { waitUntil } from '../support/wait';
import { CLI, ROOT } from './cliSupport';

/**
 * Issue 25: a fresh clone runs with no configuration at all (the embedded Postgres in ./.data, the
 * sandbox key, loopback), and production never takes those defaults. The built service runs as a
 * child process in a temporary directory, with an empty environment but for PATH, two free ports
 * (so parallel runs do not collide on 8080 and 9090) and an exchange of the test's own on the
 * default broker (the tests never share one).
 */

const exchanges: string[] = [];
async function localRun(): Promise<Record<string, string>> {
  const exchange = uniqueExchange();
  exchanges.push(exchange);
  return { PORT: String(await freePort()), ADMIN_PORT: String(await freePort()), AMQP_EXCHANGE: exchange };
}

interface ServiceRun {
  /** stdout lines (every one a JSON log line). */
  lines: string[];
  exited: Promise<number | null>;
  stop(): Promise<number | null>;
}

interface LogLine {
  level: number;
  msg: string;
  [field: string]: unknown;
}

// npm's own lines ("> payment-notification-receiver@0.1.0 start") are not the service's log.
const parsed = (run: ServiceRun): LogLine[] =>
  run.lines.filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as LogLine);

function startBuiltService(
  cwd: string,
  env: Record<string, string>,
  user?: { uid: number; gid: number },
  command: readonly [string, ...string[]] = [process.execPath, path.join(ROOT, 'dist', 'main.js')],
): ServiceRun {
  const [file, ...args] = command;
  const child = spawn(file, args, {
    cwd,
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(user ?? {}),
  });
  const lines: string[] = [];
  let partial = '';
  child.stdout.on('data', (chunk: Buffer) => {
    const text = partial + chunk.toString('utf8');
    const parts = text.split('\n');
    partial = parts.pop() ?? '';
    lines.push(...parts.filter((line) => line !== ''));
  });
  child.stderr.on('data', (chunk: Buffer) => lines.push(chunk.toString('utf8')));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    lines,
    exited,
    stop() {
      child.kill('SIGTERM');
      return exited;
    },
  };
}

async function untilLogged(run: ServiceRun, message: string): Promise<LogLine> {
  return waitUntil(
    `"${message}" in the log`,
    async () => {
      const found = parsed(run).find((line) => line.msg === message);
      if (found) return found;
      if ((await Promise.race([run.exited, Promise.resolve('running')])) !== 'running')
        throw new Error(`the service exited before "${message}":\n${run.lines.join('\n')}`);
      return undefined;
    },
    90_000,
  );
}

function runCliIn(cwd: string, args: string[], env: Record<string, string> = {}) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      cwd,
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

async function postSigned(publicPort: number, body: string): Promise<{ status: number; outcome: unknown }> {
  const res = await fetch(`http://127.0.0.1:${publicPort}/notifications`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json;charset=UTF-8', 'OpenSvc-Signature': sign(body, SECOND_KEY) },
    body,
  });
  return { status: res.status, outcome: ((await res.json()) as { outcome?: unknown }).outcome };
}

/** A scratch directory the embedded server can reach (as root it runs as another user). */
/**
 * Runs `body` against a started service, then stops it and expects exit code 0. A failure of `body` (a
 * start that did not happen, say) is what gets reported, not the exit code it led to.
 */
async function whileRunning(run: ServiceRun, body: () => Promise<void>): Promise<void> {
  let code: number | null;
  try {
    await body();
  } finally {
    code = await run.stop();
  }
  expect(code).toBe(0);
}

/**
 * Whether a user other than root can reach the built service: every directory above the checkout must
 * let others through (a checkout inside a mode-700 directory, as `mktemp -d` makes, cannot be run as
 * another user without changing what is not the project's). The checkout's own directory is opened to
 * others for the test and restored after it.
 */
function othersCanReach(dir: string): boolean {
  for (let d = path.dirname(dir); ; d = path.dirname(d)) {
    if ((statSync(d).mode & 0o001) === 0) return false;
    if (d === path.dirname(d)) return true;
  }
}

function scratchDir(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'nr-zero-setup-'));
  chmodSync(dir, 0o755);
  return dir;
}

const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  for (const exchange of exchanges) await deleteExchange(exchange);
});

describe('npm start with nothing configured', () => {
  it('When the built service starts with an empty environment, then it serves on the embedded Postgres with local defaults, and the order survives a restart', async () => {
    const dir = scratchDir();
    dirs.push(dir);
    const ports = await localRun();
    const clusterDir = path.join(dir, '.data', 'postgres');

    const first = startBuiltService(dir, ports);
    const orderId = uniqueId('ZERO');
    await whileRunning(first, async () => {
      const started = await untilLogged(first, 'service started');
      const log = parsed(first);
      expect(log.find((l) => /^created and started embedded Postgres in /.test(l.msg))?.msg).toContain(clusterDir);
      expect(log.find((l) => /^created and started/.test(l.msg))?.msg).toContain('DATABASE_URL=');
      expect(log.some((l) => l.msg === 'database created')).toBe(true);
      expect(log.find((l) => l.localDefaults !== undefined)?.msg).toMatch(
        /^local defaults \(NODE_ENV is not production\)/,
      );
      expect(log.find((l) => l.msg === 'second keys loaded (fingerprints, never the keys)')?.keys).toEqual([
        { posId: POS_ID, fingerprint: fingerprintKey(SECOND_KEY), minAlgorithm: null },
      ]);
      expect(started).toMatchObject({
        allowedSources: ['127.0.0.1', '::1'],
        database: expect.stringContaining(`embedded Postgres in ${clusterDir}`),
        broker: 'reachable',
      });
      expect(first.lines.join('\n')).not.toContain(SECOND_KEY);

      expect(await postSigned(Number(ports.PORT), orderBody({ orderId, status: 'PENDING' }))).toEqual({
        status: 200,
        outcome: 'accepted',
      });
      // The command line finds the running service's database (no DATABASE_URL either).
      const inspected = await runCliIn(dir, ['inspect', 'order', orderId, '--json']);
      expect(inspected.code).toBe(0);
      expect(inspected.stderr).not.toMatch(/started the embedded Postgres/);
    });
    // Stopped with the service: no server left on the data directory.
    expect(existsSync(path.join(clusterDir, 'postmaster.pid'))).toBe(false);

    // With the service stopped, the command line starts the embedded server for itself, then stops it.
    const alone = await runCliIn(dir, ['inspect', 'order', orderId, '--json']);
    expect(alone.code).toBe(0);
    expect(alone.stderr).toMatch(/the service is not running: started the embedded Postgres in .* for this command/);
    expect(existsSync(path.join(clusterDir, 'postmaster.pid'))).toBe(false);

    const second = startBuiltService(dir, ports);
    await whileRunning(second, async () => {
      await untilLogged(second, 'service started');
      expect(parsed(second).some((l) => /^started embedded Postgres in /.test(l.msg))).toBe(true);
      expect(parsed(second).some((l) => l.msg === 'database created')).toBe(false);
      const res = await fetch(`http://127.0.0.1:${ports.ADMIN_PORT}/orders/${orderId}`);
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ orderId, status: 'PENDING' });
    });
  }, 180_000);

  // Only root can start a process as another user; and that user must be able to reach the checkout.
  const asUser = process.getuid?.() === 0 && othersCanReach(ROOT) ? it : it.skip;
  asUser(
    'When it runs as an unprivileged user (the image runs as uid 1000), then the embedded Postgres runs as that user',
    async () => {
      const dir = scratchDir();
      dirs.push(dir);
      chownSync(dir, 65534, 65534);
      const ports = await localRun();
      const rootMode = statSync(ROOT).mode & 0o777;
      chmodSync(ROOT, rootMode | 0o001);
      try {
        const run = startBuiltService(dir, ports, { uid: 65534, gid: 65534 });
        await whileRunning(run, async () => {
          await untilLogged(run, 'service started');
          const orderId = uniqueId('ZEROUSER');
          expect((await postSigned(Number(ports.PORT), orderBody({ orderId, status: 'PENDING' }))).status).toBe(200);
        });
      } finally {
        chmodSync(ROOT, rootMode);
      }
    },
    120_000,
  );
});

describe('npm start', () => {
  it('When npm start gets SIGTERM, then the service and its embedded Postgres stop with it: nothing is left running', async () => {
    const dir = scratchDir();
    dirs.push(dir);
    const ports = await localRun();
    const env = { ...ports, DATA_DIR: path.join(dir, '.data'), HOME: os.homedir() };
    const run = startBuiltService(ROOT, env, undefined, ['npm', 'start', '--silent']);
    await untilLogged(run, 'service started');
    expect(await run.stop()).toBe(0);
    expect(parsed(run).at(-1)?.msg).toBe('stopped');
    // Nothing listens on the ports any more, and no server holds the data directory.
    await expect(fetch(`http://127.0.0.1:${ports.ADMIN_PORT ?? ''}/livez`)).rejects.toThrow();
    expect(existsSync(path.join(dir, '.data', 'postgres', 'postmaster.pid'))).toBe(false);
  }, 120_000);
});

describe('production never takes a local default', () => {
  it('When NODE_ENV=production and SECOND_KEYS and DATABASE_URL are missing, then it stops at once naming both, and no embedded database is started', async () => {
    const dir = scratchDir();
    dirs.push(dir);
    const run = startBuiltService(dir, { NODE_ENV: 'production' });
    expect(await run.exited).toBe(78);
    const lines = parsed(run);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 60 });
    expect(lines[0]?.msg).toMatch(/SECOND_KEYS: is required with NODE_ENV=production/);
    expect(lines[0]?.msg).toMatch(/DATABASE_URL: is required with NODE_ENV=production/);
    expect(existsSync(path.join(dir, '.data'))).toBe(false);

    const keysOnly = startBuiltService(dir, { NODE_ENV: 'production', SECOND_KEYS: `${POS_ID}:${SECOND_KEY}` });
    expect(await keysOnly.exited).toBe(78);
    expect(parsed(keysOnly).map((l) => l.msg)).toEqual([expect.stringMatching(/DATABASE_URL: is required/)]);
    expect(parsed(keysOnly)[0]?.msg).not.toMatch(/SECOND_KEYS/);
    expect(existsSync(path.join(dir, '.data'))).toBe(false);
  });
});

describe('a start that fails says why in one line', () => {
  it('When Postgres cannot be reached, then one JSON line names it and DATABASE_URL', async () => {
    const dir = scratchDir();
    dirs.push(dir);
    const pgPort = await freePort();
    const run = startBuiltService(dir, {
      DATABASE_URL: `postgres://postgres@127.0.0.1:${pgPort}/notifications`,
      PORT: '0',
      ADMIN_PORT: '0',
    });
    expect(await run.exited).toBe(1);
    const fatal = parsed(run).filter((l) => l.level === 60);
    expect(fatal).toEqual([
      expect.objectContaining({
        msg: `cannot connect to Postgres at 127.0.0.1:${pgPort}/notifications (DATABASE_URL): ECONNREFUSED`,
        setting: 'DATABASE_URL',
      }),
    ]);
  });

  it('When PORT is taken, then one JSON line names the address and PORT', async () => {
    const dir = scratchDir();
    dirs.push(dir);
    const database = testDatabase();
    const taken = net.createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const { port } = taken.address() as net.AddressInfo;
    try {
      const run = startBuiltService(dir, {
        DATABASE_URL: database.url,
        HOST: '127.0.0.1',
        PORT: String(port),
        ADMIN_PORT: '0',
        RELAY_ENABLED: 'false',
      });
      expect(await run.exited).toBe(1);
      expect(parsed(run).filter((l) => l.level === 60)).toEqual([
        expect.objectContaining({ msg: `cannot listen on 127.0.0.1:${port} (PORT): EADDRINUSE`, setting: 'PORT' }),
      ]);
    } finally {
      await new Promise<void>((resolve) => taken.close(() => resolve()));
      await database.drop();
    }
  });
});
