import {
  chmodSync,
  chownSync,
  closeSync,
  constants,
  existsSync,
  fstatSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  readlinkSync,
  realpathSync,
  rmdirSync,
  statSync,
  symlinkSync,
  unlinkSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { EX_CONFIG, StartupError } from '../errors';
import { untrustedAncestor, untrustedDirectory, untrustedFile } from './embeddedPostgresTrust';

/**
 * Where the embedded Postgres's parts live, and as whom it runs (decision 0010): the cluster in a
 * directory only the server's user can enter. The binaries (from where npm installed them or from a
 * verified copy nobody else can write) are embeddedPostgresBinaries.ts's.
 */

/** The user the server runs as. */
export interface ServerUser {
  uid: number;
  gid: number;
}

/** This process's uid; undefined where there are no POSIX owners (Windows), and no owner to check. */
const selfUid = (): number | undefined => process.getuid?.();

/** The uid the server's files and processes belong to. */
export const serverUid = (user: ServerUser | null): number | undefined => user?.uid ?? selfUid();

/**
 * A path under (or above) DATA_DIR that another user could write: refused with exit 78, naming it (issue 37:
 * initdb and postgres ran as the owner of a planted `postgres` directory, who then connected as superuser).
 */
export function unsafePath(file: string, why: string): StartupError {
  return new StartupError(
    `DATA_DIR: ${file} ${why}; another user could take over the embedded Postgres through it: ` +
      'use a directory only you can write, or set DATABASE_URL',
    'DATA_DIR',
    EX_CONFIG,
  );
}

/**
 * DATA_DIR's real path, created (as root 0711: the server's user may pass, not list) if missing. It must be
 * ours and writable by no one else, and so must every directory above it (root's, or sticky like /tmp), else
 * exit 78 naming the path; what lies above is checked before anything is created.
 */
export function ownDataDir(dataDir: string): string {
  const wanted = path.resolve(dataDir);
  const self = selfUid();
  let existing = wanted;
  while (lstatSync(existing, { throwIfNoEntry: false }) === undefined) existing = path.dirname(existing);
  if (self !== undefined) {
    const real = realpathSync(existing);
    for (let dir = existing === wanted ? path.dirname(real) : real; ; dir = path.dirname(dir)) {
      const why = untrustedAncestor(statSync(dir), self);
      if (why !== null) throw unsafePath(dir, `${why}, who could replace DATA_DIR ${wanted} inside it`);
      if (path.dirname(dir) === dir) break;
    }
  }
  mkdirSync(wanted, { recursive: true, mode: self === 0 ? 0o711 : 0o700 });
  const real = realpathSync(wanted);
  const why = self === undefined ? null : untrustedDirectory(lstatSync(real), self);
  if (why !== null) throw unsafePath(real, why);
  return real;
}

/** Bytes read of a pid or owner file at most: each is a few lines. */
const SMALL_FILE_LIMIT = 4096;

/**
 * A small file's text, or null when there is none: opened without following a link (and without blocking
 * on a FIFO), and believed only when the opened file is a regular file of `expectedUid` that no one else can
 * write; anything else is exit 78 naming it.
 */
export function readOwnFile(file: string, expectedUid: number | undefined): string | null {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return null;
    if (code === 'ELOOP') throw unsafePath(file, 'is a symbolic link');
    throw error;
  }
  try {
    const why = expectedUid === undefined ? null : untrustedFile(fstatSync(fd), expectedUid);
    if (why !== null) throw unsafePath(file, why);
    const buffer = Buffer.alloc(SMALL_FILE_LIMIT);
    const length = readSync(fd, buffer, 0, SMALL_FILE_LIMIT, 0);
    return buffer.subarray(0, length).toString('utf8');
  } finally {
    closeSync(fd);
  }
}

/** A directory's owner and mode, as the reachability check needs them. */
export interface EntryStat {
  uid: number;
  gid: number;
  mode: number;
}

/** uid and gid of a user in /etc/passwd text. */
export function findUser(passwd: string, name: string): ServerUser | null {
  for (const line of passwd.split('\n')) {
    const [user, , uid, gid] = line.split(':');
    if (user === name && uid !== undefined && gid !== undefined) return { uid: Number(uid), gid: Number(gid) };
  }
  return null;
}

