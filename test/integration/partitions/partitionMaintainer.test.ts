import pg from 'pg';
import request from 'supertest';
import { ADVISORY_LOCKS } from '../../../src/database/advisoryLocks';
import { HISTORY_MAINTAINER_LOCK, MISSING_DAY_CHECK_MS } from '../../../src/partitions/partitionMaintainer';
import { query, testDatabase, type TestDatabase } from '../../support/database';
import { DrivenClock } from '../../support/drivenClock';
import { backdateHistory, historyDays } from '../../support/history';
import { startTestService, type TestService } from '../../support/service';
import { orderBody, uniqueId } from '../../support/signing';
import { waitUntil } from '../../support/wait';

// The service keeps history by the day itself (src/partitions/): the days ahead are made, raw bodies go after
// BODY_RETENTION and whole days after HISTORY_RETENTION, by one maintainer across replicas.

const dayOf = (daysAgo: number): string =>
  new Date(Date.now() - daysAgo * 86_400_000).toISOString().slice(0, 10).replaceAll('-', '');

async function metric(svc: TestService, name: string): Promise<number> {
  const text = (await svc.admin.get('/metrics').expect(200)).text;
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? Number.NaN : Number(line.split(' ')[1]);
}

/**
 * Removes today's partitions of the tables, as an operator's mistake would. Under load a statement may deadlock with
 * a recording transaction; Postgres then cancels one of the two, and when it is the operator's, they run it again.
 */
async function dropToday(tables: readonly string[]): Promise<void> {
  const again = async (text: string): Promise<void> => {
    for (let attempt = 1; ; attempt += 1) {
      try {
        await query(db.url, text);
        return;
      } catch (error) {
        if ((error as { code?: unknown }).code !== '40P01' || attempt === 5) throw error;
      }
    }
  };
  for (const table of tables) {
    await again(`ALTER TABLE ${table} DETACH PARTITION ${table}_p${dayOf(0)}`);
    await again(`DROP TABLE ${table}_p${dayOf(0)}`);
  }
}

/** sql/008's lock, which every maker of days takes (the maintainer, a write that found its day missing, purge). */
const MAKERS_LOCK = ADVISORY_LOCKS.dayMakers;

/**
 * Runs `work` while every maker of days waits: a day dropped meanwhile stays missing until `work` is done, so what
 * it sees of the gap (a 503, the attention page) is not raced by the maintainer's check (MISSING_DAY_CHECK_MS).
 */
async function whileMakersWait<T>(work: () => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MAKERS_LOCK]);
    return await work();
  } finally {
    await client.end();
  }
}

let db: TestDatabase;
const oldOrder = uniqueId('HOLD');
const midOrder = uniqueId('HMID');
const newOrder = uniqueId('HNEW');

beforeAll(async () => {
  db = testDatabase();
  const first = await startTestService({ database: db, env: { RELAY_ENABLED: 'false' } });
  try {
    for (const orderId of [oldOrder, midOrder, newOrder]) {
      expect((await first.post(orderBody({ orderId, status: 'PENDING' }))).status).toBe(200);
      expect((await first.post(orderBody({ orderId, status: 'COMPLETED' }))).status).toBe(200);
    }
  } finally {
    await first.stop();
  }
  await backdateHistory(db.url, [oldOrder], 20);
  await backdateHistory(db.url, [midOrder], 6);
}, 60_000);
afterAll(() => db.drop());

