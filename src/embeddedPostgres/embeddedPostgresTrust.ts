/**
 * What local mode may believe about the files and processes it finds in DATA_DIR (issue 37): pure decisions
 * on facts the thin I/O in embeddedPostgresPlaces.ts and embeddedPostgresProcess.ts gathers. Anything that
 * another local user can write is not ours: such a file is refused, such a process never signalled.
 */

/** An entry's owner and st_mode (type bits included), from lstat or fstat. */
export interface EntryFacts {
  uid: number;
  mode: number;
}

const S_IFMT = 0o170000;
const S_IFREG = 0o100000;
const S_IFDIR = 0o040000;
const S_ISVTX = 0o001000;
/** Writable by the group or by others. */
const WRITABLE_BY_OTHERS = 0o022;

const writableByOthers = (entry: EntryFacts): boolean => (entry.mode & WRITABLE_BY_OTHERS) !== 0;

/** Why a file read through O_NOFOLLOW and fstat is not to be believed, or null when it is. */
export function untrustedFile(entry: EntryFacts, expectedUid: number): string | null {
  if ((entry.mode & S_IFMT) !== S_IFREG) return 'is not a regular file';
  if (entry.uid !== expectedUid) return `is owned by uid ${entry.uid}, not uid ${expectedUid}`;
  if (writableByOthers(entry)) return 'is writable by other users';
  return null;
}

/** Why a directory (lstat: a link is not one) is not to be used as ours, or null when it may. */
export function untrustedDirectory(entry: EntryFacts, expectedUid: number): string | null {
  if ((entry.mode & S_IFMT) !== S_IFDIR) return 'is not a directory';
  if (entry.uid !== expectedUid) return `is owned by uid ${entry.uid}, not uid ${expectedUid}`;
  if (writableByOthers(entry)) return 'is writable by other users';
  return null;
}

/**
 * Why a directory above DATA_DIR lets another user replace what lies below it, or null: it must belong to
 * root or to us, and be writable by no one else unless sticky (/tmp: others cannot rename what is ours).
 */
export function untrustedAncestor(entry: EntryFacts, selfUid: number): string | null {
  if (entry.uid !== 0 && entry.uid !== selfUid) return `is owned by uid ${entry.uid}`;
  if (writableByOthers(entry) && (entry.mode & S_ISVTX) === 0) return 'is writable by other users';
  return null;
}

/** What /proc says of a live process. */
export interface ProcessFacts {
  /** The `exe` link's target; null when it cannot be read (another user's process, as an unprivileged user). */
  exe: string | null;
  /** Real, effective, saved and file-system uids (the `Uid:` line of `status`). */
  uids: readonly number[];
  ppid: number;
  /** Clock ticks after boot (field 22 of `stat`): with the boot id, what tells a reused pid apart. */
  startTime: string;
  argv: readonly string[];
}

/** ppid and start time from /proc/<pid>/stat (the command name, in parentheses, may hold anything). */
export function parseProcStat(text: string): { ppid: number; startTime: string } | null {
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  // fields[0] is field 3 (state): ppid is field 4, starttime field 22.
  const ppid = Number(fields[1]);
  const startTime = fields[19];
  if (text.lastIndexOf(')') < 0 || !Number.isInteger(ppid) || startTime === undefined || !/^\d+$/.test(startTime))
    return null;
  return { ppid, startTime };
}

/** The uids of the `Uid:` line of /proc/<pid>/status. */
export function parseProcUids(status: string): number[] {
  const line = status.split('\n').find((l) => l.startsWith('Uid:'));
  return line === undefined ? [] : line.slice(4).trim().split(/\s+/).map(Number);
}

/** What this cluster's postmaster looks like in /proc. */
export interface ExpectedPostmaster {
  /** The real path of the postgres binary this service runs. */
  exe: string;
  /** The server's user. */
  uid: number;
  /** The cluster's directory, as given to `postgres -D`. */
  clusterDir: string;
}

/**
 * Why a live process named in postmaster.pid is not this cluster's postmaster, or null when it is: it runs
 * the expected binary, as the expected user (every uid), with `-D` naming this cluster. A pid reused after a
 * reboot, or planted by another user, fails one of these. The reason names no argument (another process's
 * command line may hold its secrets).
 */
export function notOurPostmaster(facts: ProcessFacts, expected: ExpectedPostmaster): string | null {
  if (facts.exe !== expected.exe)
    return `it runs ${facts.exe ?? 'a program this user cannot see'}, not ${expected.exe}`;
  if (facts.uids.length === 0 || facts.uids.some((uid) => uid !== expected.uid))
    return `it runs as uid ${facts.uids[0] ?? 'unknown'}, not uid ${expected.uid}`;
  const at = facts.argv.indexOf('-D');
  if (at < 1 || facts.argv[at + 1] !== expected.clusterDir)
    return `it serves another data directory than ${expected.clusterDir}`;
  return null;
}

/** A process's identity across pid reuse: its pid, start time and the boot it started in. */
export interface ProcessIdentity {
  pid: number;
  startTime: string;
  bootId: string;
}

/** The owner file's record: the claiming process's pid and, where /proc tells them, its start and boot. */
export interface OwnerRecord {
  pid: number;
  startTime: string | null;
  bootId: string | null;
}

export const formatOwner = (owner: ProcessIdentity | { pid: number }): string =>
  'startTime' in owner ? `${owner.pid} ${owner.startTime} ${owner.bootId}\n` : `${owner.pid}\n`;

/** The owner file's text: `pid start boot`, or `pid` alone (written before issue 37, or without /proc). */
export function parseOwner(text: string): OwnerRecord | null {
  const [pidText, startTime, bootId] = text.trim().split(/\s+/);
  const pid = Number(pidText);
  if (!Number.isInteger(pid) || pid <= 0) return null;
  if (startTime !== undefined && bootId !== undefined && /^\d+$/.test(startTime) && /^[\w-]+$/.test(bootId))
    return { pid, startTime, bootId };
  return { pid, startTime: null, bootId: null };
}

/**
 * Whether the owner file's process still holds DATA_DIR (finding 6: a live unrelated pid does not).
 * `live`: the identity of the process now running under that pid ('gone': none; 'unknown': no /proc to
 * ask, so being alive is all there is to go on). `server`: this cluster's postmaster, verified, if one
 * runs. A record with an identity holds only while the same process lives; a bare pid only while it is
 * the parent of our running postmaster (the process that started it).
 */
export function ownerHolds(
  record: OwnerRecord,
  live: { startTime: string; bootId: string } | 'gone' | 'unknown',
  server: { ppid: number } | null,
): boolean {
  if (live === 'gone') return false;
  if (live === 'unknown') return true;
  if (record.startTime !== null && record.bootId !== null)
    return record.startTime === live.startTime && record.bootId === live.bootId;
  return server !== null && server.ppid === record.pid;
}
