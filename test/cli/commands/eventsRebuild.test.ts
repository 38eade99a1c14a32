import { randomUUID } from 'node:crypto';
import type { RebuildReport } from '../../../src/recording/eventRebuildPages';
import { createLogger } from '../../../src/observability/logger';
import { createMetrics } from '../../../src/observability/metrics';
import { OutboxRelay } from '../../../src/outbox/outboxRelay';
import { AMQP_URL } from '../../support/broker';
import { query } from '../../support/database';
import { startTestService, type TestService } from '../../support/service';
import { orderBody, refundBody, uniqueId } from '../../support/signing';
import { waitUntil } from '../../support/wait';
import { cliEnv, parseJson, runCli } from '../cliSupport';
import { pendingEvents } from '../../support/outbox';

/**
 * `events rebuild`: events deleted after OUTBOX_RETENTION come back from history with their ids and bodies, in
 * their place in the feed; and the retention sweep that deletes them (src/outbox/outboxRelay.ts).
 */

interface StoredEvent {
  id: string;
  order_id: string;
  sequence: string;
  message: string;
}

let svc: TestService;
let env: Record<string, string>;
const started = new Date(Date.now() - 1000);
const plain = uniqueId('RBA');
const refunded = uniqueId('RBB');
const conflicted = uniqueId('RBC');
const disagreed = uniqueId('RBD');

const events = (where = 'true', values: unknown[] = []): Promise<StoredEvent[]> =>
  query<StoredEvent>(
    svc.database.url,
    `SELECT id, order_id, sequence::text, message FROM outbox_events WHERE ${where} ORDER BY created_at, id`,
    values,
  );

const pending = (): Promise<number> => pendingEvents(svc.database.url);

/** Runs a relay with a retention of a day (the service's stopped) until `done`, and stops it. */
async function sweepUntil(what: string, done: () => Promise<boolean>): Promise<void> {
  await svc.service.relay?.stop();
  const relay = new OutboxRelay({
    databaseUrl: svc.database.url,
    amqpUrl: AMQP_URL,
    exchange: svc.exchange,
    retentionMs: 86_400_000,
    metrics: createMetrics(),
    logger: createLogger('silent'),
  });
  relay.start();
  try {
    await waitUntil(what, done);
  } finally {
    await relay.stop();
  }
}

beforeAll(async () => {
  svc = await startTestService();
  env = cliEnv({ DATABASE_URL: svc.database.url, EVENT_SOURCE: 'urn:payment-notification-receiver' });
  for (const body of [
    orderBody({ orderId: plain, status: 'PENDING' }),
    orderBody({ orderId: plain, status: 'WAITING_FOR_CONFIRMATION' }),
    orderBody({ orderId: plain, status: 'COMPLETED', payMethodType: 'CARD_TOKEN' }),
    orderBody({ orderId: refunded, status: 'COMPLETED' }),
    refundBody({ orderId: refunded, refundId: uniqueId('RBR'), status: 'FINALIZED', extRefundId: 'shop-1' }),
    orderBody({ orderId: refunded, status: 'PENDING' }), // stale: no event
    orderBody({ orderId: conflicted, status: 'COMPLETED' }),
    orderBody({ orderId: conflicted, status: 'CANCELED' }),
    orderBody({ orderId: disagreed, status: 'PENDING' }),
    orderBody({ orderId: disagreed, status: 'COMPLETED', totalAmount: '99900' }),
  ])
    await svc.post(body).expect(200);
  await waitUntil('every event published', async () => (await pending()) === 0);
}, 60_000);
afterAll(() => svc.stop());

