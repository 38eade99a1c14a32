import { describeDatabase, findUser, parsePostmasterPid, searchableBy } from '../../src/database/embeddedPostgres';

describe('the embedded Postgres helpers', () => {
  it('When postmaster.pid is read, then its pid and port come from the first and fourth lines', () => {
    const text = '4242\n/data/postgres\n1764064000\n45883\n\n127.0.0.1\n  5432001  32768\nready   \n';
    expect(parsePostmasterPid(text)).toEqual({ pid: 4242, port: 45883 });
    expect(parsePostmasterPid('')).toBeNull();
    expect(parsePostmasterPid('4242\n/data\n')).toBeNull();
  });

  it('When /etc/passwd names the user, then its uid and gid are found; otherwise null', () => {
    const passwd = 'root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n';
    expect(findUser(passwd, 'nobody')).toEqual({ uid: 65534, gid: 65534 });
    expect(findUser(passwd, 'postgres')).toBeNull();
  });

  it('When a database URL is described for the log, then only host, port and database appear', () => {
    expect(describeDatabase('postgres://app:s3cret@db.internal:6432/notifications')).toBe(
      'db.internal:6432/notifications',
    );
    expect(describeDatabase('postgres://app@db/n')).toBe('db:5432/n');
  });

  it('When root runs the server as another user, then a path counts as reachable only if every directory is searchable by it', () => {
    const nobody = { uid: 65534, gid: 65534 };
    const open = { uid: 0, gid: 0, mode: 0o40755 };
    expect(searchableBy([open, open], nobody)).toBe(true);
    expect(searchableBy([open, { uid: 0, gid: 0, mode: 0o40700 }], nobody)).toBe(false);
    expect(searchableBy([{ uid: 65534, gid: 0, mode: 0o40700 }, open], nobody)).toBe(true);
    expect(searchableBy([{ uid: 0, gid: 65534, mode: 0o40750 }], nobody)).toBe(true);
  });
});
