import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { describeDatabase, parsePostmasterPid, socketUrl } from '../../../src/embeddedPostgres/embeddedPostgres';
import { expectedBinaries, sameBinaries } from '../../../src/embeddedPostgres/embeddedPostgresBinaries';
import { findUser, searchableBy, socketFits } from '../../../src/embeddedPostgres/embeddedPostgresPlaces';

describe('the embedded Postgres helpers', () => {
  it('When postmaster.pid is read, then only its pid is taken: the socket directory it names is not believed', () => {
    const text = '4242\n/data/postgres\n1764064000\n5432\n/tmp/elsewhere\n\n  5432001  32768\nready   \n';
    expect(parsePostmasterPid(text)).toBe(4242);
    expect(parsePostmasterPid('')).toBeNull();
    expect(parsePostmasterPid('-1\n')).toBeNull();
    expect(parsePostmasterPid('12ab\n')).toBeNull();
  });

  it('When /etc/passwd names the user, then its uid and gid are found; otherwise null', () => {
    const passwd = 'root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n';
    expect(findUser(passwd, 'nobody')).toEqual({ uid: 65534, gid: 65534 });
    expect(findUser(passwd, 'postgres')).toBeNull();
  });

  it('When a database URL is described for the log, then only host, port and database appear, or the socket', () => {
    expect(describeDatabase('postgres://app:s3cret@db.internal:6432/notifications')).toBe(
      'db.internal:6432/notifications',
    );
    expect(describeDatabase('postgres://app@db/n')).toBe('db:5432/n');
    expect(describeDatabase(socketUrl('/work/x/.data/postgres', 'notifications'))).toBe(
      'socket /work/x/.data/postgres/.s.PGSQL.5432/notifications',
    );
  });

  it('When the server is reached through its socket, then pg reads the socket directory and the database from the URL', () => {
    const client = new pg.Client({ connectionString: socketUrl('/a dir/with,comma/postgres', 'notifications') });
    expect(client).toMatchObject({
      host: '/a dir/with,comma/postgres',
      port: 5432,
      user: 'postgres',
      database: 'notifications',
    });
  });

  it('When a socket would be made in a directory, then its path must fit in 107 bytes', () => {
    expect(socketFits('/root/clone/.data/postgres')).toBe(true);
    expect(socketFits(`/${'d'.repeat(92)}`)).toBe(true);
    expect(socketFits(`/${'d'.repeat(93)}`)).toBe(false);
  });

  it('When root runs the server as another user, then a path counts as reachable only if every directory is searchable by it', () => {
    const nobody = { uid: 65534, gid: 65534 };
    const open = { uid: 0, gid: 0, mode: 0o40755 };
    expect(searchableBy([open, open], nobody)).toBe(true);
    expect(searchableBy([open, { uid: 0, gid: 0, mode: 0o40700 }], nobody)).toBe(false);
    expect(searchableBy([open, { uid: 0, gid: 0, mode: 0o40711 }], nobody)).toBe(true);
    expect(searchableBy([{ uid: 65534, gid: 0, mode: 0o40700 }, open], nobody)).toBe(true);
    expect(searchableBy([{ uid: 0, gid: 65534, mode: 0o40750 }], nobody)).toBe(true);
  });
});

describe('the private copy of the binaries', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'nr-binaries-'));
    mkdirSync(path.join(dir, 'bin'));
    mkdirSync(path.join(dir, 'lib'));
    writeFileSync(path.join(dir, 'bin', 'postgres'), 'the server');
    writeFileSync(path.join(dir, 'lib', 'libicu.so.60.2'), 'a library');
    writeFileSync(
      path.join(dir, 'pg-symlinks.json'),
      JSON.stringify([{ source: 'native/lib/libicu.so.60.2', target: 'native/lib/libicu.so' }]),
    );
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('When a copy is checked, then it must hold the installed files with the same contents, the library links, and nothing else', () => {
    const expected = expectedBinaries(dir);
    expect(expected.map((f) => f.path).sort()).toEqual([
      'bin/postgres',
      'lib/libicu.so',
      'lib/libicu.so.60.2',
      'pg-symlinks.json',
    ]);
    expect(expected.find((f) => f.path === 'lib/libicu.so')).toEqual({ path: 'lib/libicu.so', link: 'libicu.so.60.2' });
    expect(sameBinaries(expected, [...expected].reverse())).toBe(true);

    const swapped = expected.map((f) => (f.path === 'bin/postgres' ? { ...f, sha256: '0'.repeat(64) } : f));
    expect(sameBinaries(expected, swapped)).toBe(false);
    expect(sameBinaries(expected, [...expected, { path: 'lib/libc.so.6', size: 1, sha256: 'a'.repeat(64) }])).toBe(
      false,
    );
    const relinked = expected.map((f) => (f.link ? { ...f, link: '/tmp/planted.so' } : f));
    expect(sameBinaries(expected, relinked)).toBe(false);
    expect(sameBinaries(expected, expected.slice(1))).toBe(false);
  });
});
