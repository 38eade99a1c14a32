import { sql } from 'kysely';
import type { Db } from '../database/pool';
import type { Disagreement, ObservedVia } from '../database/schema';
import type { DeliveryOutcome, StatusTransition } from '../domain/outcomes';

/**
 * What the console reads. Every query goes through an index and is bounded (a LIMIT, a keyset cursor, a
 * partition range); none counts over history. History rows are found through the statuses each projection
 * recorded (their notification's id and day), so only those days' partitions are read.
 */

/** What a delivery row of the console shows: the order page's and the recent deliveries' alike. */
const DELIVERY_COLUMNS = [
  'd.id',
  'd.received_at',
  sql<string | null>`host(d.source_address)`.as('source_address'),
  'd.pos_id',
  'd.key_fingerprint',
  'd.outcome',
  'd.observed_via',
  'd.notification_id',
  'd.quarantine_id',
  'd.notification_received_at',
] as const;

/** Rows a list shows at once. */
export const PAGE_SIZE = 50;

export type SearchField = 'orderId' | 'extOrderId' | 'paymentId' | 'refundId' | 'extRefundId';

export interface SearchMatch {
  orderId: string;
  field: SearchField;
  /** The refund matched, for refund ids. */
  refundId: string | null;
}

/** Each id column a person may hold, each by its own index, at most a page of matches in all. */
export async function searchIds(db: Db, q: string): Promise<SearchMatch[]> {
  const { rows } = await sql<{ order_id: string; field: SearchField; refund_id: string | null }>`
    (SELECT order_id, 'orderId' AS field, NULL::text AS refund_id FROM orders WHERE order_id = ${q})
    UNION ALL (SELECT order_id, 'extOrderId', NULL FROM orders WHERE ext_order_id = ${q} LIMIT ${PAGE_SIZE})
    UNION ALL (SELECT order_id, 'paymentId', NULL FROM orders WHERE payment_id = ${q} LIMIT ${PAGE_SIZE})
    UNION ALL (SELECT order_id, 'refundId', refund_id FROM refunds WHERE refund_id = ${q})
    UNION ALL (SELECT order_id, 'extRefundId', refund_id FROM refunds WHERE ext_refund_id = ${q} LIMIT ${PAGE_SIZE})
    LIMIT ${PAGE_SIZE}`.execute(db);
  return rows.map((r) => ({ orderId: r.order_id, field: r.field, refundId: r.refund_id }));
}

export interface DeliveryRow {
  id: string;
  receivedAt: Date;
  sourceAddress: string | null;
  posId: string;
  keyFingerprint: string;
  outcome: DeliveryOutcome;
  observedVia: ObservedVia;
  notificationId: string | null;
  quarantineId: string | null;
  /** Its notification's receive time: the day it lives in. */
  notificationReceivedAt: Date;
}

export interface NotificationRow {
  id: string;
  kind: 'order' | 'refund';
  subjectId: string;
  status: string;
  outcome: StatusTransition;
  posId: string;
  keyFingerprint: string;
  receivedAt: Date;
  observedVia: ObservedVia;
  disagreements: Disagreement[];
  bodySha256: string;
  /** null once purged. */
  body: Buffer | null;
  /** Deliveries counted without a row of their own (past the first 100). */
  repeats: number;
}

export interface EventRow {
  id: string;
  sequence: string;
  type: string;
  createdAt: Date;
  publishedAt: Date | null;
  attempts: number;
  /** null: due at once. */
  nextAttemptAt: Date | null;
  lastError: string | null;
}

export interface RefundRow {
  refundId: string;
  extRefundId: string | null;
  status: string;
  amount: string | null;
  currencyCode: string | null;
  updatedAt: Date;
}

export interface ReconciliationRow {
  observedAt: Date;
  attempts: number;
  nextCheckAt: Date | null;
  lastCheckedAt: Date | null;
  lastResult: string | null;
  givenUpAt: Date | null;
}

export interface AuditRow {
  id: string;
  at: Date;
  actor: string;
  role: 'viewer' | 'operator' | null;
  action: string;
  target: string | null;
  orderId: string | null;
  result: string;
  detail: string;
}

