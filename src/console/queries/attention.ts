import { sql, type SelectQueryBuilder } from 'kysely';
import type { Db } from '../../database/pool';
import type { Database, Disagreement } from '../../database/schema';
import type { StatusTransition } from '../../domain/outcomes';
import { addDays, dayOf, HISTORY_TABLES, partitionName } from '../../history/days';
import { readReachability, type Reachability } from '../../reconciliation/reachabilityQueries';
import { countOpenQuarantined, openQuarantined, type QuarantineRow } from './lists';
import { DELIVERY_AFTER_FIRST_MS, PAGE_SIZE } from './rows';

/**
 * Needs attention: each condition of the status board, and the list behind it. Every part is a bounded read of an
 * index of its own: a LIMIT, a partial index of the few rows concerned, a count up to a bound.
 */

export interface GivenUpRow {
  orderId: string;
  givenUpAt: Date;
  attempts: number;
  lastResult: string | null;
}

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

/** An order whose events wait for the broker: how many, since when, and the broker's last answer. */
export interface WaitingOrderRow {
  orderId: string;
  events: number;
  oldest: Date;
  lastError: string | null;
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
  givenUp: GivenUpRow[];
  givenUpCount: Bounded;
  troubled: TroubledRow[];
  pending: OutboxLag;
  waitingOrders: WaitingOrderRow[];
  confirmations: ConfirmationRow[];
  confirmationsCount: Bounded;
  lastDeliveryAt: Date | null;
  reachability: Reachability[];
  /** -1: today's day of history is missing; 0: tomorrow's (UTC); 1: both are there. */
  historyDaysAhead: number;
}

/** Days back that conflicts and disagreements are listed from. */
export const TROUBLE_DAYS = 7;
/** Pending events looked at, at most (the outbox may hold millions in a broker outage). */
export const PENDING_COUNT_BOUND = 10_000;
/** Rows counted at most for a board line's count. */
export const COUNT_BOUND = 1000;

export interface OutboxLag {
  /** Pending events, counted up to countBound + 1. */
  count: number;
  /** Orders those events are about (of the first countBound + 1 pending). */
  orders: number;
  oldest: Date | null;
  countBound: number;
  /** The broker's answers to the oldest pending events, most frequent first: why they wait. */
  reasons: Array<{ reason: string | null; events: number }>;
}

/** The oldest pending events, at most PENDING_COUNT_BOUND + 1, through outbox_events_pending (by age). */
const oldestPending = (db: Db) =>
  db
    .selectFrom('outbox_events')
    .select(['order_id', 'created_at', 'last_error'])
    .where('published_at', 'is', null)
    .orderBy('created_at')
    .limit(PENDING_COUNT_BOUND + 1);

/** The events waiting for the broker: how many (bounded), about how many orders, since when and why. */
export async function outboxLag(db: Db): Promise<OutboxLag> {
  const [counts, reasons] = await Promise.all([
    db
      .selectFrom(oldestPending(db).as('p'))
      .select((eb) => [
        eb.fn.countAll<string>().as('events'),
        eb.fn.count<string>('p.order_id').distinct().as('orders'),
        eb.fn.min('p.created_at').as('oldest'),
      ])
      .executeTakeFirst(),
    db
      .selectFrom(oldestPending(db).as('p'))
      .select((eb) => ['p.last_error', eb.fn.countAll<string>().as('events')])
      .groupBy('p.last_error')
      .orderBy('events', 'desc')
      .limit(3)
      .execute(),
  ]);
  return {
    count: Number(counts?.events ?? 0),
    orders: Number(counts?.orders ?? 0),
    oldest: counts?.oldest ?? null,
    countBound: PENDING_COUNT_BOUND,
    reasons: reasons.map((r) => ({ reason: r.last_error, events: Number(r.events) })),
  };
}

/** The orders whose events wait longest, a page of them, with the broker's last answer about each. */
async function waitingOrders(db: Db): Promise<WaitingOrderRow[]> {
  const rows = await db
    .selectFrom(oldestPending(db).as('p'))
    .select((eb) => [
      'p.order_id',
      eb.fn.countAll<string>().as('events'),
      eb.fn.min('p.created_at').as('oldest'),
      eb.fn.max('p.last_error').as('last_error'),
    ])
    .groupBy('p.order_id')
    .orderBy('oldest')
    .limit(PAGE_SIZE)
    .execute();
  return rows.map((r) => ({
    orderId: r.order_id,
    events: Number(r.events),
    oldest: r.oldest,
    lastError: r.last_error,
  }));
}

/** What a person must act on, and the lists behind it. */
export async function attention(db: Db, now: Date): Promise<Attention> {
  const [
    quarantined,
    quarantinedCount,
    quarantinedOldest,
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
  ] = await Promise.all([
    openQuarantined(db, { reason: null, posId: null }),
    countOpenQuarantined(db, { reason: null, posId: null }, COUNT_BOUND),
    db
      .selectFrom('quarantined_notifications')
      .select('received_at')
      .where('resolved_at', 'is', null)
      .orderBy('id')
      .limit(1)
      .executeTakeFirst(),
    db
      .selectFrom('reconciliation_checks')
      .select(['order_id', 'given_up_at', 'attempts', 'last_result'])
      .where('given_up_at', 'is not', null)
      .orderBy('given_up_at', 'desc')
      .limit(PAGE_SIZE)
      .execute(),
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
    waitingOrders(db),
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
    historyDaysReady(db, now),
  ]);
  return {
    quarantined,
    quarantinedCount: bounded(quarantinedCount, COUNT_BOUND),
    quarantinedSince: quarantinedOldest?.received_at ?? null,
    givenUp: givenUp.map((g) => ({
      orderId: g.order_id,
      givenUpAt: g.given_up_at ?? now,
      attempts: g.attempts,
      lastResult: g.last_result,
    })),
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

/**
 * Whether today's and tomorrow's days of history (UTC) have their partitions: a lookup of six names in the
 * catalog, where the maintainer's gauge reads the bounds of every partition (tens of ms with a year of them).
 */
async function historyDaysReady(db: Db, now: Date): Promise<number> {
  const today = dayOf(now.getTime());
  const names = (day: string) => HISTORY_TABLES.map((table) => partitionName(table, day));
  const { rows } = await sql<{ name: string; found: boolean }>`
    SELECT name, to_regclass(quote_ident(name)) IS NOT NULL AS found
      FROM unnest(${[...names(today), ...names(addDays(today, 1))]}::text[]) AS name`.execute(db);
  const missing = new Set(rows.filter((r) => !r.found).map((r) => r.name));
  if (names(today).some((n) => missing.has(n))) return -1;
  return names(addDays(today, 1)).some((n) => missing.has(n)) ? 0 : 1;
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
