import { sql, type SelectQueryBuilder } from 'kysely';
import { columnsOf } from '../../database/columns';
import type { Db } from '../../database/pool';
import type { Database, Disagreement } from '../../database/schema';
import type { StatusTransition } from '../../domain/outcomes';
import { latestFailovers, type Failover } from '../../failover/failoverQueries';
import { historyDaysReady } from '../../partitions/partitionQueries';
import type { EventType } from '../../outbox/cloudEvents';
import { outboxLag, waitingOrders, type OutboxLag, type WaitingOrder } from '../../outbox/outboxQueries';
import { readReachability, type Reachability } from '../../reconciliation/reachabilityQueries';
import { givenUpOrders, type GivenUpOrder } from '../../reconciliation/scheduleQueries';
import {
  countOpenQuarantined,
  oldestOpenQuarantined,
  openQuarantined,
  type QuarantineRow,
} from '../../recording/quarantineQueries';
import { DELIVERY_AFTER_FIRST_MS, PAGE_SIZE } from '../frame/listBounds';
import { unroutedTypes, type UnroutedType } from './unroutedTypeQueries';

/**
 * Needs attention: each condition of the status board, and the list behind it. Every part is a bounded read of an
 * index of its own: a LIMIT, a partial index of the few rows concerned, a count up to a bound. What other parts own
 * (the quarantine, the schedule, the outbox, the payment API's record, the days of history) is read through their
 * query modules; this file reads what only this page does.
 */

export interface TroubledRow {
  orderId: string;
  kind: 'order' | 'refund';
  subjectId: string;
  status: string;
  outcome: StatusTransition;
  disagreements: Disagreement[];
  receivedAt: Date;
  /** Its order's currency: what an amount it disagrees on is in. */
  currencyCode: string | null;
}

/** A payment waiting for the shop's confirmation. */
export interface ConfirmationRow {
  orderId: string;
  extOrderId: string | null;
  totalAmount: string | null;
  currencyCode: string | null;
  posId: string | null;
  /** When it began waiting (its last change). */
  since: Date;
}

/** A count up to a bound: `more` when there are more than `count`. */
export interface Bounded {
  count: number;
  more: boolean;
}

export interface Attention {
  quarantined: QuarantineRow[];
  quarantinedCount: Bounded;
  quarantinedSince: Date | null;
  givenUp: GivenUpOrder[];
  givenUpCount: Bounded;
  troubled: TroubledRow[];
  pending: OutboxLag;
  waitingOrders: WaitingOrder[];
  /** Events published that no queue was bound for (they held up nothing; a consumer may be missing), by type, each marked expected or not (EXPECTED_UNROUTED_EVENT_TYPES). */
  unroutedTypes: UnroutedType[];
  /** Statuses of the last 24 h learnt by asking the payment service, not from a notification, by POS. */
  learnt: LearntStatuses[];
  confirmations: ConfirmationRow[];
  confirmationsCount: Bounded;
  lastDeliveryAt: Date | null;
  reachability: Reachability[];
  /** -1: today's day of history is missing; 0: tomorrow's (UTC); 1: both are there. */
  historyDaysAhead: number;
  /** The latest failover of the database the service noticed, and its recovery; null: none ever. */
  failover: Failover | null;
}

/** A POS's statuses learnt by asking the payment service: its notifications never came. */
export interface LearntStatuses {
  posId: string;
  /** Counted up to COUNT_BOUND (then more). */
  statuses: Bounded;
  orders: number;
  first: Date;
  latest: Date;
  latestOrderId: string;
}

/** How far back statuses learnt by asking are counted. */
export const LEARNT_WINDOW_MS = 86_400_000;

/** Days back that conflicts and disagreements are listed from. */
export const TROUBLE_DAYS = 7;
/** Rows counted at most for a board line's count. */
export const COUNT_BOUND = 1000;