describe('events rebuild', () => {
  it('When the outbox lost its events, then they are rebuilt from history with the same ids, bytes and places, and the feed serves them', async () => {
    const original = await events();
    expect(original).toHaveLength(9);
    const feedBefore = ((await svc.admin.get('/events?limit=1000').expect(200)).body as { events: unknown[] }).events;
    await query(svc.database.url, 'DELETE FROM outbox_events');

    const dry = await runCli(['events', 'rebuild', '--since', started.toISOString(), '--dry-run', '--json'], env);
    expect(dry.code).toBe(0);
    expect(parseJson<RebuildReport>(dry)).toMatchObject({ orders: 4, rebuilt: 9, restored: 0 });
    expect(await events()).toEqual([]);

    const run = await runCli(['events', 'rebuild', '--since', started.toISOString(), '--json'], env);
    expect(run.code).toBe(0);
    expect(parseJson<RebuildReport>(run)).toEqual({
      dryRun: false,
      since: started.toISOString(),
      until: expect.any(String),
      orders: 4,
      rebuilt: 9,
      restored: 9,
      incomplete: [],
      unreadable: [],
      lostIds: [],
    });
    // Byte for byte, sequence and disagreements included, in the same order.
    expect(await events()).toEqual(original);
    const disagreement = original.find((e) => e.order_id === disagreed && e.sequence === '2');
    expect(JSON.parse(disagreement?.message ?? '{}')).toMatchObject({
      data: { disagreements: [{ field: 'totalAmount', kept: '15000', received: '99900' }] },
    });
    expect(((await svc.admin.get('/events?limit=1000').expect(200)).body as { events: unknown[] }).events).toEqual(
      feedBefore,
    );
    // Published: the relay does not send them again. Outside its cursor, too: without a transaction id, published
    // by their row (docs/decisions/0023), never read by the relay.
    expect(await pending()).toBe(0);
    expect(await query(svc.database.url, 'SELECT count(*)::int AS n FROM outbox_events WHERE xid IS NOT NULL')).toEqual(
      [{ n: 0 }],
    );

    const again = await runCli(['events', 'rebuild', '--since', started.toISOString(), '--json'], env);
    expect(parseJson<RebuildReport>(again)).toMatchObject({ rebuilt: 9, restored: 0 });
    // It changed the outbox: on the record, as the OS user and host, with what it did (the dry run is not).
    expect(
      await query(
        svc.database.url,
        "SELECT actor, via, target, result FROM console_audit WHERE action = 'events_rebuild' ORDER BY id",
      ),
    ).toEqual(
      [9, 0].map((restored) => ({
        actor: expect.stringMatching(/^\S+@\S+$/),
        via: 'command line',
        target: expect.stringMatching(new RegExp(`^notifications received from ${started.toISOString()} until `)),
        result: `rebuilt 9, restored ${restored}`,
      })),
    );
  });

  it('When only part of the range is asked, then only the events of notifications received in it come back', async () => {
    const [last] = await query<{ at: Date }>(
      svc.database.url,
      `SELECT received_at AS at FROM notifications WHERE order_id = $1 AND status = 'CANCELED'`,
      [conflicted],
    );
    await query(svc.database.url, 'DELETE FROM outbox_events WHERE order_id = $1', [conflicted]);
    const run = await runCli(['events', 'rebuild', '--since', (last as { at: Date }).at.toISOString(), '--json'], env);
    // The conflict, and the events of the order recorded after it (still in the outbox).
    expect(parseJson<RebuildReport>(run)).toMatchObject({ rebuilt: 3, restored: 1 });
    expect((await events('order_id = $1', [conflicted])).map((e) => JSON.parse(e.message).type)).toEqual([
      'order.status_conflict',
    ]);
    const whole = await runCli(['events', 'rebuild', '--since', started.toISOString(), '--json'], env);
    expect(parseJson<RebuildReport>(whole)).toMatchObject({ rebuilt: 9, restored: 1 });
  });

  it('When part of an order’s history is gone, then the order is not rebuilt and the command says so', async () => {
    await query(svc.database.url, 'DELETE FROM outbox_events WHERE order_id = $1', [plain]);
    await query(svc.database.url, `DELETE FROM notifications WHERE order_id = $1 AND status = 'PENDING'`, [plain]);
    const run = await runCli(['events', 'rebuild', '--since', started.toISOString(), '--json'], env);
    expect(run.code).toBe(1);
    expect(parseJson<RebuildReport>(run)).toMatchObject({ incomplete: [plain], restored: 0 });
    expect(await events('order_id = $1', [plain])).toEqual([]);
    const human = await runCli(['events', 'rebuild', '--since', started.toISOString()], env);
    expect(human.stdout).toContain(`part of their history is gone (HISTORY_RETENTION): 1 order(s): ${plain}`);
  });

  it('When the range is reversed or missing, then it is a usage error and nothing changes', async () => {
    expect((await runCli(['events', 'rebuild'], env)).code).toBe(2);
    const reversed = await runCli(['events', 'rebuild', '--since', '1h', '--until', '2h'], env);
    expect(reversed.code).toBe(2);
    expect(reversed.stderr).toContain('--until is not after --since');
  });
});

