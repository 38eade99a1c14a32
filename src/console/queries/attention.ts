import type { Db } from '../../database/pool';
import type { Disagreement } from '../../database/schema';
import type { StatusTransition } from '../../domain/outcomes';
import { unroutedEvents, waitingEvents, type EventCondition } from '../../outbox/outboxQueries';
import { givenUpOrders, type GivenUpOrder } from '../../reconciliation/scheduleQueries';
import { openQuarantined, type QuarantineRow } from '../../recording/quarantineQueries';
import { DELIVERY_AFTER_FIRST_MS, PAGE_SIZE } from './rows';

/** Needs attention: what a person must act on, each part a bounded read of its own index. */

export interface Attention {
  quarantined: QuarantineRow[];
  givenUp: GivenUpOrder[];
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

/** What a person must act on; each part a bounded read of its own index. */
export async function attention(db: Db, now: Date): Promise<Attention> {
  const [quarantined, givenUp, troubled, waiting, unrouted, last] = await Promise.all([
    openQuarantined(db, { reason: null, posId: null }, PAGE_SIZE),
    givenUpOrders(db, PAGE_SIZE),
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
    givenUp,
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
