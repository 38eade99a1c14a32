import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { readOwnFile } from '../../../src/embeddedPostgres/embeddedPostgresPlaces';
import {
  formatOwner,
  notOurPostmaster,
  ownerHolds,
  parseOwner,
  parseProcStat,
  parseProcUids,
  untrustedAncestor,
  untrustedDirectory,
  untrustedFile,
  type ProcessFacts,
} from '../../../src/embeddedPostgres/embeddedPostgresTrust';
import { StartupError } from '../../../src/errors';

/** Issue 37: local mode believes only what no other user could have written. */

const FILE = 0o100000;
const DIR = 0o040000;
const NOBODY = 65534;

describe('which files and directories local mode believes', () => {
  it('When a pid or owner file is not a regular file of the expected user, or others may write it, then it is not believed', () => {
    expect(untrustedFile({ uid: NOBODY, mode: FILE | 0o600 }, NOBODY)).toBeNull();
    expect(untrustedFile({ uid: NOBODY, mode: FILE | 0o644 }, NOBODY)).toBeNull();
    expect(untrustedFile({ uid: 4242, mode: FILE | 0o600 }, NOBODY)).toBe('is owned by uid 4242, not uid 65534');
    expect(untrustedFile({ uid: NOBODY, mode: FILE | 0o620 }, NOBODY)).toBe('is writable by other users');
    expect(untrustedFile({ uid: NOBODY, mode: FILE | 0o602 }, NOBODY)).toBe('is writable by other users');
    expect(untrustedFile({ uid: NOBODY, mode: 0o010000 | 0o600 }, NOBODY)).toBe('is not a regular file');
    expect(untrustedFile({ uid: NOBODY, mode: DIR | 0o700 }, NOBODY)).toBe('is not a regular file');
  });

  it('When DATA_DIR or its cluster directory belongs to another user or others may write it, then it is refused', () => {
    expect(untrustedDirectory({ uid: 0, mode: DIR | 0o711 }, 0)).toBeNull();
    expect(untrustedDirectory({ uid: NOBODY, mode: DIR | 0o700 }, NOBODY)).toBeNull();
    expect(untrustedDirectory({ uid: 4242, mode: DIR | 0o700 }, NOBODY)).toBe('is owned by uid 4242, not uid 65534');
    expect(untrustedDirectory({ uid: 0, mode: DIR | 0o1777 }, 0)).toBe('is writable by other users');
    expect(untrustedDirectory({ uid: 0, mode: DIR | 0o775 }, 0)).toBe('is writable by other users');
    // A link is not a directory: lstat, never stat.
    expect(untrustedDirectory({ uid: 0, mode: 0o120000 | 0o777 }, 0)).toBe('is not a directory');
  });

  it("When a directory above DATA_DIR is another user's, or writable by others without the sticky bit, then it is refused", () => {
    expect(untrustedAncestor({ uid: 0, mode: DIR | 0o755 }, 1000)).toBeNull();
    expect(untrustedAncestor({ uid: 1000, mode: DIR | 0o700 }, 1000)).toBeNull();
    // /tmp: others may create, not rename or remove what is ours.
    expect(untrustedAncestor({ uid: 0, mode: DIR | 0o1777 }, 1000)).toBeNull();
    expect(untrustedAncestor({ uid: 0, mode: DIR | 0o777 }, 1000)).toBe('is writable by other users');
    expect(untrustedAncestor({ uid: 4242, mode: DIR | 0o755 }, 1000)).toBe('is owned by uid 4242');
    expect(untrustedAncestor({ uid: 4242, mode: DIR | 0o755 }, 0)).toBe('is owned by uid 4242');
  });
});

describe('which process local mode signals', () => {
  const expected = { exe: '/srv/native/bin/postgres', uid: NOBODY, clusterDir: '/srv/.data/postgres' };
  const postmaster: ProcessFacts = {
    exe: '/srv/native/bin/postgres',
    uids: [NOBODY, NOBODY, NOBODY, NOBODY],
    ppid: 1,
    startTime: '106652',
    argv: ['/srv/native/bin/postgres', '-D', '/srv/.data/postgres', '-p', '5432', ''],
  };

  it("When the pid names this cluster's postmaster (its binary, its user, -D this cluster), then it is ours", () => {
    expect(notOurPostmaster(postmaster, expected)).toBeNull();
  });

  it('When the pid names anything else (a root process, a reused pid, another cluster, a look-alike), then it is not ours, and why names no argument', () => {
    const sleep = { ...postmaster, exe: '/usr/bin/sleep', uids: [0, 0, 0, 0], argv: ['sleep', 's3cret'] };
    expect(notOurPostmaster(sleep, expected)).toBe('it runs /usr/bin/sleep, not /srv/native/bin/postgres');
    expect(notOurPostmaster({ ...postmaster, exe: null }, expected)).toBe(
      'it runs a program this user cannot see, not /srv/native/bin/postgres',
    );
    expect(notOurPostmaster({ ...postmaster, uids: [4242, 4242, 4242, 4242] }, expected)).toBe(
      'it runs as uid 4242, not uid 65534',
    );
    // A setuid-like mix: every uid must be the server's.
    expect(notOurPostmaster({ ...postmaster, uids: [NOBODY, 0, NOBODY, NOBODY] }, expected)).toMatch(/^it runs as uid/);
    expect(notOurPostmaster({ ...postmaster, uids: [] }, expected)).toBe('it runs as uid unknown, not uid 65534');
    const other = { ...postmaster, argv: ['/srv/native/bin/postgres', '-D', '/home/eve/cluster'] };
    expect(notOurPostmaster(other, expected)).toBe('it serves another data directory than /srv/.data/postgres');
    const prefix = { ...postmaster, argv: ['/srv/native/bin/postgres', '-D', '/srv/.data/postgres-evil'] };
    expect(notOurPostmaster(prefix, expected)).toMatch(/another data directory/);
    // `-D` as the program's own name is no option.
    expect(notOurPostmaster({ ...postmaster, argv: ['-D', '/srv/.data/postgres'] }, expected)).toMatch(/another/);
    expect(notOurPostmaster({ ...postmaster, argv: [] }, expected)).toMatch(/another/);
  });

  it('When /proc/<pid>/stat and status are read, then the parent, start time and uids come out, whatever the command name holds', () => {
    const stat =
      '4242 (post gres) x) S 1 4242 4242 0 -1 4194560 1234 0 0 0 5 3 0 0 20 0 1 0 106652 225165312 5000 ' +
      '18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0';
    expect(parseProcStat(stat)).toEqual({ ppid: 1, startTime: '106652' });
    expect(parseProcStat('garbage')).toBeNull();
    expect(parseProcUids('Name:\tpostgres\nUid:\t65534\t65534\t65534\t65534\nGid:\t65534\n')).toEqual([
      NOBODY,
      NOBODY,
      NOBODY,
      NOBODY,
    ]);
    expect(parseProcUids('Name:\tx\n')).toEqual([]);
  });
});