export interface OrderStory {
  orderId: string;
  order: {
    extOrderId: string | null;
    posId: string | null;
    status: string;
    totalAmount: string | null;
    currencyCode: string | null;
    paymentId: string | null;
    payMethodType: string | null;
    createdAt: Date;
    updatedAt: Date;
  } | null;
  refunds: RefundRow[];
  notifications: NotificationRow[];
  deliveries: DeliveryRow[];
  events: EventRow[];
  reconciliation: ReconciliationRow | null;
  audit: AuditRow[];
  /** Days whose bodies were purged, with when (YYYY-MM-DD to the purge's time). */
  purgedDays: Map<string, Date>;
}

const dayOf = (at: Date): string => at.toISOString().slice(0, 10);

/** Everything known of one order, oldest first; null when nothing is (no order, refund or audit row). */
export async function orderStory(db: Db, orderId: string): Promise<OrderStory | null> {
  const [order, refunds, events, reconciliation, audit] = await Promise.all([
    db.selectFrom('orders').selectAll().where('order_id', '=', orderId).executeTakeFirst(),
    db
      .selectFrom('refunds')
      .selectAll()
      .where('order_id', '=', orderId)
      .orderBy('created_at')
      .orderBy('refund_id')
      .limit(PAGE_SIZE)
      .execute(),
    db
      .selectFrom('outbox_events')
      .select(['id', 'sequence', 'type', 'created_at', 'published_at', 'attempts', 'last_error'])
      // '-infinity' (due at once) reads back as a string: none.
      .select((eb) => eb.fn<Date | null>('nullif', [eb.ref('next_attempt_at'), sql.lit('-infinity')]).as('due_at'))
      .where('order_id', '=', orderId)
      .orderBy('sequence')
      .limit(PAGE_SIZE * 2)
      .execute(),
    db.selectFrom('reconciliation_checks').selectAll().where('order_id', '=', orderId).executeTakeFirst(),
    auditOfOrder(db, orderId),
  ]);
  if (!order && refunds.length === 0 && audit.length === 0) return null;
  const refs = [order?.recorded ?? {}, ...refunds.map((r) => r.recorded)].flatMap((recorded) =>
    Object.values(recorded),
  );
  const ids = refs.map((r) => r.id);
  const ats = refs.map((r) => r.at);
  const inDays = (column: string) => sql<boolean>`${sql.ref(column)} = ANY(${ats}::timestamptz[])`;
  const [notifications, deliveries, purged] =
    refs.length === 0
      ? [[], [], []]
      : await Promise.all([
          db
            .selectFrom('notifications as n')
            .select([
              'n.id',
              'n.kind',
              'n.subject_id',
              'n.status',
              'n.outcome',
              'n.pos_id',
              'n.key_fingerprint',
              'n.received_at',
              'n.observed_via',
              'n.disagreements',
              'n.body_sha256',
              'n.body',
            ])
            .select((eb) =>
              eb
                .selectFrom('delivery_repeats as r')
                .select('r.deliveries')
                .whereRef('r.notification_id', '=', 'n.id')
                .as('repeats'),
            )
            .where(inDays('n.received_at'))
            .where(sql<boolean>`n.id = ANY(${ids}::bigint[])`)
            .orderBy('n.received_at')
            .orderBy('n.id')
            .execute(),
          db
            .selectFrom('deliveries as d')
            .select(DELIVERY_COLUMNS)
            .where(inDays('d.notification_received_at'))
            .where(sql<boolean>`d.notification_id = ANY(${ids}::bigint[])`)
            .orderBy('d.id')
            .limit(PAGE_SIZE * 4)
            .execute(),
          db
            .selectFrom('history_bodies_purged')
            .select([sql<string>`to_char(day, 'YYYY-MM-DD')`.as('day'), 'purged_at'])
            .where(sql<boolean>`day = ANY(${[...new Set(ats.map((at) => dayOf(new Date(at))))]}::date[])`)
            .execute(),
        ]);
  return {
    orderId,
    order: order
      ? {
          extOrderId: order.ext_order_id,
          posId: order.merchant_pos_id,
          status: order.status,
          totalAmount: order.total_amount,
          currencyCode: order.currency_code,
          paymentId: order.payment_id,
          payMethodType: order.pay_method_type,
          createdAt: order.created_at,
          updatedAt: order.updated_at,
        }
      : null,
    refunds: refunds.map((r) => ({
      refundId: r.refund_id,
      extRefundId: r.ext_refund_id,
      status: r.status,
      amount: r.amount,
      currencyCode: r.currency_code,
      updatedAt: r.updated_at,
    })),
    notifications: notifications.map((n) => ({
      id: n.id,
      kind: n.kind,
      subjectId: n.subject_id,
      status: n.status,
      outcome: n.outcome,
      posId: n.pos_id,
      keyFingerprint: n.key_fingerprint,
      receivedAt: n.received_at,
      observedVia: n.observed_via,
      disagreements: n.disagreements ?? [],
      bodySha256: n.body_sha256.toString('hex'),
      body: n.body,
      repeats: Number(n.repeats ?? 0),
    })),
    deliveries: deliveries.map(deliveryFromRow),
    events: events.map((e) => ({
      id: e.id,
      sequence: e.sequence,
      type: e.type,
      createdAt: e.created_at,
      publishedAt: e.published_at,
      attempts: e.attempts,
      nextAttemptAt: e.due_at,
      lastError: e.last_error,
    })),
    reconciliation: reconciliation
      ? {
          observedAt: reconciliation.observed_at,
          attempts: reconciliation.attempts,
          nextCheckAt: reconciliation.next_check_at,
          lastCheckedAt: reconciliation.last_checked_at,
          lastResult: reconciliation.last_result,
          givenUpAt: reconciliation.given_up_at,
        }
      : null,
    audit,
    purgedDays: new Map(purged.map((p) => [p.day, p.purged_at])),
  };
}

