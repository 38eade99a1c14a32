import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { ADVISORY_LOCKS } from '../../../src/database/advisoryLocks';
import { ROOT } from '../../support/build';

describe('the advisory lock keys', () => {
  it('When every job takes its lock, then no two share a key', () => {
    const keys = Object.values(ADVISORY_LOCKS);
    expect(new Set(keys).size).toBe(keys.length);
  });

  it('When a migration takes a lock in SQL, then its key is one of them', () => {
    const sqlDir = path.join(ROOT, 'sql');
    const taken = readdirSync(sqlDir).flatMap((file) =>
      [...readFileSync(path.join(sqlDir, file), 'utf8').matchAll(/pg_advisory\w*lock\((\d+)\)/g)].map((m) =>
        Number(m[1]),
      ),
    );
    expect(taken.length).toBeGreaterThan(0);
    for (const key of taken) expect(Object.values(ADVISORY_LOCKS)).toContain(key);
  });
});
