import { createHash, randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import pg from 'pg';
import { migrate } from '../../../src/database/migrations';
import { createLogger } from '../../../src/observability/logger';
import { parseNotification } from '../../../src/parsing/parseNotification';
import { migrationsBefore, query, testDatabase, type TestDatabase } from '../../support/database';
import { historyDays } from '../../support/history';
import { startTestService } from '../../support/service';
import { fingerprintKey } from '../../../src/verification/secondKeys';
import { orderBody, POS_ID, refundBody, SECOND_KEY, uniqueId } from '../../support/signing';
import { ensureDatabaseExists } from '../../../src/database/pool';

// sql/007 turns the history tables into day partitions and moves what dedup needs to the projections. A database
// written by the versions before it, with history over several days, is migrated by `npm run migrate` (the same
// migrate()), and nothing is lost: every row is still there, in its day, and the service then treats repeats of
// what was recorded before as duplicates.

const sha256 = (bytes: Buffer): Buffer => createHash('sha256').update(bytes).digest();
const silent = createLogger('silent');
let db: TestDatabase;

interface Recorded {
  orderId: string;
  body: string;
  notificationId: string;
}

/** Writes a notification, its projection and its deliveries as the recorder before sql/007 did. */
async function recordAsBefore(
  kind: 'order' | 'refund',
  body: string,
  daysAgo: number,
  deliveries: number,
  outcome: 'applied' | 'stale' = 'applied',
): Promise<Recorded> {
  const bytes = Buffer.from(body);
  const parsed = parseNotification(bytes);
  if (!parsed.ok) throw new Error(`test body does not parse: ${parsed.detail}`);
  const n = parsed.notification;
  const subject = n.kind === 'order' ? n.orderId : n.refundId;
  const at = `now() - interval '${daysAgo} days'`;
  const [row] = await query<{ id: string }>(
    db.url,
    `INSERT INTO notifications (kind, subject_id, status, order_id, outcome, pos_id, key_fingerprint, body, body_sha256,
                                parsed, received_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, ${at}) RETURNING id::text AS id`,
    [kind, subject, n.status, n.orderId, outcome, POS_ID, fingerprintKey(SECOND_KEY), bytes, sha256(bytes), n],
  );
  const id = (row as { id: string }).id;
  for (let i = 0; i < deliveries; i++)
    await query(
      db.url,
      `INSERT INTO deliveries (received_at, source_address, pos_id, key_fingerprint, body_sha256, outcome, notification_id)
       VALUES (${at} + interval '${i} minutes', '185.68.12.10', $1, $2, $3, $4, $5)`,
      [POS_ID, fingerprintKey(SECOND_KEY), sha256(bytes), i === 0 ? 'accepted' : 'duplicate', id],
    );
  if (outcome === 'applied' && n.kind === 'order')
    await query(
      db.url,
      `INSERT INTO orders (order_id, merchant_pos_id, status, status_rank, total_amount, currency_code, updated_at)
       VALUES ($1, $2, $3, $4, $5, 'PLN', ${at})
       ON CONFLICT (order_id) DO UPDATE SET status = excluded.status, status_rank = excluded.status_rank`,
      [n.orderId, POS_ID, n.status, n.status === 'COMPLETED' ? 3 : 1, n.totalAmount],
    );
  if (outcome === 'applied' && n.kind === 'refund')
    await query(
      db.url,
      `INSERT INTO refunds (refund_id, order_id, status, status_rank, amount, currency_code)
       VALUES ($1, $2, $3, 1, $4, 'PLN')`,
      [n.refundId, n.orderId, n.status, n.amount],
    );
  await query(db.url, `INSERT INTO order_owners (order_id, pos_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`, [
    n.orderId,
    POS_ID,
  ]);
  return { orderId: n.orderId, body, notificationId: id };
}

const HISTORY_COLUMNS =
  'id, kind, subject_id, status, order_id, outcome, pos_id, key_fingerprint, body, body_sha256, parsed, received_at, disagreements, observed_via';
const DELIVERY_COLUMNS =
  'id, received_at, source_address, processing_time_ms, pos_id, key_fingerprint, body_sha256, outcome, notification_id, quarantine_id, observed_via';

async function everything(): Promise<unknown[]> {
  return [
    await query(db.url, `SELECT ${HISTORY_COLUMNS} FROM notifications ORDER BY id`),
    await query(db.url, `SELECT ${DELIVERY_COLUMNS} FROM deliveries ORDER BY id`),
    await query(
      db.url,
      'SELECT notification_id, body_sha256, body, first_received_at FROM notification_variants ORDER BY 1, 2',
    ),
    await query(db.url, 'SELECT * FROM delivery_repeats ORDER BY notification_id'),
    await query(db.url, 'SELECT * FROM quarantined_notifications ORDER BY id'),
    await query(
      db.url,
      'SELECT order_id, ext_order_id, merchant_pos_id, status, status_rank, total_amount, currency_code FROM orders ORDER BY 1',
    ),
    await query(db.url, 'SELECT refund_id, order_id, status, amount FROM refunds ORDER BY 1'),
    await query(db.url, 'SELECT * FROM order_owners ORDER BY 1'),
  ];
}

const completedOrder = uniqueId('MIGC');
const pendingOrder = uniqueId('MIGP');
const refundId = uniqueId('MIGR');
let older: Recorded;
let recent: Recorded;
let variantOf: Recorded;
let refund: Recorded;

beforeAll(async () => {
  db = testDatabase();
  const before = migrationsBefore('007');
  try {
    const { ensureDatabaseExists } = await import('../../../src/database/pool');
    await ensureDatabaseExists(db.url);
    await migrate(db.url, silent, before);
  } finally {
    rmSync(before, { recursive: true, force: true });
  }
  older = await recordAsBefore('order', orderBody({ orderId: completedOrder, status: 'PENDING' }), 40, 3);
  recent = await recordAsBefore('order', orderBody({ orderId: completedOrder, status: 'COMPLETED' }), 2, 1);
  variantOf = await recordAsBefore('order', orderBody({ orderId: pendingOrder, status: 'PENDING' }), 5, 2);
  refund = await recordAsBefore(
    'refund',
    refundBody({ orderId: completedOrder, refundId, status: 'PENDING', amount: '500' }),
    1,
    1,
  );
  const variant = Buffer.from(`${variantOf.body} `);
  await query(
    db.url,
    `INSERT INTO notification_variants (notification_id, body_sha256, body, first_received_at) VALUES ($1, $2, $3, now() - interval '4 days')`,
    [variantOf.notificationId, sha256(variant), variant],
  );
  await query(db.url, `INSERT INTO delivery_repeats (notification_id, deliveries) VALUES ($1, 250)`, [
    older.notificationId,
  ]);
  const [quarantined] = await query<{ id: string }>(
    db.url,
    `INSERT INTO quarantined_notifications (reason, detail, pos_id, key_fingerprint, body, body_sha256, received_at)
     VALUES ('invalid_field', 'order.totalAmount', $1, $2, 'x', $3, now() - interval '3 days') RETURNING id::text AS id`,
    [POS_ID, fingerprintKey(SECOND_KEY), sha256(Buffer.from('x'))],
  );
  await query(
    db.url,
    `INSERT INTO deliveries (received_at, pos_id, key_fingerprint, body_sha256, outcome, quarantine_id)
     VALUES (now() - interval '3 days', $1, $2, $3, 'quarantined', $4)`,
    [POS_ID, fingerprintKey(SECOND_KEY), sha256(Buffer.from('x')), quarantined?.id],
  );
}, 60_000);
afterAll(() => db.drop());

describe('migrating a database written before history was partitioned by day', () => {
  let before: unknown[];

  it('When npm run migrate runs on it, then every row is kept, each notification in the day it was received', async () => {
    before = await everything();
    await migrate(db.url, silent);
    expect(await everything()).toEqual(before);
    const days = await historyDays(db.url);
    const dayOf = (daysAgo: number) =>
      new Date(Date.now() - daysAgo * 86_400_000).toISOString().slice(0, 10).replaceAll('-', '');
    for (const daysAgo of [40, 5, 3, 2, 1, 0]) expect(days.notifications).toContain(dayOf(daysAgo));
    expect(days.deliveries).toEqual(days.notifications);
    const [placed] = await query<{ partition: string }>(
      db.url,
      'SELECT tableoid::regclass::text AS partition FROM notifications WHERE id = $1',
      [older.notificationId],
    );
    expect(placed?.partition).toBe(`notifications_p${dayOf(40)}`);
    // A delivery lives in its notification's day, a quarantined body's delivery in the quarantine's.
    const placements = await query<{ partition: string }>(
      db.url,
      'SELECT DISTINCT tableoid::regclass::text AS partition FROM deliveries WHERE notification_id = $1',
      [older.notificationId],
    );
    expect(placements).toEqual([{ partition: `deliveries_p${dayOf(40)}` }]);
  });

  it('When it is migrated, then each projection records its statuses with their notifications', async () => {
    const [order] = await query<{ recorded: Record<string, { id: string; at: string }> }>(
      db.url,
      'SELECT recorded FROM orders WHERE order_id = $1',
      [completedOrder],
    );
    expect(Object.keys(order?.recorded ?? {}).sort()).toEqual(['COMPLETED', 'PENDING']);
    expect(order?.recorded.PENDING?.id).toBe(older.notificationId);
    const [stored] = await query<{ same: boolean }>(
      db.url,
      'SELECT received_at = $2::timestamptz AS same FROM notifications WHERE id = $1',
      [older.notificationId, order?.recorded.PENDING?.at],
    );
    expect(stored?.same).toBe(true);
    const [refundRow] = await query<{ recorded: Record<string, { id: string }> }>(
      db.url,
      'SELECT recorded FROM refunds WHERE refund_id = $1',
      [refundId],
    );
    expect(refundRow?.recorded.PENDING?.id).toBe(refund.notificationId);
  });

  it('When the service then receives what was recorded before, then each is a duplicate of its record, and a new status is accepted', async () => {
    const svc = await startTestService({ database: db, env: { RELAY_ENABLED: 'false' } });
    try {
      for (const was of [older, recent, variantOf, refund]) {
        const res = await svc.post(was.body);
        expect(res.status).toBe(200);
        expect(res.body.outcome).toBe('duplicate');
      }
      const [counted] = await query<{ deliveries: string }>(
        db.url,
        'SELECT count(*) AS deliveries FROM deliveries WHERE notification_id = $1',
        [older.notificationId],
      );
      expect(Number(counted?.deliveries)).toBe(4);
      expect((await svc.post(`${variantOf.body} `)).body.outcome).toBe('duplicate');
      expect(
        await query(db.url, 'SELECT count(*)::int AS n FROM notification_variants WHERE notification_id = $1', [
          variantOf.notificationId,
        ]),
      ).toEqual([{ n: 1 }]);
      expect((await svc.post(orderBody({ orderId: pendingOrder, status: 'COMPLETED' }))).body.outcome).toBe('accepted');
      const res = await svc.admin.get(`/orders/${completedOrder}`).expect(200);
      expect(res.body.history.map((h: { status: string; deliveries: number }) => [h.status, h.deliveries])).toEqual([
        ['PENDING', 254],
        ['COMPLETED', 2],
      ]);
    } finally {
      await svc.stop();
    }
  });
});

// sql/011: event ids are derived from this version on. The events the outbox holds when it runs (random ids, times of
// their own) are kept in legacy_event_ids, and the first notification whose event id is derived is noted, so that
// `events rebuild` gives every event it can its own id again, and says which ids are lost.

describe('migrating an outbox written before event ids were derived', () => {
  it('When sql/011 runs, then the events in the outbox keep their ids and times for a rebuild, and the next notification is the first derived', async () => {
    const db = testDatabase();
    const before = migrationsBefore('011');
    try {
      await ensureDatabaseExists(db.url);
      await migrate(db.url, createLogger('silent'), before);
      const legacy = [
        { id: randomUUID(), notificationId: '41', time: '2026-11-20T10:00:00.123Z' },
        { id: randomUUID(), notificationId: '42', time: '2026-11-21T11:30:00.456Z' },
      ];
      for (const [i, e] of legacy.entries())
        await query(
          db.url,
          `INSERT INTO outbox_events (id, order_id, sequence, type, message, created_at, published_at)
           VALUES ($1, 'O1', $2, 'order.pending', $3, $4::timestamptz + interval '2 ms', now())`,
          [e.id, i + 1, JSON.stringify({ id: e.id, time: e.time, data: { notificationId: e.notificationId } }), e.time],
        );
      await query(db.url, `SELECT setval('notification_ids', 57)`);

      await migrate(db.url, createLogger('silent'));
      expect(
        await query(
          db.url,
          'SELECT notification_id::text, event_id, event_time, created_at FROM legacy_event_ids ORDER BY 1',
        ),
      ).toEqual(
        legacy.map((e) => ({
          notification_id: e.notificationId,
          event_id: e.id,
          event_time: new Date(e.time),
          created_at: new Date(Date.parse(e.time) + 2),
        })),
      );
      expect(await query(db.url, 'SELECT derived_from::int FROM event_id_derivation')).toEqual([{ derived_from: 58 }]);
    } finally {
      rmSync(before, { recursive: true, force: true });
      await db.drop();
    }
  });
});

describe('the outbox after sql/015', () => {
  it('When held events are marked published, then each new version stays on its page', async () => {
    const db = testDatabase();
    const client = new pg.Client({ connectionString: db.url });
    try {
      await ensureDatabaseExists(db.url);
      await migrate(db.url, silent);
      // Events of about 1 kB, as the relay's messages are; without room left on their pages the marks would move
      // every version to a page of its own.
      await query(
        db.url,
        `INSERT INTO outbox_events (id, order_id, sequence, type, message)
         SELECT gen_random_uuid(), 'O' || g, 1, 'order.completed', repeat('x', 1000) FROM generate_series(1, 40) g`,
      );
      const pages = async (): Promise<Array<{ id: string; page: string }>> =>
        query(db.url, `SELECT id::text, (ctid::text::point)[0]::text AS page FROM outbox_events ORDER BY id`);
      const before = await pages();
      await client.connect();
      // Since sql/024 only a held event's row is marked (recordBatch), as this.
      await client.query(
        'UPDATE outbox_events SET published_at = clock_timestamp(), last_error = NULL, unrouted_at = NULL WHERE id = ANY($1)',
        [before.map((e) => e.id)],
      );

      expect(await query(db.url, 'SELECT count(*)::int AS n FROM outbox_events WHERE published_at IS NULL')).toEqual([
        { n: 0 },
      ]);
      expect(await pages()).toEqual(before);
    } finally {
      await client.end().catch(() => undefined);
      await db.drop();
    }
  });
});
