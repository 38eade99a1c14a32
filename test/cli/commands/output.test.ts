import { testDatabase, type TestDatabase } from '../../support/database';
import { cliEnv, runCli } from '../cliSupport';

// The command line's output, read through a pipe by a Node parent as the benchmark reads `history seed --sample`:
// a pipe holds only so much, and an exit that does not wait for the rest drops it.

let db: TestDatabase;

beforeAll(() => {
  db = testDatabase();
});
afterAll(() => db.drop());

describe('the command line writing to a pipe', () => {
  it('When a command prints more lines than the pipe takes at once, then its reader gets every one', async () => {
    // Two thousand ids, one write each: more than a pipe to a Node parent took before the exit waited for it.
    const sample = 2000;
    const run = await runCli(
      ['history', 'seed', '--orders', '5000', '--days', '60', '--sample', String(sample)],
      cliEnv({ DATABASE_URL: db.url }),
      { timeoutMs: 120_000 },
    );
    expect(run.code).toBe(0);
    const ids = run.stdout.split('\n').filter(Boolean);
    expect(ids).toHaveLength(sample);
    expect(new Set(ids).size).toBe(sample);
  }, 150_000);
});
