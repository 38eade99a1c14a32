import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { migrate } from '../../src/database/migrations';
import { ensureDatabaseExists } from '../../src/database/pool';
import { createLogger } from '../../src/observability/logger';
import { migrationsBefore, query, testDatabase } from '../support/database';

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