describe('history kept by the service itself', () => {
  it('When the service starts, then the days from yesterday to a week ahead exist, and the active maintainer says so', async () => {
    const svc = await startTestService({ database: db, env: { RELAY_ENABLED: 'false' } });
    try {
      await waitUntil(
        'a maintenance round',
        async () => (await metric(svc, 'history_maintenance_rounds_total{result="ok"}')) >= 1,
      );
      const days = await historyDays(db.url);
      for (let ahead = -1; ahead <= 7; ahead++) expect(days.notifications).toContain(dayOf(-ahead));
      expect(await metric(svc, 'history_partition_days_ahead')).toBe(7);
      expect(await metric(svc, 'history_maintainer_active')).toBe(1);
    } finally {
      await svc.stop();
    }
  });

  it('When two replicas run, then one of them maintains history', async () => {
    const [a, b] = await Promise.all([
      startTestService({ database: db, env: { RELAY_ENABLED: 'false' } }),
      startTestService({ database: db, env: { RELAY_ENABLED: 'false' } }),
    ]);
    try {
      await waitUntil(
        'one active maintainer',
        async () =>
          (await metric(a, 'history_maintainer_active')) + (await metric(b, 'history_maintainer_active')) === 1,
      );
      // Both replicas have a session on the lock, the standby trying it again and again; one session holds it.
      const [sessions] = await query<{ trying: number; holding: number }>(
        db.url,
        `SELECT (SELECT count(*)::int FROM pg_stat_activity
                  WHERE datname = current_database() AND application_name = 'payment-notification-receiver:history') AS trying,
                (SELECT count(*)::int FROM pg_locks
                  WHERE locktype = 'advisory' AND objid::bigint = $1 AND granted
                    AND database = (SELECT oid FROM pg_database WHERE datname = current_database())) AS holding`,
        [HISTORY_MAINTAINER_LOCK],
      );
      expect(sessions?.trying).toBeGreaterThanOrEqual(2);
      expect(sessions?.holding).toBe(1);
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
  });

  it('When BODY_RETENTION and HISTORY_RETENTION are set, then the service purges the bodies of older days and removes older days, and keeps the projections', async () => {
    const svc = await startTestService({
      database: db,
      env: { RELAY_ENABLED: 'false', BODY_RETENTION: '3d', HISTORY_RETENTION: '10d' },
    });
    try {
      await waitUntil('days removed', async () => (await metric(svc, 'history_days_removed_total')) > 0);
      const days = await historyDays(db.url);
      expect((days.notifications ?? []).every((d) => d >= dayOf(11))).toBe(true);
      const bodies = await query<{ order_id: string; purged: boolean }>(
        db.url,
        'SELECT order_id, body IS NULL AS purged FROM notifications WHERE order_id = ANY($1) ORDER BY order_id, id',
        [[oldOrder, midOrder, newOrder]],
      );
      expect(bodies.filter((b) => b.order_id === oldOrder)).toEqual([]);
      expect(bodies.filter((b) => b.order_id === midOrder).map((b) => b.purged)).toEqual([true, true]);
      expect(bodies.filter((b) => b.order_id === newOrder).map((b) => b.purged)).toEqual([false, false]);
      expect(await metric(svc, 'history_bodies_purged_total')).toBe(2);
      const projections = await query<{ order_id: string; status: string }>(
        db.url,
        'SELECT order_id, status FROM orders WHERE order_id = ANY($1) ORDER BY order_id',
        [[oldOrder, midOrder, newOrder]],
      );
      expect(projections.map((p) => p.status)).toEqual(['COMPLETED', 'COMPLETED', 'COMPLETED']);
    } finally {
      await svc.stop();
    }
  });

  it('When a conflicting notification is sent again after retention removed its day, then it is a conflict again, counted as observed by a replay', async () => {
    const own = testDatabase();
    const orderId = uniqueId('HREPLAY');
    const completed = orderBody({ orderId, status: 'COMPLETED' });
    try {
      const first = await startTestService({ database: own, env: { RELAY_ENABLED: 'false' } });
      try {
        await first.post(orderBody({ orderId, status: 'CANCELED' })).expect(200);
        expect((await first.post(completed).expect(200)).body.outcome).toBe('conflict');
      } finally {
        await first.stop();
      }
      await backdateHistory(own.url, [orderId], 20);
      const svc = await startTestService({ database: own, env: { RELAY_ENABLED: 'false', HISTORY_RETENTION: '10d' } });
      try {
        await waitUntil('days removed', async () => (await metric(svc, 'history_days_removed_total')) > 0);
        expect((await svc.post(completed).expect(200)).body.outcome).toBe('conflict');
        const text = (await svc.admin.get('/metrics').expect(200)).text;
        const series = (source: string) =>
          `payment_status_conflicts_total{kind="order",status="COMPLETED",kept_status="CANCELED",source="${source}"}`;
        expect(text).toContain(`${series('replay')} 1\n`);
        expect(text).toContain(`${series('notification')} 0\n`);
      } finally {
        await svc.stop();
      }
    } finally {
      await own.drop();
    }
  });

  it("When a day's partition is missing, then the gauge says so, a notification gets 503 with Retry-After, and its retry 200 once the write had the day made", async () => {
    const svc = await startTestService({ database: db, env: { RELAY_ENABLED: 'false' } });
    try {
      await waitUntil(
        'a maintenance round',
        async () => (await metric(svc, 'history_maintenance_rounds_total{result="ok"}')) >= 1,
      );
      const body = orderBody({ orderId: uniqueId('HGAP'), status: 'PENDING' });
      await whileMakersWait(async () => {
        await dropToday(['deliveries']);
        expect(await metric(svc, 'history_partition_days_ahead')).toBe(-1);
        const refused = await svc.post(body);
        expect(refused.status).toBe(503);
        expect(refused.headers['retry-after']).toBeDefined();
      });
      // Nothing made by hand, no restart: the write that failed had the missing days made.
      const retried = await waitUntil('a retry answered 200', async () => {
        const answer = await svc.post(body);
        return answer.status === 200 && answer;
      });
      expect(retried.body.outcome).toBe('accepted');
      expect(await metric(svc, 'history_partition_days_ahead')).toBe(7);
      expect(await metric(svc, 'history_missing_partition_writes_total')).toBeGreaterThanOrEqual(1);
      // The active maintainer's round, woken by the same failed write, may make the days first: the retry then succeeds
      // before the write's own making has finished and said so.
      await waitUntil('the making of the missing days logged', () =>
        svc.logs.some((l) => l.includes('missing days of history made')),
      );
    } finally {
      await svc.stop();
    }
  });

  it("When today's partitions are dropped under load, then 200s resume within a minute with no restart, and every notification answered 200 is recorded", async () => {
    const clock = new DrivenClock();
    const svc = await startTestService({ database: db, env: { RELAY_ENABLED: 'false' }, clock });
    const answered: string[] = [];
    const answeredBefore: string[] = [];
    let dropped = false;
    let stop = false;
    // Four senders, each posting new orders one after another until told to stop.
    const sender = async (): Promise<void> => {
      while (!stop) {
        const orderId = uniqueId('HLOAD');
        // What was recorded before the drop went with it: only what is sent after it counts.
        const afterDrop = dropped;
        const answer = await svc.post(orderBody({ orderId, status: 'PENDING' }));
        if (answer.status === 200) (afterDrop ? answered : answeredBefore).push(orderId);
        else if (answer.status !== 503) throw new Error(`unexpected ${answer.status}`);
      }
    };
    const senders = Array.from({ length: 4 }, () => sender());
    try {
      await waitUntil('load under way', () => answeredBefore.length >= 20);
      await dropToday(['notifications', 'notification_variants', 'deliveries']);
      dropped = true;
      await waitUntil('a write that found its day missing', async () => {
        return (await metric(svc, 'history_missing_partition_writes_total')) >= 1;
      });
      // Bounded by the requirement: 200s again within a minute of the first write that found its day missing.
      // A second of the maintainer's clock at each look: a write that finds its day missing again (a table dropped
      // after the first making) starts another making MISSING_DAY_GAP_MS (5 s) after the last.
      const before = answered.length;
      await waitUntil(
        '200s again',
        () => {
          clock.advance(1000);
          return answered.length > before + 20;
        },
        60_000,
      );
    } finally {
      stop = true;
      await Promise.all(senders);
    }
    try {
      const recorded = await query<{ order_id: string }>(
        db.url,
        `SELECT DISTINCT n.order_id FROM notifications n JOIN deliveries d ON d.notification_id = n.id
          WHERE n.order_id = ANY($1)`,
        [answered],
      );
      expect(recorded.length).toBe(new Set(answered).size);
      expect(await metric(svc, 'history_partition_days_ahead')).toBe(7);
    } finally {
      await svc.stop();
    }
  }, 120_000);

  it('When a standby replica finds its day missing, then it has the day made itself', async () => {
    const [a, b] = await Promise.all([
      startTestService({ database: db, env: { RELAY_ENABLED: 'false' } }),
      startTestService({ database: db, env: { RELAY_ENABLED: 'false' } }),
    ]);
    try {
      const standby = await waitUntil('one active maintainer', async () => {
        const [activeA, activeB] = [
          await metric(a, 'history_maintainer_active'),
          await metric(b, 'history_maintainer_active'),
        ];
        return activeA + activeB === 1 && (activeA === 0 ? a : b);
      });
      const body = orderBody({ orderId: uniqueId('HSTBY'), status: 'PENDING' });
      await whileMakersWait(async () => {
        await dropToday(['notifications']);
        expect((await standby.post(body)).status).toBe(503);
      });
      await waitUntil('a retry answered 200', async () => (await standby.post(body)).status === 200);
      expect(await metric(standby, 'history_missing_partition_writes_total')).toBeGreaterThanOrEqual(1);
      expect(await metric(standby, 'history_maintainer_active')).toBe(0);
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
  });

  it("When today's partitions are dropped and nothing arrives, then the service makes them again within a minute, and needs attention says so meanwhile", async () => {
    const clock = new DrivenClock();
    const svc = await startTestService({ database: db, env: { RELAY_ENABLED: 'false' }, clock });
    try {
      await waitUntil(
        'a maintenance round',
        async () => (await metric(svc, 'history_maintenance_rounds_total{result="ok"}')) >= 1,
      );
      await whileMakersWait(async () => {
        await dropToday(['notifications', 'notification_variants', 'deliveries']);
        const attention = await request(svc.adminUrl).get('/console/attention');
        expect(attention.status).toBe(200);
        expect(attention.text).toContain('A day of history is missing');
        expect(attention.text).toContain('Today has no place in the database to record notifications in.');
      });
      // No notification is sent: the maintainer's own check makes the day, every MISSING_DAY_CHECK_MS (10 s) of its
      // clock, which each look moves on by as much.
      await waitUntil(
        'today made again',
        async () => {
          clock.advance(MISSING_DAY_CHECK_MS);
          return (await metric(svc, 'history_partition_days_ahead')) === 7;
        },
        60_000,
        250,
      );
      expect(await metric(svc, 'history_missing_partition_writes_total')).toBe(0);
      expect(svc.logs.some((l) => l.includes('days of history without a partition; making them now'))).toBe(true);
      expect((await request(svc.adminUrl).get('/console/attention')).text).toContain('The days of history are ready');
    } finally {
      await svc.stop();
    }
  }, 90_000);
});
