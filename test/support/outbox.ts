import { readOutboxBacklog, eventsOfOrder } from '../../src/outbox/outboxQueries';
import { query, withDb } from './database';

/**
 * What the outbox says is waiting for the broker, as the service reads it (src/outbox/outboxQueries.ts): events above
 * the relay's cursor and held ones (docs/decisions/0023). An event's row alone no longer says it.
 */
export const pendingEvents = (url: string): Promise<number> =>
  withDb(url, async (db) => (await readOutboxBacklog(db)).pending);

/** An order's events not published yet, as the console and `inspect` read them. */
export const pendingEventsOf = (url: string, orderId: string): Promise<number> =>
  withDb(url, async (db) => (await eventsOfOrder(db, orderId, 1000)).filter((e) => e.publishedAt === null).length);

/** Whether every event of an order is published, as the console and `inspect` read them. */
export const allPublished = async (url: string, orderId: string): Promise<boolean> =>
  (await pendingEventsOf(url, orderId)) === 0;

/**
 * Holds an order's events as the relay holds one the broker refused (outbox_held): waiting, `attempts` failed, the
 * broker's answer, the next attempt an hour away.
 */
export const holdEvents = (url: string, orderId: string, attempts: number, lastError: string): Promise<unknown> =>
  query(
    url,
    `INSERT INTO outbox_held (event_id, order_id, sequence, attempts, last_error, next_attempt_at)
     SELECT id, order_id, sequence, $2, $3, now() + interval '1 hour' FROM outbox_events WHERE order_id = $1
     ON CONFLICT (event_id) DO UPDATE SET attempts = $2, last_error = $3, next_attempt_at = now() + interval '1 hour'`,
    [orderId, attempts, lastError],
  );
