import { sql } from 'kysely';
import type pg from 'pg';
import { createPool } from '../../../src/database/pool';
import { PooledTransactions, prepared, statement } from '../../../src/database/transaction';
import { createLogger } from '../../../src/observability/logger';
import { query, watchQueryOverlap } from '../../support/database';
import { startTestService, type TestService } from '../../support/service';

// The recorder's and the relay's transactions (src/database/transaction.ts), on a pipelined pool (the service's own, the default: BEGIN leaves
// with the first statements, the last statement with COMMIT) and on one that sends a statement at a
// time (DATABASE_PIPELINE=false). Whatever fails, nothing may be taken for committed.

let svc: TestService;
let unpipelined: pg.Pool;
beforeAll(async () => {
  svc = await startTestService({ env: { RELAY_ENABLED: 'false' } });
  unpipelined = createPool(
    { url: svc.database.url, poolMax: 3, timeoutMs: 3000, pipelined: false },
    createLogger('silent'),
  );
  await query(svc.database.url, 'CREATE TABLE pipeline_probe (id integer PRIMARY KEY)');
});
afterAll(async () => {
  await unpipelined.end();
  await svc.stop();
});
beforeEach(() => query(svc.database.url, 'TRUNCATE pipeline_probe'));

const insert = (id: number) => prepared('probe_insert', sql`INSERT INTO pipeline_probe (id) VALUES (${id}::int)`);
const count = () => prepared('probe_count', sql<{ n: number }>`SELECT count(*)::int AS n FROM pipeline_probe`);
const stored = async (): Promise<number[]> =>
  (await query<{ id: number }>(svc.database.url, 'SELECT id FROM pipeline_probe ORDER BY id')).map((r) => r.id);

describe.each([
  ['a pipelined pool', () => svc.service.pool],
  ['a pool without pipelining', () => unpipelined],
])('recorder sessions on %s', (_, poolOf) => {
  it('When statements are issued together, then they run in order and the last one commits with everything before it', async () => {
    const sessions = new PooledTransactions(poolOf());
    const seen = await sessions.transaction(async (session) => {
      const [, , rows] = await Promise.all([session.run(insert(1)), session.run(insert(2)), session.run(count())]);
      await session.runAndCommit(insert(3));
      return rows[0]?.n;
    });
    expect(seen).toBe(2);
    expect(await stored()).toEqual([1, 2, 3]);
  });

  it('When the statement sent with COMMIT fails, then the caller gets its error and nothing of the transaction is stored', async () => {
    const sessions = new PooledTransactions(poolOf());
    await expect(
      sessions.transaction(async (session) => {
        await session.run(insert(1));
        return session.runAndCommit(insert(1)); // duplicate key
      }),
    ).rejects.toMatchObject({ code: '23505' });
    expect(await stored()).toEqual([]);
  });

  it('When work swallows a failed statement, then the COMMIT that Postgres turns into a rollback is reported as a failure', async () => {
    const sessions = new PooledTransactions(poolOf());
    await expect(
      sessions.transaction(async (session) => {
        await session.run(insert(1));
        await session.run(insert(1)).catch(() => undefined);
        return 'done';
      }),
    ).rejects.toThrow(/ROLLBACK, not COMMIT/);
    expect(await stored()).toEqual([]);
  });

  it('When a transaction failed, then the connections it used serve the next transactions normally', async () => {
    const sessions = new PooledTransactions(poolOf());
    const max = poolOf().options.max;
    await Promise.all(
      Array.from({ length: max }, (_, i) =>
        sessions.transaction((session) => session.runAndCommit(insert(100 + (i % 2)))).catch(() => undefined),
      ),
    );
    await Promise.all(
      Array.from({ length: max }, (_, i) => sessions.transaction((session) => session.runAndCommit(insert(i + 1)))),
    );
    expect((await stored()).filter((id) => id < 100)).toEqual(Array.from({ length: max }, (_, i) => i + 1));
  });

  it('When the statement sent with COMMIT does not answer within its time, then the caller gets a timeout then, and the connection is given up', async () => {
    const sessions = new PooledTransactions(poolOf());
    const slow = statement(sql`SELECT pg_sleep(${1.5}::float8)`);
    const started = performance.now();
    await expect(sessions.transaction((session) => session.runAndCommit(slow, 200))).rejects.toThrow(/timeout/i);
    const waited = performance.now() - started;
    expect(waited).toBeGreaterThanOrEqual(190);
    expect(waited).toBeLessThan(1_200);
    // The pool replaced the given-up connection: the next transactions run normally.
    await sessions.transaction((session) => session.runAndCommit(insert(7)));
    expect(await stored()).toEqual([7]);
  });

  it('When the first statement of a transaction is its last, then it is sent alone, without BEGIN or COMMIT', async () => {
    const sessions = new PooledTransactions(poolOf());
    const overlap = watchQueryOverlap();
    try {
      await sessions.transaction((session) => session.runAndCommit(insert(1)));
      expect(overlap.texts().filter((text) => /^(BEGIN|COMMIT)$/.test(text))).toEqual([]);
    } finally {
      overlap.stop();
    }
    await expect(sessions.transaction((session) => session.runAndCommit(insert(1)))).rejects.toMatchObject({
      code: '23505',
    });
    expect(await stored()).toEqual([1]);
  });

  it('When a statement is issued after the one sent with COMMIT, then it is refused and the transaction still commits', async () => {
    const sessions = new PooledTransactions(poolOf());
    await expect(
      sessions.transaction(async (session) => {
        await session.run(insert(1));
        const committed = session.runAndCommit(insert(2));
        await expect(session.run(insert(3))).rejects.toThrow(/has ended/);
        return committed;
      }),
    ).resolves.toEqual([]);
    expect(await stored()).toEqual([1, 2]);
  });
});

it('When statements are issued together on a pool without pipelining, then each leaves only after the one before was answered', async () => {
  const overlap = watchQueryOverlap();
  try {
    const sessions = new PooledTransactions(unpipelined);
    await sessions.transaction(async (session) => {
      await Promise.all([session.run(insert(1)), session.run(insert(2)), session.run(count())]);
      return session.runAndCommit(insert(3));
    });
    await expect(
      sessions.transaction(async (session) => {
        await Promise.all([session.run(insert(4)), session.run(insert(4)), session.run(insert(5))]);
      }),
    ).rejects.toMatchObject({ code: '23505' });
    expect(overlap.most()).toBe(1);
    expect(await stored()).toEqual([1, 2, 3]);
    // The watch sees overlap where there is some: the pipelined pool sends them together.
    await new PooledTransactions(svc.service.pool).transaction((session) =>
      Promise.all([session.run(insert(6)), session.runAndCommit(insert(7))]),
    );
    expect(overlap.most()).toBeGreaterThan(1);
  } finally {
    overlap.stop();
  }
});

it('When DATABASE_PIPELINE is left at its default, then the service pool is in pipeline mode, and the pool made with pipelined: false is not', async () => {
  for (const [pool, expected] of [
    [svc.service.pool, true],
    [unpipelined, false],
  ] as const) {
    const client = await pool.connect();
    expect(client.pipeline).toBe(expected);
    client.release();
  }
});
