import { sql } from 'kysely';
import type { Db } from '../../database/pool';
import type { Disagreement } from '../../database/schema';
import type { StatusTransition } from '../../domain/outcomes';
import { unroutedEvents, waitingEvents, type EventCondition } from '../../outbox/attentionQueries';
import { openQuarantined, type QuarantineRow } from './lists';
import { DELIVERY_AFTER_FIRST_MS, PAGE_SIZE } from './rows';

/** Needs attention: what a person must act on, each part a bounded read of its own index. */

export interface Attention {
  quarantined: QuarantineRow[];
  givenUp: Array<{ orderId: string; givenUpAt: Date; attempts: number; lastResult: string | null }>;
  troubled: Array<{
    orderId: string;
    kind: 'order' | 'refund';
    subjectId: string;
    status: string;
    outcome: StatusTransition;
    disagreements: Disagreement[];
    receivedAt: Date;
  }>;
  /** Events waiting for the broker, with the broker's last reason. */
  waiting: EventCondition;
  /** Events published that no queue was bound for. */
  unrouted: EventCondition;
  lastDeliveryAt: Date | null;
}

/** Days back that conflicts and disagreements are listed from. */
export const TROUBLE_DAYS = 7;
/** Pending events counted at most (the outbox may hold millions in a broker outage). */
const PENDING_COUNT_BOUND = 10_000;

export interface OutboxLag {
  /** Pending events, counted up to countBound + 1. */
  count: number;
  oldest: Date | null;
  countBound: number;
}

/** The events waiting for the broker: how many (bounded) and since when (outbox_events_pending, by age). */
export async function outboxLag(db: Db): Promise<OutboxLag> {
  const [count, oldest] = await Promise.all([
    sql<{ n: string }>`SELECT count(*) AS n FROM (SELECT 1 FROM outbox_events WHERE published_at IS NULL
      LIMIT ${PENDING_COUNT_BOUND + 1}) AS pending`.execute(db),
    db
      .selectFrom('outbox_events')
      .select('created_at')
      .where('published_at', 'is', null)
      .orderBy('created_at')
      .limit(1)
      .executeTakeFirst(),
  ]);
  return { count: Number(count.rows[0]?.n ?? 0), oldest: oldest?.created_at ?? null, countBound: PENDING_COUNT_BOUND };
}

/** What a person must act on; each part a bounded read of its own index. */
export async function attention(db: Db, now: Date): Promise<Attention> {
  const [quarantined, givenUp, troubled, waiting, unrouted, last] = await Promise.all([
    openQuarantined(db, { reason: null, posId: null }),
    db
      .selectFrom('reconciliation_checks')
      .select(['order_id', 'given_up_at', 'attempts', 'last_result'])
      .where('given_up_at', 'is not', null)
      .orderBy('given_up_at', 'desc')
      .limit(PAGE_SIZE)
      .execute(),
    db
      .selectFrom('notifications')
      .select(['order_id', 'kind', 'subject_id', 'status', 'outcome', 'disagreements', 'received_at'])
      .where('received_at', '>=', new Date(now.getTime() - TROUBLE_DAYS * 86_400_000))
      .where((eb) => eb.or([eb('outcome', '=', 'conflict'), eb('disagreements', 'is not', null)]))
      .orderBy('received_at', 'desc')
      .limit(PAGE_SIZE)
      .execute(),
    waitingEvents(db),
    unroutedEvents(db),
    lastDelivery(db, now),
  ]);
  return {
    quarantined,
    givenUp: givenUp.map((g) => ({
      orderId: g.order_id,
      givenUpAt: g.given_up_at ?? now,
      attempts: g.attempts,
      lastResult: g.last_result,
    })),
    troubled: troubled.map((t) => ({
      orderId: t.order_id,
      kind: t.kind,
      subjectId: t.subject_id,
      status: t.status,
      outcome: t.outcome,
      disagreements: t.disagreements ?? [],
      receivedAt: t.received_at,
    })),
    waiting,
    unrouted,
    lastDeliveryAt: last,
  };
}

/** When the sender last delivered anything (reconciliation's own observations aside), within the last days. */
async function lastDelivery(db: Db, now: Date): Promise<Date | null> {
  const row = await db
    .selectFrom('deliveries')
    .select('received_at')
    .where('notification_received_at', '>=', new Date(now.getTime() - DELIVERY_AFTER_FIRST_MS))
    .where('observed_via', '=', 'notification')
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
  return row?.received_at ?? null;
}