describe('events written before ids were derived, and the retention sweep', () => {
  it('When the sweep deletes an event of the previous version, then it keeps its id, and a rebuild gives it back; one deleted before the upgrade is reported lost', async () => {
    const [event] = await events(`order_id = $1 AND type = 'order.completed'`, [refunded]);
    const stored = JSON.parse((event as StoredEvent).message) as {
      id: string;
      time: string;
      data: { notificationId: string };
    };
    // As the previous version wrote it: a random id and a time of its own, stored and published two days ago.
    const legacyId = randomUUID();
    const legacyTime = new Date(Date.parse(stored.time) - 5).toISOString();
    const legacyMessage = JSON.stringify({ ...stored, id: legacyId, time: legacyTime });
    await query(
      svc.database.url,
      `UPDATE outbox_events SET id = $2, message = $3, created_at = now() - interval '2 days',
              published_at = now() - interval '2 days' WHERE id = $1`,
      [(event as StoredEvent).id, legacyId, legacyMessage],
    );
    // Stored long ago but published (put back) recently: kept for the retention from its publication.
    const [kept] = await events('order_id = $1 AND sequence = 1', [disagreed]);
    await query(svc.database.url, `UPDATE outbox_events SET created_at = now() - interval '2 days' WHERE id = $1`, [
      (kept as StoredEvent).id,
    ]);

    await sweepUntil('the old event deleted', async () => (await events('id = $1', [legacyId])).length === 0);
    expect(await events('id = $1', [(kept as StoredEvent).id])).toHaveLength(1);
    expect(
      await query(svc.database.url, 'SELECT event_id, event_time FROM legacy_event_ids WHERE notification_id = $1', [
        stored.data.notificationId,
      ]),
    ).toEqual([{ event_id: legacyId, event_time: new Date(legacyTime) }]);

    const run = await runCli(['events', 'rebuild', '--since', started.toISOString(), '--json'], env);
    expect(parseJson<RebuildReport>(run)).toMatchObject({ restored: 1 });
    expect((await events('id = $1', [legacyId]))[0]?.message).toBe(legacyMessage);

    // An event deleted before the upgrade (its notification before the first derived one, not kept): lost.
    await query(svc.database.url, 'DELETE FROM outbox_events WHERE order_id = $1', [conflicted]);
    await query(svc.database.url, 'UPDATE event_id_derivation SET derived_from = 1000000');
    try {
      const lost = await runCli(['events', 'rebuild', '--since', started.toISOString(), '--json'], env);
      expect(lost.code).toBe(1);
      const report = parseJson<RebuildReport>(lost);
      expect(report.lostIds).toHaveLength(2);
      expect(await events('order_id = $1', [conflicted])).toEqual([]);
    } finally {
      await query(svc.database.url, 'UPDATE event_id_derivation SET derived_from = 1');
    }
  });
});