function deliveryFromRow(d: {
  id: string;
  received_at: Date;
  source_address: string | null;
  pos_id: string;
  key_fingerprint: string;
  outcome: DeliveryOutcome;
  observed_via: ObservedVia;
  notification_id: string | null;
  quarantine_id: string | null;
  notification_received_at: Date;
}): DeliveryRow {
  return {
    id: d.id,
    receivedAt: d.received_at,
    sourceAddress: d.source_address,
    posId: d.pos_id,
    keyFingerprint: d.key_fingerprint,
    outcome: d.outcome,
    observedVia: d.observed_via,
    notificationId: d.notification_id,
    quarantineId: d.quarantine_id,
    notificationReceivedAt: d.notification_received_at,
  };
}

const auditFromRow = (a: {
  id: string;
  at: Date;
  actor: string;
  role: 'viewer' | 'operator' | null;
  action: string;
  target: string | null;
  order_id: string | null;
  result: string;
  detail: string;
}): AuditRow => ({
  id: a.id,
  at: a.at,
  actor: a.actor,
  role: a.role,
  action: a.action,
  target: a.target,
  orderId: a.order_id,
  result: a.result,
  detail: a.detail,
});

async function auditOfOrder(db: Db, orderId: string): Promise<AuditRow[]> {
  const rows = await db
    .selectFrom('console_audit')
    .selectAll()
    .where('order_id', '=', orderId)
    .orderBy('id')
    .limit(PAGE_SIZE)
    .execute();
  return rows.map(auditFromRow);
}

/** The audit trail, newest first, a page after the cursor (an audit id). */
export async function auditPage(db: Db, before: string | null): Promise<AuditRow[]> {
  let query = db
    .selectFrom('console_audit')
    .selectAll()
    .orderBy('id', 'desc')
    .limit(PAGE_SIZE + 1);
  if (before !== null) query = query.where('id', '<', before);
  return (await query.execute()).map(auditFromRow);
}

export interface DeliveryFilter {
  outcome: DeliveryOutcome | null;
  posId: string | null;
  from: Date;
  to: Date;
  /** A delivery id: the page starts below it. */
  before: string | null;
}

/**
 * How long before a delivery its notification may have been first received (the partition it lives in): the
 * sender retries for 72 hours; a day more for slack. A repeat later than that is not listed.
 */
const DELIVERY_AFTER_FIRST_MS = 4 * 86_400_000;

/** Recent deliveries, newest first, within a bounded window (its days' partitions only). */
export async function deliveriesPage(db: Db, filter: DeliveryFilter): Promise<DeliveryRow[]> {
  let query = db
    .selectFrom('deliveries as d')
    .select(DELIVERY_COLUMNS)
    .where('d.notification_received_at', '>=', new Date(filter.from.getTime() - DELIVERY_AFTER_FIRST_MS))
    .where('d.notification_received_at', '<', filter.to)
    .where('d.received_at', '>=', filter.from)
    .where('d.received_at', '<', filter.to)
    .orderBy('d.id', 'desc')
    .limit(PAGE_SIZE + 1);
  if (filter.outcome !== null) query = query.where('d.outcome', '=', filter.outcome);
  if (filter.posId !== null) query = query.where('d.pos_id', '=', filter.posId);
  if (filter.before !== null) query = query.where('d.id', '<', filter.before);
  return (await query.execute()).map(deliveryFromRow);
}

