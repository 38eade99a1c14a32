import { sql } from 'kysely';
import type { Db } from '../database/pool';
import { OUTBOX_CHANNEL } from './notifyChannel';

/**
 * Re-publishing an order's events (the console's action): its published events still in the outbox are made
 * pending again, with their ids, sequences and bodies unchanged, and the relay is hinted. The relay publishes
 * them again in sequence order, each with the same CloudEvents id and AMQP messageId, so a consumer that
 * deduplicates by id (as docs/asyncapi.yaml asks of every consumer: delivery is at least once) ignores those it
 * has, and one that lost them gets them. Nothing new is written: no event is invented, none reordered. Events
 * already deleted after OUTBOX_RETENTION cannot be re-published; the answer says how many were.
 */
export async function republishOrderEvents(db: Db, orderId: string): Promise<{ republished: number }> {
  return db.transaction().execute(async (trx) => {
    const rows = await trx
      .updateTable('outbox_events')
      .set({ published_at: null, attempts: 0, next_attempt_at: sql`now()`, last_error: null, unrouted_at: null })
      .where('order_id', '=', orderId)
      .where('published_at', 'is not', null)
      .returning('id')
      .execute();
    if (rows.length > 0) await sql`SELECT pg_notify(${OUTBOX_CHANNEL}, '')`.execute(trx);
    return { republished: rows.length };
  });
}
