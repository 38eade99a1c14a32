/**
 * The failover harness itself (support/standbyPair.ts), apart from the service: a plain test of the faults
 * tier, not a scenario of docs/RELIABILITY.md, whose rows report what the service does. It proves what the
 * failover scenario builds on: a cut standby misses what the primary commits after the cut, the promotion
 * moves `databaseUrl` to it on a new timeline, and a synchronous standby holds commits while it is cut.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { query } from '../support/database';
import { waitUntil } from '../support/wait';
import { insertTimeline, postgresBinDir, StandbyPair, STANDBY_PAIR_ROLE } from './support/standbyPair';

/** Each step may take many seconds on a loaded 2-core machine: two clusters made, started, stopped. */
const FLOW_TIMEOUT_MS = 180_000;

const rowsOf = async (url: string): Promise<string[]> =>
  (await query<{ label: string }>(url, 'SELECT label FROM marks ORDER BY n')).map((row) => row.label);

const insert = (url: string, n: number, label: string): Promise<unknown> =>
  query(url, 'INSERT INTO marks (n, label) VALUES ($1, $2)', [n, label]);

/** Every process whose command line names the pair: the postmasters (`-D <dir>`) and their children (cluster_name). */
function processesOf(pair: StandbyPair): string[] {
  const found: string[] = [];
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    let command: string;
    try {
      command = readFileSync(path.join('/proc', pid, 'cmdline'), 'utf8')
        .replace(/\0/g, ' ')
        .trim();
    } catch {
      continue;
    }
    if (command.includes(pair.name)) found.push(`${pid}: ${command}`);
  }
  return found;
}

/** Stopped twice, the pair leaves no process and no directory. */
async function expectStoppedClean(pair: StandbyPair): Promise<void> {
  await pair.stop();
  await pair.stop();
  expect(processesOf(pair)).toEqual([]);
  expect(existsSync(pair.directory)).toBe(false);
}

function printTimings(mode: string, pair: StandbyPair): void {
  const { startMs, cutToKillMs, killMs, promoteMs } = pair.timings;
  process.stdout.write(
    `standby pair (${mode}): start ${startMs} ms, cut to kill ${cutToKillMs ?? '-'} ms ` +
      `(the kill ${killMs ?? '-'} ms), promotion ${promoteMs ?? '-'} ms\n`,
  );
}

describe('StandbyPair', () => {
  const pairs: StandbyPair[] = [];
  const start = async (options: { synchronous?: boolean } = {}): Promise<StandbyPair> => {
    const pair = await StandbyPair.start(options);
    pairs.push(pair);
    return pair;
  };
  // A failed test's pair too.
  afterAll(() => Promise.all(pairs.map((pair) => pair.stop())));

  it('When the server programs are missing, then starting fails at once naming them', () => {
    expect(() => postgresBinDir(path.join(__dirname, 'no-such-postgresql'))).toThrow(
      /initdb, pg_ctl, pg_basebackup, postgres\) .*holds no version: install Debian's postgresql package/,
    );
  });

  it(
    'When replication is cut, the primary killed and the standby promoted, then databaseUrl reaches the ' +
      'promoted standby on a new timeline, with every row committed before the cut and none after it',
    async () => {
      const pair = await start();
      await query(pair.databaseUrl, 'CREATE TABLE marks (n int PRIMARY KEY, label text NOT NULL)');
      for (let n = 1; n <= 5; n += 1) await insert(pair.databaseUrl, n, `before ${n}`);
      await pair.waitCaughtUp();
      const timeline = await insertTimeline(pair.primaryUrl);

      pair.cutReplication();
      for (let n = 6; n <= 10; n += 1) await insert(pair.databaseUrl, n, `after ${n}`);
      expect(await rowsOf(pair.primaryUrl)).toHaveLength(10);
      await pair.killPrimary();
      await pair.promoteStandby();

      const [server] = await query<{ port: number; recovering: boolean; who: string }>(
        pair.databaseUrl,
        'SELECT inet_server_port() AS port, pg_is_in_recovery() AS recovering, current_user AS who',
      );
      expect(server).toEqual({
        port: Number(new URL(pair.standbyUrl).port),
        recovering: false,
        who: STANDBY_PAIR_ROLE,
      });
      expect(await rowsOf(pair.databaseUrl)).toEqual(['before 1', 'before 2', 'before 3', 'before 4', 'before 5']);
      // Read as the application's role, as the service would read it.
      expect(await insertTimeline(pair.databaseUrl)).toBeGreaterThan(timeline);
      await insert(pair.databaseUrl, 6, 'after the promotion');
      printTimings('asynchronous', pair);
      await expectStoppedClean(pair);
    },
    FLOW_TIMEOUT_MS,
  );

  it(
    'When a synchronous standby is cut, then a commit waits until replication is restored, and one still ' +
      'waiting when the primary is killed fails and is absent from the promoted standby',
    async () => {
      const pair = await start({ synchronous: true });
      const [setting] = await query<{ names: string }>(
        pair.primaryUrl,
        "SELECT current_setting('synchronous_standby_names') AS names",
      );
      expect(setting?.names).toBe('*');
      await query(pair.databaseUrl, 'CREATE TABLE marks (n int PRIMARY KEY, label text NOT NULL)');
      await insert(pair.databaseUrl, 1, 'before');

      /** An insert on a connection of its own, and how it ended (undefined while it waits). */
      const waitingInsert = async (n: number, label: string) => {
        const client = new pg.Client({ connectionString: pair.databaseUrl });
        client.on('error', () => undefined);
        await client.connect();
        const [backend] = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows;
        let outcome: 'committed' | 'failed' | undefined;
        const done = client
          .query('INSERT INTO marks (n, label) VALUES ($1, $2)', [n, label])
          .then(
            () => (outcome = 'committed'),
            () => (outcome = 'failed'),
          )
          .finally(() => client.end().catch(() => undefined));
        await waitUntil(`the insert of ${label} waiting for the synchronous standby`, async () => {
          const [activity] = await query<{ wait_event: string | null }>(
            pair.primaryUrl,
            'SELECT wait_event FROM pg_stat_activity WHERE pid = $1',
            [backend?.pid],
          );
          return activity?.wait_event === 'SyncRep';
        });
        return { done, outcome: () => outcome };
      };

      pair.cutReplication();
      const healed = await waitingInsert(2, 'waited');
      expect(healed.outcome()).toBeUndefined();
      pair.restoreReplication();
      await healed.done;
      expect(healed.outcome()).toBe('committed');

      pair.cutReplication();
      const lost = await waitingInsert(3, 'unacknowledged');
      await pair.killPrimary();
      await lost.done;
      expect(lost.outcome()).toBe('failed');
      await pair.promoteStandby();
      expect(await rowsOf(pair.databaseUrl)).toEqual(['before', 'waited']);
      // The promoted standby has no standby of its own to wait for.
      await insert(pair.databaseUrl, 3, 'after the promotion');
      printTimings('synchronous', pair);
      await expectStoppedClean(pair);
    },
    FLOW_TIMEOUT_MS,
  );
});
