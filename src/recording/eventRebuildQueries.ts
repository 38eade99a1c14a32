import { sql, type InsertObject } from 'kysely';
import type { Database } from '../database/schema';
import type { Db } from '../database/pool';
import type { LegacyEvent, RebuiltEvent, StreamEntry } from './eventRebuild';

/** What `events rebuild` reads and writes: history by order, and the outbox. */

/** The orders with a status applied or in conflict (those publish) received in the range: their day partitions only. */
export async function ordersRecordedIn(db: Db, since: Date, until: Date): Promise<string[]> {
  const rows = await db
    .selectFrom('notifications')
    .select('order_id')
    .distinct()
    .where('received_at', '>=', since)
    .where('received_at', '<', until)
    .where('outcome', '<>', 'stale')
    .orderBy('order_id')
    .execute();
  return rows.map((r) => r.order_id);
}

/** The first notification whose event id is derived (sql/011). */
export async function derivedFrom(db: Db): Promise<number> {
  const row = await db.selectFrom('event_id_derivation').select('derived_from').executeTakeFirst();
  return row ? Number(row.derived_from) : 0;
}

export interface OrdersHistory {
  /** Each order's stream: its notifications (its refunds' included), in the order they were recorded. */
  streams: Map<string, StreamEntry[]>;
  owners: Map<string, string>;
  lastSequences: Map<string, number>;
  legacy: Map<string, LegacyEvent>;
  /** The numbers of each order's events the outbox still holds. */
  kept: Map<string, Set<number>>;
}

/** A page of orders' whole history (every day: notifications_by_order), owners, event numbers and legacy ids. */
export async function readOrdersHistory(db: Db, orderIds: readonly string[]): Promise<OrdersHistory> {
  const [history, owners, streams, outbox] = await Promise.all([
    db
      .selectFrom('notifications')
      .select(['id', 'order_id', 'parsed', 'pos_id', 'observed_via'])
      // As text: the recorder made the event's time from this text (microseconds, then milliseconds).
      .select((eb) => sql<string>`to_json(${eb.ref('received_at')})#>>'{}'`.as('at'))
      .where('order_id', 'in', orderIds)
      .orderBy('order_id')
      .orderBy('id')
      .execute(),
    db.selectFrom('order_owners').select(['order_id', 'pos_id']).where('order_id', 'in', orderIds).execute(),
    db
      .selectFrom('event_streams')
      .select((eb) => [eb.ref('order_id').as('order_id'), eb.ref('last_sequence').as('last')])
      .where('order_id', 'in', orderIds)
      .execute(),
    db.selectFrom('outbox_events').select(['order_id', 'sequence']).where('order_id', 'in', orderIds).execute(),
  ]);
  const kept = new Map<string, Set<number>>();
  for (const { order_id, sequence } of outbox)
    kept.set(order_id, (kept.get(order_id) ?? new Set()).add(Number(sequence)));
  const legacy =
    history.length === 0
      ? []
      : await db
          .selectFrom('legacy_event_ids')
          .select(['notification_id', 'event_id', 'event_time', 'created_at'])
          .where(
            'notification_id',
            'in',
            history.map((h) => h.id),
          )
          .execute();
  const byOrder = new Map<string, StreamEntry[]>();
  for (const { order_id, ...entry } of history) {
    const stream = byOrder.get(order_id) ?? [];
    stream.push(entry);
    byOrder.set(order_id, stream);
  }
  return {
    streams: byOrder,
    owners: new Map(owners.map((o) => [o.order_id, o.pos_id])),
    lastSequences: new Map(streams.map((s) => [s.order_id, Number(s.last)])),
    legacy: new Map(
      legacy.map((l) => [l.notification_id, { id: l.event_id, time: l.event_time, createdAt: l.created_at }]),
    ),
    kept,
  };
}

/**
 * Puts rebuilt events back in the outbox, published (outside the relay's cursor; the retention sweep deletes them
 * OUTBOX_RETENTION from now), in their place in the feed. One still there is left as it is. Answers how many went in.
 */
export async function restoreEvents(db: Db, orderId: string, events: readonly RebuiltEvent[]): Promise<number> {
  if (events.length === 0) return 0;
  const result = await db
    .insertInto('outbox_events')
    .values(
      // Typed as the table's row: a key of an inferred object is checked against no column.
      events.map(({ event, createdAt }): InsertObject<Database, 'outbox_events'> => ({
        id: event.id,
        order_id: orderId,
        sequence: event.data.sequence,
        type: event.type,
        message: JSON.stringify(event),
        created_at: createdAt,
        published_at: sql<Date>`now()`,
        // Not the writer's transaction id (the default): that would put the event above the relay's cursor, and it
        // would be published again. Without one it is published by its row, as published_at says (sql/024).
        xid: null,
      })),
    )
    .onConflict((oc) => oc.doNothing())
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0);
}
