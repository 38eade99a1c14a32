import os from 'node:os';
import request from 'supertest';
import type { QuarantineEntry, RetryResult } from '../../../src/cli/commands/quarantine';
import { fingerprintKey } from '../../../src/verification/secondKeys';
import { query } from '../../support/database';
import { startTestService, type TestService } from '../../support/service';
import { orderBody, OTHER_POS_ID, POS_ID, SECOND_KEY, uniqueId } from '../../support/signing';
import { quarantineAsOlderVersion, sha256 } from '../../support/quarantine';
import { cliEnv, parseJson, runCli } from '../cliSupport';

let svc: TestService;
let env: Record<string, string>;

const unreadableOrder = uniqueId('QBAD');
const unreadableBody = orderBody({ orderId: unreadableOrder, status: 'PENDING', totalAmount: '150.00' });
const fixedOrder = uniqueId('QFIX');
const fixedBody = orderBody({ orderId: fixedOrder, status: 'COMPLETED', paymentId: '555', payMethodType: 'PBL' });
let unreadableId: string;
let fixedId: string;

beforeAll(async () => {
  svc = await startTestService({ env: { RELAY_ENABLED: 'false' } });
  env = cliEnv({ DATABASE_URL: svc.database.url });
  // Authentic but unreadable: the real service quarantines it.
  expect((await svc.post(unreadableBody)).body.outcome).toBe('quarantined');
  expect((await svc.post(unreadableBody)).body.outcome).toBe('quarantined');
  unreadableId = (
    (await query<{ id: string }>(svc.database.url, 'SELECT id FROM quarantined_notifications'))[0] as { id: string }
  ).id;
  fixedId = await quarantineAsOlderVersion(svc.database.url, fixedBody);
}, 180_000);
afterAll(() => svc.stop());