describe('who holds DATA_DIR', () => {
  const boot = '3d2010fa-be4d-447d-8925-b0e7851d4e30';

  it('When the owner file is written and read back, then it names the pid, its start time and the boot', () => {
    const text = formatOwner({ pid: 6727, startTime: '106652', bootId: boot });
    expect(text).toBe(`6727 106652 ${boot}\n`);
    expect(parseOwner(text)).toEqual({ pid: 6727, startTime: '106652', bootId: boot });
    // As written before issue 37, or where there is no /proc.
    expect(parseOwner(formatOwner({ pid: 6727 }))).toEqual({ pid: 6727, startTime: null, bootId: null });
    expect(parseOwner('')).toBeNull();
    expect(parseOwner('x 1 2')).toBeNull();
    expect(parseOwner('6727 ../x y')).toEqual({ pid: 6727, startTime: null, bootId: null });
  });

  it('When the owner file names a live process, then it holds DATA_DIR only if that is the very process that wrote it', () => {
    const record = { pid: 6727, startTime: '106652', bootId: boot };
    expect(ownerHolds(record, { startTime: '106652', bootId: boot }, null)).toBe(true);
    // The pid reused after a reboot, or by a later process: not the owner (finding 6).
    expect(ownerHolds(record, { startTime: '106652', bootId: 'another-boot' }, null)).toBe(false);
    expect(ownerHolds(record, { startTime: '999999', bootId: boot }, null)).toBe(false);
    expect(ownerHolds(record, 'gone', { ppid: 6727 })).toBe(false);
    // Without /proc, being alive is all there is to go on.
    expect(ownerHolds(record, 'unknown', null)).toBe(true);
  });

  it('When the owner file holds a bare pid, then it holds DATA_DIR only while it is the parent of our running postmaster', () => {
    const bare = { pid: 6727, startTime: null, bootId: null };
    const live = { startTime: '106652', bootId: boot };
    expect(ownerHolds(bare, live, { ppid: 6727 })).toBe(true);
    expect(ownerHolds(bare, live, { ppid: 1 })).toBe(false);
    expect(ownerHolds(bare, live, null)).toBe(false);
  });
});

describe('reading a pid or owner file', () => {
  let dir: string;
  const uid = process.getuid?.() ?? 0;
  beforeAll(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'nr-trust-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const refusal = (file: string, expectedUid: number): string => {
    try {
      readOwnFile(file, expectedUid);
    } catch (error) {
      expect(error).toBeInstanceOf(StartupError);
      expect(error).toMatchObject({ setting: 'DATA_DIR', exitCode: 78 });
      return (error as Error).message;
    }
    throw new Error(`${file} was believed`);
  };

  it('When the file is ours and no one else may write it, then its text is read; when it is missing, null', () => {
    writeFileSync(path.join(dir, 'ours'), '4242\n', { mode: 0o600 });
    expect(readOwnFile(path.join(dir, 'ours'), uid)).toBe('4242\n');
    expect(readOwnFile(path.join(dir, 'missing'), uid)).toBeNull();
  });

  it("When the file is a link, another user's, writable by others or a FIFO, then it is refused naming it, and nothing is read through it", () => {
    writeFileSync(path.join(dir, 'target'), '1\n', { mode: 0o600 });
    symlinkSync(path.join(dir, 'target'), path.join(dir, 'link'));
    expect(refusal(path.join(dir, 'link'), uid)).toMatch(new RegExp(`^DATA_DIR: ${dir}/link is a symbolic link;`));
    expect(refusal(path.join(dir, 'target'), uid + 1)).toContain(`${dir}/target is owned by uid ${uid}, not uid`);
    writeFileSync(path.join(dir, 'open'), '1\n');
    chmodSync(path.join(dir, 'open'), 0o666);
    expect(refusal(path.join(dir, 'open'), uid)).toContain(`${dir}/open is writable by other users`);
    // A FIFO would block a plain open until someone writes to it.
    execFileSync('mkfifo', [path.join(dir, 'fifo')]);
    expect(refusal(path.join(dir, 'fifo'), uid)).toContain(`${dir}/fifo is not a regular file`);
  });
});
