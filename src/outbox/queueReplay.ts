import type { Db } from '../database/pool';
import { createLogger } from '../observability/logger';
import { createRelayMetrics } from '../observability/metrics';
import { BrokerChannel, REPLAY_HEADER } from './brokerChannel';
import { readFeedPage, type FeedCursor, type FeedQuery } from './feedQueries';

/**
 * A team's replay (POST /events/replay): the feed's events, selected as the feed selects them, published to one
 * named queue through the default exchange, so that no other queue gets them; never one that another connection
 * holds exclusively (checked first: its consumer did not ask for them). Each keeps its id, type, body and
 * AMQP timestamp, and carries the replayed-at header. Published with confirms and mandatory, a page at a time;
 * a call publishes at most `max` events and answers where the next call goes on.
 */

export const REPLAY_PAGE = 500;
/** Pages a call reads at most: a type filter may find nothing in many of them. */
const PAGES_PER_CALL = 20;
const CONFIRM_TIMEOUT_MS = 10_000;

export type QueueReplayOutcome =
  | { outcome: 'replayed'; replayed: number; next: FeedCursor | null; more: boolean }
  | { outcome: 'queue_not_found' }
  /** Another connection holds the queue exclusively (its consumer's own): nothing was published. */
  | { outcome: 'queue_exclusive' }
  /** The broker did not take every event (nack, timeout, the queue deleted meanwhile): those before are in it. */
  | { outcome: 'not_confirmed'; replayed: number; error: string }
  | { outcome: 'broker_unavailable'; error: string };

export interface QueueReplayRequest {
  queue: string;
  /** The selection; its limit is the most events this call publishes. */
  query: FeedQuery;
}

export async function replayToQueue(
  db: Db,
  amqpUrl: string,
  { queue, query }: QueueReplayRequest,
  clientLeft?: AbortSignal,
): Promise<QueueReplayOutcome> {
  // Its metrics go to a registry of its own: the relay's count what the relay publishes.
  const broker = new BrokerChannel(
    amqpUrl,
    '',
    CONFIRM_TIMEOUT_MS,
    createRelayMetrics(),
    createLogger('silent'),
    'none',
  );
  try {
    await broker.open();
  } catch (error) {
    return { outcome: 'broker_unavailable', error: (error as Error).message };
  }
  try {
    const state = await broker.queueState(queue);
    if (state === 'missing') return { outcome: 'queue_not_found' };
    if (state === 'exclusive') return { outcome: 'queue_exclusive' };
    const headers = { [REPLAY_HEADER]: new Date().toISOString() };
    let replayed = 0;
    let after = query.after;
    for (let pages = 1; ; pages++) {
      const page = await readFeedPage(db, { ...query, after, limit: Math.min(REPLAY_PAGE, query.limit - replayed) });
      const results = page.events.length === 0 ? [] : await broker.publish(page.events, { routingKey: queue, headers });
      const taken = results.filter((r) => r.ok && r.routed).length;
      const failed = results.find((r) => !r.ok || !r.routed);
      if (failed) {
        const error = failed.ok ? `the queue ${queue} no longer exists` : `${failed.reason}: ${failed.error}`;
        return { outcome: 'not_confirmed', replayed: replayed + taken, error };
      }
      replayed += taken;
      after = page.next;
      if (!page.more || replayed >= query.limit || pages >= PAGES_PER_CALL || clientLeft?.aborted)
        return { outcome: 'replayed', replayed, next: after, more: page.more };
    }
  } finally {
    await broker.close();
  }
}
