import { spawn } from 'node:child_process';
import path from 'node:path';
import type { PurgeReport } from '../../../src/cli/commands/purge';
import { query } from '../../support/database';
import { contractFetch } from '../../support/contracts';
import { backdateHistory, historyDays } from '../../support/history';
import { startTestService, type TestService } from '../../support/service';
import { orderBody, uniqueId } from '../../support/signing';
import { cliEnv, parseJson, ROOT, runCli } from '../cliSupport';

let svc: TestService;
let env: Record<string, string>;
const oldOrders = [uniqueId('OLD'), uniqueId('OLD'), uniqueId('OLD')];
const olderOrder = uniqueId('OLDER');
const newOrder = uniqueId('NEW');
/** The day (YYYYMMDD, UTC) some days ago. */
const day = (daysAgo: number): string =>
  new Date(Date.now() - daysAgo * 86_400_000).toISOString().slice(0, 10).replaceAll('-', '');
/** YYYYMMDD as the reports write a day, YYYY-MM-DD. */
const iso = (d: string): string => `${d.slice(0, 4)}-${d.slice(4, 6)}-${d.slice(6)}`;
/** The days with a notifications partition wholly older than `daysAgo` days. */
const daysBefore = async (daysAgo: number): Promise<string[]> =>
  ((await historyDays(svc.database.url)).notifications ?? []).filter((d) => d < day(daysAgo)).map(iso);

interface BodyState {
  table: string;
  key: string;
  purged: boolean;
}

async function bodyStates(): Promise<BodyState[]> {
  return query<BodyState>(
    svc.database.url,
    `SELECT 'notifications' AS table, order_id || ' ' || status AS key, body IS NULL AS purged FROM notifications
     UNION ALL SELECT 'notification_variants', n.order_id || ' ' || n.status, v.body IS NULL FROM notification_variants v JOIN notifications n ON n.id = v.notification_id
     UNION ALL SELECT 'quarantined_notifications', id::text, body IS NULL FROM quarantined_notifications
     ORDER BY 1, 2`,
  );
}

/** Everything a body purge must keep: projections, statuses, parsed fields, digests, outcomes and deliveries. */
async function auditTrail(): Promise<unknown[]> {
  return [
    await query(svc.database.url, 'SELECT * FROM orders ORDER BY order_id'),
    await query(
      svc.database.url,
      'SELECT id, kind, subject_id, status, outcome, pos_id, key_fingerprint, body_sha256, parsed, received_at FROM notifications ORDER BY id',
    ),
    await query(svc.database.url, 'SELECT * FROM deliveries ORDER BY id'),
    await query(
      svc.database.url,
      'SELECT id, reason, detail, body_sha256, resolved_at FROM quarantined_notifications ORDER BY id',
    ),
  ];
}

beforeAll(async () => {
  svc = await startTestService({ env: { RELAY_ENABLED: 'false' } });
  env = cliEnv({ DATABASE_URL: svc.database.url });
  for (const orderId of [...oldOrders, olderOrder, newOrder]) {
    const pending = orderBody({ orderId, status: 'PENDING' });
    expect((await svc.post(pending)).status).toBe(200);
    // A variant: the same meaning in other bytes.
    expect((await svc.post(JSON.stringify({ ...JSON.parse(pending), extra: 1 }))).body.outcome).toBe('duplicate');
    const completed = orderBody({
      orderId,
      status: 'COMPLETED',
      payMethodType: 'PBL',
      buyer: { email: `${orderId.toLowerCase()}@example.com`, firstName: 'Jan' },
    });
    expect((await svc.post(completed)).status).toBe(200);
  }
  for (const orderId of [oldOrders[0] as string, newOrder]) {
    expect(
      (await svc.post(orderBody({ orderId: `${orderId}Q`, status: 'PENDING', totalAmount: '1.5' }))).body.outcome,
    ).toBe('quarantined');
  }
  // The old orders' history is 40 days old, the older order's 100 days; the new order's stays today's.
  await backdateHistory(svc.database.url, oldOrders, 40);
  await backdateHistory(svc.database.url, [olderOrder], 100);
  await query(
    svc.database.url,
    `UPDATE quarantined_notifications SET received_at = now() - interval '40 days' WHERE id = (SELECT min(id) FROM quarantined_notifications)`,
  );
}, 180_000);
afterAll(() => svc.stop());