/** Whether `user` may search every directory on the way to a path (pure: given each ancestor's stat). */
export function searchableBy(ancestors: readonly EntryStat[], user: ServerUser): boolean {
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

export const reaches = (user: ServerUser, file: string): boolean => searchableBy(ancestorsOf(file), user);

/** The socket's name in its directory: the server listens on no TCP port, so the port only names it. */
export const SOCKET_PORT = 5432;
const SOCKET_NAME = `.s.PGSQL.${SOCKET_PORT}`;

/** Whether a Unix socket in `dir` has a path the kernel takes (sun_path: 108 bytes with its NUL). */
export function socketFits(dir: string): boolean {
  return Buffer.byteLength(path.join(dir, SOCKET_NAME)) <= 107;
}

/**
 * Postgres refuses to run as root: as root the server runs as `nobody`, always (issue 37: it ran as the owner
 * of whatever `postgres` directory it found, another user's included); any other user runs it as itself (null).
 */
export function serverUser(): ServerUser | null {
  if (selfUid() !== 0) return null;
  const passwd = existsSync('/etc/passwd') ? readFileSync('/etc/passwd', 'utf8') : '';
  return findUser(passwd, 'nobody') ?? { uid: 65534, gid: 65534 };
}

/** The server's user for the start log: `nobody (uid 65534)`. */
export function describeServerUser(user: ServerUser | null): string {
  const uid = serverUid(user);
  if (user !== null) return `nobody (uid ${uid})`;
  try {
    return `${os.userInfo().username} (uid ${uid})`;
  } catch {
    // A uid without a name (no /etc/passwd entry).
    return `uid ${uid}`;
  }
}

/**
 * Where clusters that cannot live in DATA_DIR, and private copies of the binaries, are kept: root's
 * /var/lib/notification-receiver (the server's user may enter it, list nothing, write nothing), or
 * the user's own ~/.local/state/notification-receiver.
 */
export function privateHome(user: ServerUser | null): string {
  const home = privateHomePath();
  ensurePrivateDir(home, user === null ? 0o700 : 0o711);
  return home;
}

const privateHomePath = (): string =>
  selfUid() === 0
    ? '/var/lib/notification-receiver'
    : path.join(os.homedir(), '.local', 'state', 'notification-receiver');

/** Creates a directory of this process's user, or checks one: a directory, ours, writable by no one else. */
function ensurePrivateDir(dir: string, mode: number): void {
  mkdirSync(dir, { recursive: true, mode });
  const entry = lstatSync(dir);
  if (!entry.isDirectory() || entry.uid !== selfUid() || (entry.mode & 0o022) !== 0)
    throw new Error(`${dir} is not a private directory (a link, another user's, or writable by others)`);
  chmodSync(dir, mode);
}

/** Where the cluster is: DATA_DIR/postgres, or a private directory that DATA_DIR/postgres links to. */
export interface ClusterPlace {
  /** The cluster's directory (its real path). */
  dir: string;
  /** Why it is not DATA_DIR/postgres itself, said in the start log; null when it is. */
  elsewhere: string | null;
}

/** Why the server cannot use DATA_DIR/postgres itself; null when it can. */
function whyElsewhere(link: string, user: ServerUser | null): string | null {
  if (user && !reaches(user, link))
    return `uid ${user.uid}, the server's user (Postgres refuses root), cannot enter ${path.dirname(link)}`;
  if (!socketFits(link)) return `${link} is too long a path for the server's Unix socket`;
  return null;
}

/** What DATA_DIR/postgres is, checked: nothing, a link whose directory is gone, or the cluster's directory. */
export type ClusterEntry =
  { kind: 'none' } | { kind: 'dangling' } | { kind: 'directory'; dir: string } | { kind: 'link'; dir: string };

/**
 * DATA_DIR/postgres as it is, before anything in it is read: its own directory, owned by the server's user
 * and writable by no one else, or a link (ours) to such a directory in privateHome. Anything else is exit 78
 * naming it. `realDataDir`: DATA_DIR's real path (ownDataDir).
 */
export function findCluster(realDataDir: string, user: ServerUser | null): ClusterEntry {
  const link = path.join(realDataDir, 'postgres');
  const owner = serverUid(user);
  const entry = lstatSync(link, { throwIfNoEntry: false });
  if (entry === undefined) return { kind: 'none' };
  if (!entry.isSymbolicLink()) {
    const why = owner === undefined ? null : untrustedDirectory(entry, owner);
    if (why !== null) throw unsafePath(link, `${why} (the server's user)`);
    return { kind: 'directory', dir: link };
  }
  const self = selfUid();
  if (self !== undefined && entry.uid !== self) throw unsafePath(link, `is a link owned by uid ${entry.uid}`);
  const target = readlinkSync(link);
  const home = privateHomePath();
  if (!path.isAbsolute(target) || path.dirname(target) !== home)
    throw unsafePath(link, `links to ${target}, not to a cluster directory in ${home}`);
  // Checked as private (ours, writable by no one else), never made here: a refusal changes nothing.
  if (existsSync(home)) privateHome(user);
  const found = lstatSync(target, { throwIfNoEntry: false });
  // Its directory is gone (deleted by hand): a new cluster, elsewhere again.
  if (found === undefined) return { kind: 'dangling' };
  const why = owner === undefined ? null : untrustedDirectory(found, owner);
  if (why !== null) throw unsafePath(target, `${why} (the server's user; ${link} links there)`);
  return { kind: 'link', dir: target };
}

/**
 * The cluster's directory, mode 0700 and owned by the server's user, created if missing: DATA_DIR/postgres,
 * or where the server's user cannot enter DATA_DIR (as root, a clone under /root) or its path is too long
 * for a socket, a private directory under privateHome that DATA_DIR/postgres links to.
 */
export function placeCluster(realDataDir: string, user: ServerUser | null): ClusterPlace {
  const link = path.join(realDataDir, 'postgres');
  const why = whyElsewhere(link, user);
  const found = findCluster(realDataDir, user);
  if (found.kind === 'link')
    return { dir: found.dir, elsewhere: `${why === null ? '' : `${why}; `}${link} links there` };
  if (found.kind === 'dangling') unlinkSync(link);
  if (found.kind === 'directory') {
    if (why === null) return { dir: link, elsewhere: null };
    // An empty directory is what an earlier, failed start left; one with a cluster in it is the user's.
    if (readdirSync(link).length > 0)
      throw new Error(`${link} holds files, but ${why}; move them or use another DATA_DIR`);
    rmdirSync(link);
  }
  if (why === null) {
    mkdirSync(link, { mode: 0o700 });
    if (user) chownSync(link, user.uid, user.gid);
    return { dir: link, elsewhere: null };
  }
  const dir = mkdtempSync(path.join(privateHome(user), 'cluster-'));
  if (user) chownSync(dir, user.uid, user.gid);
  symlinkSync(dir, link);
  return { dir, elsewhere: `${why}; ${link} links there` };
}