describe('quarantine', () => {
  it('When listing, then each shows id, received, reason, detail, POS, key, digest and open state, and never the body', async () => {
    const run = await runCli(['quarantine', 'list', '--json'], env);
    expect(run.code).toBe(0);
    const { quarantined } = parseJson<{ quarantined: QuarantineEntry[] }>(run);
    expect(quarantined).toEqual([
      expect.objectContaining({
        id: unreadableId,
        reason: 'invalid_field',
        detail: 'order.totalAmount must be a whole number of minor units',
        posId: POS_ID,
        keyFingerprint: fingerprintKey(SECOND_KEY),
        bodySha256: sha256(unreadableBody).toString('hex'),
        bodyBytes: Buffer.byteLength(unreadableBody),
        deliveries: 2,
        resolved: false,
        receivedAt: expect.any(String),
      }),
      expect.objectContaining({ id: fixedId, resolved: false, deliveries: 1 }),
    ]);
    const human = await runCli(['quarantine', 'list'], env);
    expect(human.stdout).toMatch(
      new RegExp(
        `^${unreadableId} +\\S+ +invalid_field +${POS_ID} +${fingerprintKey(SECOND_KEY)} +[0-9a-f]{16} \\d+ B +2 +OPEN +order\\.totalAmount`,
        'm',
      ),
    );
    for (const output of [run.stdout, human.stdout]) {
      expect(output).not.toContain(unreadableOrder);
      expect(output).not.toContain('150.00');
    }
  });

  it('When a quarantined body now parses, then retry records it like a live delivery and resolves the row', async () => {
    const run = await runCli(['quarantine', 'retry', fixedId, '--json'], env);
    expect(run.code).toBe(0);
    const { results } = parseJson<{ results: RetryResult[] }>(run);
    expect(results).toEqual([
      {
        id: fixedId,
        result: 'recorded',
        orderId: fixedOrder,
        outcome: 'accepted',
        notificationId: expect.any(String),
        eventsWritten: 1,
      },
    ]);

    const [order] = await query(
      svc.database.url,
      'SELECT status, payment_id, pay_method_type, merchant_pos_id FROM orders WHERE order_id = $1',
      [fixedOrder],
    );
    expect(order).toEqual({ status: 'COMPLETED', payment_id: '555', pay_method_type: 'PBL', merchant_pos_id: POS_ID });
    const [notification] = await query<{ id: string; body: Buffer; pos_id: string }>(
      svc.database.url,
      'SELECT id, body, pos_id FROM notifications WHERE order_id = $1',
      [fixedOrder],
    );
    expect(notification?.body.toString()).toBe(fixedBody);
    const deliveries = await query(
      svc.database.url,
      'SELECT source_address, processing_time_ms, outcome FROM deliveries WHERE notification_id = $1',
      [notification?.id],
    );
    expect(deliveries).toEqual([{ source_address: '185.68.12.10', processing_time_ms: 321, outcome: 'accepted' }]);
    const events = await query(svc.database.url, 'SELECT type FROM outbox_events WHERE order_id = $1', [fixedOrder]);
    expect(events).toEqual([{ type: 'order.completed' }]);
    const [row] = await query<{ resolved_at: Date | null; resolution: string }>(
      svc.database.url,
      'SELECT resolved_at, resolution FROM quarantined_notifications WHERE id = $1',
      [fixedId],
    );
    expect(row?.resolved_at).not.toBeNull();
    expect(row?.resolution).toBe(`reprocessed: accepted as notification ${notification?.id}`);
    // The command line's action is in the audit trail, by the OS user and host, and on the order's page.
    expect(
      await query(
        svc.database.url,
        'SELECT actor, role, via, action, target, result FROM console_audit WHERE order_id = $1',
        [fixedOrder],
      ),
    ).toEqual([
      {
        actor: `${os.userInfo().username}@${os.hostname()}`,
        role: null,
        via: 'command line',
        action: 'quarantine_retry',
        target: `quarantine #${fixedId}`,
        result: 'recorded',
      },
    ]);
    const page = await request(svc.adminUrl).get(`/console/orders/${fixedOrder}`);
    expect(page.text).toContain(`${os.userInfo().username}@${os.hostname()}`);
    expect(page.text).toContain('command line');
  });

  it('When a body still does not parse, then retry --all says why, leaves it open, skips the resolved one and exits 1', async () => {
    const run = await runCli(['quarantine', 'retry', '--all'], env);
    expect(run.code).toBe(1);
    expect(run.stdout).toContain(
      `#${unreadableId}: still unreadable (invalid_field: order.totalAmount must be a whole number of minor units); left open`,
    );
    expect(run.stdout).not.toContain(`#${fixedId}:`);
    const rows = await query<{ id: string; resolved_at: Date | null }>(
      svc.database.url,
      'SELECT id, resolved_at FROM quarantined_notifications ORDER BY id',
    );
    expect(rows.map((r) => [r.id, r.resolved_at === null])).toEqual([
      [unreadableId, true],
      [fixedId, false],
    ]);
    expect(await query(svc.database.url, 'SELECT 1 FROM orders WHERE order_id = $1', [unreadableOrder])).toEqual([]);
  });

  it('When a now-readable body names another POS than the key that verified it, then it is left open as pos_mismatch and nothing is recorded', async () => {
    const orderId = uniqueId('QPOS');
    const id = await quarantineAsOlderVersion(
      svc.database.url,
      orderBody({ orderId, status: 'PENDING', merchantPosId: OTHER_POS_ID }),
    );
    const run = await runCli(['quarantine', 'retry', id, '--json'], env);
    expect(run.code).toBe(1);
    expect(parseJson<{ results: RetryResult[] }>(run).results).toEqual([
      expect.objectContaining({ id, result: 'pos_mismatch' }),
    ]);
    expect(await query(svc.database.url, 'SELECT 1 FROM notifications WHERE order_id = $1', [orderId])).toEqual([]);
  });

  it('When recording fails halfway, then the transaction leaves neither a notification nor a resolved row behind', async () => {
    // A fault injected into this test's own database: the delivery insert (the last step of recording) fails.
    await query(
      svc.database.url,
      `CREATE FUNCTION fail_delivery() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN IF NEW.source_address = '185.68.12.99' AND NEW.outcome <> 'quarantined' THEN RAISE EXCEPTION 'injected failure'; END IF; RETURN NEW; END $$`,
    );
    await query(
      svc.database.url,
      'CREATE TRIGGER fail_delivery BEFORE INSERT ON deliveries FOR EACH ROW EXECUTE FUNCTION fail_delivery()',
    );
    try {
      const orderId = uniqueId('QATOM');
      const id = await quarantineAsOlderVersion(
        svc.database.url,
        orderBody({ orderId, status: 'PENDING' }),
        POS_ID,
        '185.68.12.99',
      );
      const run = await runCli(['quarantine', 'retry', id, '--json'], env);
      expect(run.code).toBe(1);
      expect(parseJson<{ results: RetryResult[] }>(run).results).toEqual([
        { id, result: 'failed', detail: expect.stringContaining('injected failure') },
      ]);
      expect(await query(svc.database.url, 'SELECT 1 FROM notifications WHERE order_id = $1', [orderId])).toEqual([]);
      expect(await query(svc.database.url, 'SELECT 1 FROM orders WHERE order_id = $1', [orderId])).toEqual([]);
      expect(await query(svc.database.url, 'SELECT 1 FROM outbox_events WHERE order_id = $1', [orderId])).toEqual([]);
      expect(
        await query(svc.database.url, 'SELECT resolved_at FROM quarantined_notifications WHERE id = $1', [id]),
      ).toEqual([{ resolved_at: null }]);
    } finally {
      await query(svc.database.url, 'DROP TRIGGER fail_delivery ON deliveries');
      await query(svc.database.url, 'DROP FUNCTION fail_delivery()');
    }
  });

  it('When the id does not exist or is already resolved, then retry reports it; an unknown id makes the exit code 1', async () => {
    const resolved = await runCli(['quarantine', 'retry', fixedId, '--json'], env);
    expect(resolved.code).toBe(0);
    expect(parseJson<{ results: RetryResult[] }>(resolved).results).toEqual([
      expect.objectContaining({ result: 'already_resolved' }),
    ]);
    const missing = await runCli(['quarantine', 'retry', '999999', '--json'], env);
    expect(missing.code).toBe(1);
    expect(parseJson<{ results: RetryResult[] }>(missing).results).toEqual([
      expect.objectContaining({ result: 'not_found' }),
    ]);
  });

  it('When --open is given, then only unresolved ones are listed', async () => {
    const { quarantined } = parseJson<{ quarantined: QuarantineEntry[] }>(
      await runCli(['quarantine', 'list', '--open', '--json'], env),
    );
    expect(quarantined.map((q) => q.id)).not.toContain(fixedId);
    expect(quarantined.map((q) => q.id)).toContain(unreadableId);
  });
});