describe('purge', () => {
  it('When no retention is given, or one below its minimum, then it exits 2 naming the option and changes nothing', async () => {
    const before = [await bodyStates(), await historyDays(svc.database.url)];
    expect((await runCli(['purge'], env)).code).toBe(2);
    expect((await runCli(['purge', '--days', '0'], env)).code).toBe(2);
    const short = await runCli(['purge', '--history-days', '2'], env);
    expect(short.code).toBe(2);
    expect(short.stderr).toMatch(/--history-days.*from 3/);
    expect((await runCli(['purge', '--history-days', 'a week'], env)).code).toBe(2);
    expect([await bodyStates(), await historyDays(svc.database.url)]).toEqual(before);
  });

  it('When --dry-run is given, then it counts the bodies of the old days and changes nothing', async () => {
    const before = await bodyStates();
    const run = await runCli(['purge', '--days', '30', '--dry-run', '--json'], env);
    expect(run.code).toBe(0);
    const report = parseJson<PurgeReport>(run);
    expect(report.bodies).toMatchObject({
      days: 30,
      purgedDays: await daysBefore(30),
      bodies: { notifications: 8, notification_variants: 4, quarantined_notifications: 1 },
      openQuarantined: 1,
    });
    expect(report.history).toBeNull();
    expect(Date.now() - Date.parse(report.bodies?.cutoff ?? '')).toBeGreaterThan(29.9 * 86_400_000);
    expect(await bodyStates()).toEqual(before);
  });

  it('When bodies are purged, then those of the old days are gone, recent ones and the audit trail stay, and a second purge has no day to read', async () => {
    const trail = await auditTrail();
    const run = await runCli(['purge', '--days', '30'], env);
    expect(run.code).toBe(0);
    const days = (await daysBefore(30)).length;
    expect(days).toBeGreaterThanOrEqual(2);
    expect(run.stdout).toContain(`Purged raw bodies of ${days} day(s) wholly before `);
    expect(run.stdout).toContain('(older than 30 day(s)):');
    expect(run.stdout).toMatch(/notifications +8\n/);
    expect(run.stdout).toMatch(/notification_variants +4\n/);
    expect(run.stdout).toMatch(/quarantined_notifications +1 \(1 still open/);

    const states = await bodyStates();
    const old = (s: BodyState): boolean => [...oldOrders, olderOrder].some((o) => s.key.startsWith(o));
    expect(states.filter((s) => s.table !== 'quarantined_notifications').every((s) => s.purged === old(s))).toBe(true);
    expect(states.filter((s) => s.table === 'quarantined_notifications').map((s) => s.purged)).toEqual([true, false]);
    expect(states.filter((s) => s.purged)).toHaveLength(13);
    expect(await auditTrail()).toEqual(trail);

    const again = parseJson<PurgeReport>(await runCli(['purge', '--days', '30', '--json'], env));
    expect(again.bodies?.purgedDays).toEqual([]);
    expect(again.bodies?.bodies).toEqual({ notifications: 0, notification_variants: 0, quarantined_notifications: 0 });
  });

  it('When the admin API is asked for a purged order, then the projection and history are still there', async () => {
    const res = await contractFetch(`${svc.adminUrl}/orders/${oldOrders[1]}`, 'admin');
    const body = (await res.json()) as { status: string; history: Array<{ status: string; deliveries: number }> };
    expect(body.status).toBe('COMPLETED');
    expect(body.history.map((h) => [h.status, h.deliveries])).toEqual([
      ['PENDING', 2],
      ['COMPLETED', 1],
    ]);
  });

  it('When history is removed past 60 days, then only the older day goes, whole, and the projections stay', async () => {
    const before = await historyDays(svc.database.url);
    expect(before.notifications).toEqual(expect.arrayContaining([day(100), day(40), day(0)]));
    const dry = parseJson<PurgeReport>(await runCli(['purge', '--history-days', '60', '--dry-run', '--json'], env));
    expect(dry.history?.removedDays).toEqual(await daysBefore(60));
    expect(dry.history?.removedDays).toContain(iso(day(100)));
    expect(dry.history?.removedDays).not.toContain(iso(day(40)));
    expect(await historyDays(svc.database.url)).toEqual(before);

    const run = await runCli(['purge', '--history-days', '60', '--json'], env);
    expect(run.code).toBe(0);
    const report = parseJson<PurgeReport>(run);
    expect(report.history?.removedDays).toEqual(dry.history?.removedDays);
    const after = await historyDays(svc.database.url);
    for (const table of ['notifications', 'notification_variants', 'deliveries'])
      expect(after[table]).toEqual((before[table] ?? []).filter((d) => !dry.history?.removedDays.includes(iso(d))));
    const left = await query<{ order_id: string }>(
      svc.database.url,
      'SELECT DISTINCT order_id FROM notifications WHERE order_id = ANY($1)',
      [[...oldOrders, olderOrder]],
    );
    expect(left.map((r) => r.order_id).sort()).toEqual([...oldOrders].sort());
    const [projection] = await query<{ status: string }>(
      svc.database.url,
      'SELECT status FROM orders WHERE order_id = $1',
      [olderOrder],
    );
    expect(projection?.status).toBe('COMPLETED');
  });

  it("When today's partitions are missing, then purge makes them, and so does npm run migrate", async () => {
    const url = svc.database.url;
    const dropToday = async (): Promise<void> => {
      for (const table of ['notifications', 'notification_variants', 'deliveries']) {
        await query(url, `ALTER TABLE ${table} DETACH PARTITION ${table}_p${day(0)}`);
        await query(url, `DROP TABLE ${table}_p${day(0)}`);
      }
    };
    const today = async (): Promise<boolean[]> =>
      Object.values(await historyDays(url)).map((days) => days.includes(day(0)));

    // The service's own maintainer would make the missing day within seconds (MISSING_DAY_CHECK_MS): paused, so
    // that what is seen here is purge's and migrate's doing alone.
    await svc.service.historyMaintainer.stop();
    await dropToday();
    expect(await today()).toEqual([false, false, false]);
    const dry = parseJson<PurgeReport>(await runCli(['purge', '--days', '30', '--dry-run', '--json'], env));
    expect(dry.daysMade).toBeNull();
    expect(await today()).toEqual([false, false, false]);
    const run = await runCli(['purge', '--days', '30'], env);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('Made 3 missing day partition(s), from yesterday to a week ahead.');
    expect(await today()).toEqual([true, true, true]);

    await dropToday();
    const migrate = await new Promise<{ code: number | null; stdout: string }>((resolve, reject) => {
      const child = spawn(process.execPath, [path.join(ROOT, 'dist', 'cli', 'migrate.js')], {
        cwd: ROOT,
        env: cliEnv({ DATABASE_URL: url }),
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      let stdout = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
      child.once('error', reject);
      child.once('exit', (code) => resolve({ code, stdout }));
    });
    expect(migrate.code).toBe(0);
    expect(migrate.stdout).toContain('"daysMade":3');
    expect(await today()).toEqual([true, true, true]);
    svc.service.historyMaintainer.start();
  });

  it('When a notification of an order whose history was removed arrives, then it is answered 200, recorded again, and the final projection stays', async () => {
    // A service that has not seen the order: a real one's cache never answers for a notification 72 hours old.
    const later = await startTestService({ database: svc.database, env: { RELAY_ENABLED: 'false' } });
    try {
      const pending = orderBody({ orderId: olderOrder, status: 'PENDING' });
      const res = await later.post(pending);
      expect(res.status).toBe(200);
      expect(res.body.outcome).toBe('stale');
      expect((await later.post(pending)).body.outcome).toBe('duplicate');
      const admin = await contractFetch(`${later.adminUrl}/orders/${olderOrder}`, 'admin');
      const body = (await admin.json()) as {
        status: string;
        history: Array<{ status: string; outcome: string; deliveries: number }>;
      };
      expect(body.status).toBe('COMPLETED');
      expect(body.history.map((h) => [h.status, h.outcome, h.deliveries])).toEqual([['PENDING', 'stale', 2]]);
    } finally {
      await later.stop();
    }
  });
});
