import type { PurgeReport } from '../../src/cli/commands/purge';
import { query } from '../support/database';
import { contractFetch } from '../support/contracts';
import { startTestService, type TestService } from '../support/service';
import { orderBody, uniqueId } from '../support/signing';
import { cliEnv, parseJson, runCli } from './cliSupport';

let svc: TestService;
let env: Record<string, string>;
const oldOrders = [uniqueId('OLD'), uniqueId('OLD'), uniqueId('OLD')];
const newOrder = uniqueId('NEW');

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

/** Everything purge must keep: projections, statuses, parsed fields, digests, outcomes and deliveries. */
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
  for (const orderId of [...oldOrders, newOrder]) {
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
  // Age everything of the old orders 40 days (the new order stays recent).
  await query(
    svc.database.url,
    `UPDATE notifications SET received_at = now() - interval '40 days' WHERE order_id = ANY($1)`,
    [oldOrders],
  );
  await query(
    svc.database.url,
    `UPDATE notification_variants SET first_received_at = now() - interval '40 days'
      WHERE notification_id IN (SELECT id FROM notifications WHERE order_id = ANY($1))`,
    [oldOrders],
  );
  await query(
    svc.database.url,
    `UPDATE quarantined_notifications SET received_at = now() - interval '40 days' WHERE id = (SELECT min(id) FROM quarantined_notifications)`,
  );
}, 180_000);
afterAll(() => svc.stop());

describe('purge', () => {
  it('When retention is missing or below one day, then it exits 2 and purges nothing', async () => {
    const before = await bodyStates();
    expect((await runCli(['purge'], env)).code).toBe(2);
    expect((await runCli(['purge'], { ...env, RETENTION_DAYS: '0' })).code).toBe(2);
    expect((await runCli(['purge'], { ...env, RETENTION_DAYS: 'a week' })).code).toBe(2);
    expect((await runCli(['purge', '--days', '0'], env)).code).toBe(2);
    expect(await bodyStates()).toEqual(before);
  });

  it('When --dry-run is given, then it counts the old bodies per table and changes nothing', async () => {
    const before = await bodyStates();
    const run = await runCli(['purge', '--days', '30', '--dry-run', '--json'], env);
    expect(run.code).toBe(0);
    const report = parseJson<PurgeReport>(run);
    expect(report).toMatchObject({
      dryRun: true,
      days: 30,
      purged: { notifications: 6, notification_variants: 3, quarantined_notifications: 1 },
      openQuarantinedPurged: 1,
    });
    expect(Date.now() - Date.parse(report.cutoff)).toBeGreaterThan(29.9 * 86_400_000);
    expect(await bodyStates()).toEqual(before);
  });

  it('When run unattended with RETENTION_DAYS from the environment, then old bodies are gone, recent ones and the audit trail stay, and it exits 0', async () => {
    const trail = await auditTrail();
    const run = await runCli(['purge', '--batch-size', '2'], { ...env, RETENTION_DAYS: '30' });
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/Purged raw bodies received before \S+ \(older than 30 day\(s\)\):/);
    expect(run.stdout).toMatch(/notifications +6\n/);
    expect(run.stdout).toMatch(/notification_variants +3\n/);
    expect(run.stdout).toMatch(/quarantined_notifications +1 \(1 still open/);

    const states = await bodyStates();
    const old = (s: BodyState): boolean => oldOrders.some((o) => s.key.startsWith(o));
    expect(states.filter((s) => s.table !== 'quarantined_notifications').every((s) => s.purged === old(s))).toBe(true);
    expect(states.filter((s) => s.table === 'quarantined_notifications').map((s) => s.purged)).toEqual([true, false]);
    expect(states.filter((s) => s.purged)).toHaveLength(10);
    expect(await auditTrail()).toEqual(trail);

    const again = parseJson<PurgeReport>(await runCli(['purge', '--days', '30', '--json'], env));
    expect(again.purged).toEqual({ notifications: 0, notification_variants: 0, quarantined_notifications: 0 });
  });

  it('When the admin API is asked for a purged order, then the projection and history are still there', async () => {
    const [row] = await query<{ status: string }>(svc.database.url, 'SELECT status FROM orders WHERE order_id = $1', [
      oldOrders[1],
    ]);
    expect(row?.status).toBe('COMPLETED');
    const res = await contractFetch(`${svc.adminUrl}/orders/${oldOrders[1]}`, 'admin');
    const body = (await res.json()) as { history: Array<{ status: string; deliveries: number }> };
    expect(body.history.map((h) => [h.status, h.deliveries])).toEqual([
      ['PENDING', 2],
      ['COMPLETED', 1],
    ]);
  });
});
