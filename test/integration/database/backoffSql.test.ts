import { sql } from 'kysely';
import { backoffMsSql } from '../../../src/database/backoffSql';
import { backoffMs, type BackoffPolicy } from '../../../src/domain/backoff';
import { EVENT_RETRY } from '../../../src/outbox/outboxQueries';
import { PG_SERVER, withDb } from '../../support/database';

// The back-off computed in SQL (the relay's per-event retries) against the policy's own, in the real Postgres: a
// read of no table, on the server's own database.
const RETRIES = Array.from({ length: 45 }, (_, i) => i - 1); // from -1 (a bad count) past the doublings' cap

async function waitsInSql(policy: BackoffPolicy): Promise<number[]> {
  return withDb(`${PG_SERVER}/postgres`, async (db) => {
    const waits: number[] = [];
    for (const retry of RETRIES) {
      const { rows } = await sql<{ wait: number }>`SELECT ${backoffMsSql(policy, sql`${retry}::int`)} AS wait`.execute(
        db,
      );
      waits.push(Number(rows[0]?.wait));
    }
    return waits;
  });
}

describe('backoffMsSql', () => {
  it('When the relay’s policy is computed in SQL, then each retry waits what backoffMs says', async () => {
    const waits = await waitsInSql(EVENT_RETRY);
    expect(waits).toEqual(RETRIES.map((retry) => backoffMs(EVENT_RETRY, retry)));
    expect(waits.slice(0, 12)).toEqual([
      1000, 1000, 1000, 2000, 4000, 8000, 16_000, 32_000, 64_000, 128_000, 256_000, 300_000,
    ]);
  });

  it('When a policy has full jitter, then each wait is a whole number below the policy’s ceiling', async () => {
    const policy: BackoffPolicy = { firstMs: 250, maxMs: 10_000, jitter: 'full' };
    const ceilings = RETRIES.map((retry) => backoffMs(policy, retry, () => 1));
    const waits = await waitsInSql(policy);
    waits.forEach((wait, i) => {
      expect(Number.isInteger(wait)).toBe(true);
      expect(wait).toBeGreaterThanOrEqual(0);
      expect(wait).toBeLessThan(ceilings[i] ?? 0);
    });
  });
});
