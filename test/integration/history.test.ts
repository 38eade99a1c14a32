import { query, testDatabase, type TestDatabase } from '../support/database';
import { backdateHistory, historyDays } from '../support/history';
import { startTestService, type TestService } from '../support/service';
import { orderBody, uniqueId } from '../support/signing';
import { sleep, waitUntil } from '../support/wait';

// The service keeps history by the day itself (src/history/): the days ahead are made, raw bodies go after
// BODY_RETENTION and whole days after HISTORY_RETENTION, by one maintainer across replicas.

const dayOf = (daysAgo: number): string =>
  new Date(Date.now() - daysAgo * 86_400_000).toISOString().slice(0, 10).replaceAll('-', '');

async function metric(svc: TestService, name: string): Promise<number> {
  const text = (await svc.admin.get('/metrics').expect(200)).text;
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? Number.NaN : Number(line.split(' ')[1]);
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
      // A while later still one, not a turn each.
      await sleep(1000);
      expect((await metric(a, 'history_maintainer_active')) + (await metric(b, 'history_maintainer_active'))).toBe(1);
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

  it("When a day's partition is missing, then a notification gets 503 with Retry-After, and once the day is made, its retry 200", async () => {
    const svc = await startTestService({ database: db, env: { RELAY_ENABLED: 'false' } });
    try {
      await waitUntil(
        'a maintenance round',
        async () => (await metric(svc, 'history_maintenance_rounds_total{result="ok"}')) >= 1,
      );
      const today = `deliveries_p${dayOf(0)}`;
      await query(db.url, `ALTER TABLE deliveries DETACH PARTITION ${today}`);
      await query(db.url, `DROP TABLE ${today}`);
      const body = orderBody({ orderId: uniqueId('HGAP'), status: 'PENDING' });
      const refused = await svc.post(body);
      expect(refused.status).toBe(503);
      expect(refused.headers['retry-after']).toBeDefined();
      await query(
        db.url,
        `SELECT history_partitions_ensure((now() AT TIME ZONE 'UTC')::date, (now() AT TIME ZONE 'UTC')::date)`,
      );
      const retried = await svc.post(body);
      expect(retried.status).toBe(200);
      expect(retried.body.outcome).toBe('accepted');
    } finally {
      await svc.stop();
    }
  });
});