/** The order a delivery concerns, for links from lists: through its notification, in its day. */
export async function ordersOfNotifications(
  db: Db,
  refs: ReadonlyArray<{ id: string; at: Date }>,
): Promise<Map<string, string>> {
  if (refs.length === 0) return new Map();
  const rows = await db
    .selectFrom('notifications')
    .select(['id', 'order_id'])
    .where(sql<boolean>`received_at = ANY(${refs.map((r) => r.at.toISOString())}::timestamptz[])`)
    .where(sql<boolean>`id = ANY(${refs.map((r) => r.id)}::bigint[])`)
    .execute();
  return new Map(rows.map((r) => [r.id, r.order_id]));
}

export interface QuarantineRow {
  id: string;
  receivedAt: Date;
  reason: string;
  detail: string;
  posId: string;
}

/** Filter of the quarantined notifications a bulk retry takes: open ones, optionally of one reason or POS. */
export interface QuarantineFilter {
  reason: string | null;
  posId: string | null;
}

function openQuarantine(db: Db, filter: QuarantineFilter) {
  let query = db.selectFrom('quarantined_notifications').where('resolved_at', 'is', null);
  if (filter.reason !== null) query = query.where('reason', '=', filter.reason);
  if (filter.posId !== null) query = query.where('pos_id', '=', filter.posId);
  return query;
}

/** Open quarantined notifications, newest first. */
export async function openQuarantined(db: Db, filter: QuarantineFilter, limit = PAGE_SIZE): Promise<QuarantineRow[]> {
  const rows = await openQuarantine(db, filter)
    .select(['id', 'received_at', 'reason', 'detail', 'pos_id'])
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
  return rows.map((q) => ({
    id: q.id,
    receivedAt: q.received_at,
    reason: q.reason,
    detail: q.detail,
    posId: q.pos_id,
  }));
}

/** How many open quarantined notifications match, counted up to `bound` + 1 (more: "more than bound"). */
export async function countOpenQuarantined(db: Db, filter: QuarantineFilter, bound: number): Promise<number> {
  const { rows } = await sql<{ n: string }>`SELECT count(*) AS n FROM (${openQuarantine(db, filter)
    .select('id')
    .limit(bound + 1)}) AS matching`.execute(db);
  return Number(rows[0]?.n ?? 0);
}

/** The ids of the open quarantined notifications matching, oldest first, at most `bound`. */
export async function openQuarantinedIds(db: Db, filter: QuarantineFilter, bound: number): Promise<string[]> {
  const rows = await openQuarantine(db, filter).select('id').orderBy('id').limit(bound).execute();
  return rows.map((r) => r.id);
}

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
  pending: OutboxLag;
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
async function outboxLag(db: Db): Promise<OutboxLag> {
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
  const [quarantined, givenUp, troubled, pending, last] = await Promise.all([
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
    outboxLag(db),
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
    pending,
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

export interface Overview {
  /** Today's deliveries (of notifications first received today: today's partition only), by outcome. */
  byOutcome: Array<{ outcome: DeliveryOutcome; count: number }>;
  /** The same, by hour of the day (UTC), for the chart. */
  byHour: number[];
  pending: OutboxLag;
}

export async function overview(db: Db, now: Date): Promise<Overview> {
  const today = new Date(`${dayOf(now)}T00:00:00Z`);
  const [rows, pending] = await Promise.all([
    db
      .selectFrom('deliveries')
      .select(['outcome', sql<number>`extract(hour from received_at AT TIME ZONE 'UTC')::int`.as('hour')])
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('notification_received_at', '>=', today)
      // The days ahead already exist (empty): pruned, so only today's partition is read.
      .where('notification_received_at', '<', new Date(today.getTime() + 86_400_000))
      .where('received_at', '>=', today)
      .groupBy(['outcome', 'hour'])
      .execute(),
    outboxLag(db),
  ]);
  const byOutcome = new Map<DeliveryOutcome, number>();
  const byHour = Array.from({ length: 24 }, () => 0);
  for (const r of rows) {
    byOutcome.set(r.outcome, (byOutcome.get(r.outcome) ?? 0) + Number(r.n));
    byHour[r.hour] = (byHour[r.hour] ?? 0) + Number(r.n);
  }
  return {
    byOutcome: [...byOutcome].map(([outcome, count]) => ({ outcome, count })),
    byHour,
    pending,
  };
}
