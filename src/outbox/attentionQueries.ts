import { sql } from 'kysely';
import { columnsOf } from '../database/columns';
import type { Db } from '../database/pool';

/**
 * The outbox's conditions for needs attention, each a bounded read of its own partial index: the events waiting
 * for the broker (outbox_events_pending) and the events no queue was bound for (outbox_events_unrouted).
 */

/** Events counted at most (the outbox may hold millions: a broker outage, or a type nobody binds). */
export const EVENT_COUNT_BOUND = 10_000;

export interface EventCondition {
  /** Events in the condition, counted up to countBound + 1 (the newest ones, for unrouted events). */
  count: number;
  countBound: number;
  /** The orders those counted belong to. */
  orders: number;
  /** Since when: the oldest waiting event's creation, or the first unrouted event's publication. */
  since: Date | null;
  /**
   * Why: the broker's last error on the oldest waiting event (null: not attempted yet), or the routing keys no
   * queue was bound for, among those counted.
   */
  lastReason: string | null;
  /** An order the condition holds for (the oldest waiting event's, the latest unrouted event's): where to look. */
  orderId: string | null;
}

const c = columnsOf('outbox_events');

const NONE: EventCondition = {
  count: 0,
  countBound: EVENT_COUNT_BOUND,
  orders: 0,
  since: null,
  lastReason: null,
  orderId: null,
};

/** Events committed but not yet confirmed by the broker: the oldest first (its order's later events wait). */
export async function waitingEvents(db: Db): Promise<EventCondition> {
  const [counted, oldest] = await Promise.all([
    db
      .selectFrom((eb) =>
        eb
          .selectFrom('outbox_events')
          .select('order_id')
          .where('published_at', 'is', null)
          .limit(EVENT_COUNT_BOUND + 1)
          .as('waiting'),
      )
      .select((eb) => [eb.fn.countAll<string>().as('events'), eb.fn.count<string>('order_id').distinct().as('orders')])
      .executeTakeFirstOrThrow(),
    db
      .selectFrom('outbox_events')
      .select(['order_id', 'created_at', 'last_error'])
      .where('published_at', 'is', null)
      .orderBy('created_at')
      .limit(1)
      .executeTakeFirst(),
  ]);
  if (!oldest) return NONE;
  return {
    ...NONE,
    count: Number(counted.events),
    orders: Number(counted.orders),
    since: oldest.created_at,
    lastReason: oldest.last_error,
    orderId: oldest.order_id,
  };
}

/**
 * Events published that no queue was bound for (the broker returned them): kept in the outbox and the feed, they
 * held up nothing, but a consumer may be missing. Counted among the newest, since the first one kept.
 */
export async function unroutedEvents(db: Db): Promise<EventCondition> {
  const [counted, first] = await Promise.all([
    db
      .selectFrom((eb) =>
        eb
          .selectFrom('outbox_events')
          .select(['order_id', 'type', 'unrouted_at'])
          .where('unrouted_at', 'is not', null)
          .orderBy('unrouted_at', 'desc')
          .limit(EVENT_COUNT_BOUND + 1)
          .as('unrouted'),
      )
      .select((eb) => [
        eb.fn.countAll<string>().as('events'),
        eb.fn.count<string>('order_id').distinct().as('orders'),
        sql<string[] | null>`array_agg(DISTINCT ${c('type')} ORDER BY ${c('type')})`.as('types'),
        sql<string | null>`(array_agg(${c('order_id')} ORDER BY ${c('unrouted_at')} DESC))[1]`.as('latest_order_id'),
      ])
      .executeTakeFirstOrThrow(),
    db
      .selectFrom('outbox_events')
      .select('unrouted_at')
      .where('unrouted_at', 'is not', null)
      .orderBy('unrouted_at')
      .limit(1)
      .executeTakeFirst(),
  ]);
  if (!first?.unrouted_at) return NONE;
  return {
    ...NONE,
    count: Number(counted.events),
    orders: Number(counted.orders),
    since: first.unrouted_at,
    lastReason: counted.types ? `no queue bound for ${counted.types.join(', ')}` : null,
    orderId: counted.latest_order_id,
  };
}