/** What a person must act on, and the lists behind it. */
export async function attention(db: Db, now: Date, expected: readonly EventType[]): Promise<Attention> {
  const [
    quarantined,
    quarantinedCount,
    quarantinedSince,
    givenUp,
    givenUpCount,
    troubled,
    pending,
    waiting,
    confirmations,
    confirmationsCount,
    last,
    reachability,
    historyDaysAhead,
    failovers,
    byType,
    learnt,
  ] = await Promise.all([
    openQuarantined(db, { reason: null, posId: null }, PAGE_SIZE),
    countOpenQuarantined(db, { reason: null, posId: null }, COUNT_BOUND),
    oldestOpenQuarantined(db),
    givenUpOrders(db, PAGE_SIZE),
    countUpTo(db.selectFrom('reconciliation_checks').select('order_id').where('given_up_at', 'is not', null), db),
    db
      .selectFrom('notifications')
      .select(['order_id', 'kind', 'subject_id', 'status', 'outcome', 'disagreements', 'received_at'])
      .select((eb) =>
        eb
          .selectFrom('orders')
          .select('orders.currency_code')
          .whereRef('orders.order_id', '=', 'notifications.order_id')
          .as('currency_code'),
      )
      .where('received_at', '>=', new Date(now.getTime() - TROUBLE_DAYS * 86_400_000))
      .where((eb) => eb.or([eb('outcome', '=', 'conflict'), eb('disagreements', 'is not', null)]))
      .orderBy('received_at', 'desc')
      .limit(PAGE_SIZE)
      .execute(),
    outboxLag(db),
    waitingOrders(db, PAGE_SIZE),
    db
      .selectFrom('orders')
      .selectAll()
      .where('status', '=', 'WAITING_FOR_CONFIRMATION')
      .orderBy('updated_at')
      .limit(PAGE_SIZE)
      .execute(),
    countUpTo(db.selectFrom('orders').select('order_id').where('status', '=', 'WAITING_FOR_CONFIRMATION'), db),
    lastDelivery(db, now),
    readReachability(db),
    historyDaysReady(db, now.getTime()),
    latestFailovers(db, 1),
    unroutedTypes(db, expected),
    learntStatuses(db, now),
  ]);
  return {
    quarantined,
    quarantinedCount: bounded(quarantinedCount, COUNT_BOUND),
    quarantinedSince,
    givenUp,
    givenUpCount,
    troubled: troubled.map((t) => ({
      orderId: t.order_id,
      kind: t.kind,
      subjectId: t.subject_id,
      status: t.status,
      outcome: t.outcome,
      disagreements: t.disagreements ?? [],
      receivedAt: t.received_at,
      currencyCode: t.currency_code,
    })),
    pending,
    waitingOrders: waiting,
    unroutedTypes: byType,
    learnt,
    confirmations: confirmations.map((c) => ({
      orderId: c.order_id,
      extOrderId: c.ext_order_id,
      totalAmount: c.total_amount,
      currencyCode: c.currency_code,
      posId: c.merchant_pos_id,
      since: c.updated_at,
    })),
    confirmationsCount,
    lastDeliveryAt: last,
    reachability,
    historyDaysAhead,
    failover: failovers[0] ?? null,
  };
}

const bounded = (count: number, bound: number): Bounded =>
  count > bound ? { count: bound, more: true } : { count, more: false };

/** How many rows a query selects, counted up to COUNT_BOUND (then "more"). */
async function countUpTo<TB extends keyof Database, O>(
  query: SelectQueryBuilder<Database, TB, O>,
  db: Db,
): Promise<Bounded> {
  const row = await db
    .selectFrom(query.limit(COUNT_BOUND + 1).as('matching'))
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .executeTakeFirst();
  return bounded(Number(row?.n ?? 0), COUNT_BOUND);
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

/**
 * The statuses of the last 24 h learnt by asking the payment service (observed_via other than notification), by
 * POS: each was a notification that never came. Read from notifications_learnt (sql/023), the day's partitions and
 * the one before only, the newest COUNT_BOUND + 1 of them.
 */
async function learntStatuses(db: Db, now: Date): Promise<LearntStatuses[]> {
  const since = new Date(now.getTime() - LEARNT_WINDOW_MS);
  const rows = await db
    .selectFrom((eb) =>
      eb
        .selectFrom('notifications')
        .select(['pos_id', 'order_id', 'received_at'])
        .where('received_at', '>=', since)
        .where('observed_via', '<>', 'notification')
        .orderBy('received_at', 'desc')
        .limit(COUNT_BOUND + 1)
        .as('learnt'),
    )
    .select((eb) => [
      'learnt.pos_id',
      eb.fn.countAll<string>().as('statuses'),
      eb.fn.count<string>('learnt.order_id').distinct().as('orders'),
      eb.fn.min('learnt.received_at').as('first'),
      eb.fn.max('learnt.received_at').as('latest'),
      sql<string>`(array_agg(${columnsOf('notifications', 'learnt')('order_id')} ORDER BY ${columnsOf('notifications', 'learnt')('received_at')} DESC))[1]`.as(
        'latest_order_id',
      ),
    ])
    .groupBy('learnt.pos_id')
    .orderBy('learnt.pos_id')
    .execute();
  return rows.map((r) => ({
    posId: r.pos_id,
    statuses: bounded(Number(r.statuses), COUNT_BOUND),
    orders: Number(r.orders),
    first: r.first,
    latest: r.latest,
    latestOrderId: r.latest_order_id,
  }));
}
