import { sql } from 'kysely';
import type { Db } from '../../database/pool';
import type { Disagreement, ObservedVia } from '../../database/schema';
import type { StatusTransition } from '../../domain/outcomes';
import {
  auditFromRow,
  dayOf,
  DELIVERY_COLUMNS,
  deliveryFromRow,
  PAGE_SIZE,
  type AuditRow,
  type DeliveryRow,
} from './rows';

/** The order page: everything known of one order, its refunds, history, events, checks and audit. */

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
  /** The latest audit rows of the order, oldest first (a page of them). */
  audit: AuditRow[];
  /** Checks people asked for (the console's Check now, and any other path the audit records), and the latest. */
  checksByHand: { count: number; last: AuditRow | null };
  /** Days whose bodies were purged, with when (YYYY-MM-DD to the purge's time). */
  purgedDays: Map<string, Date>;
}

/** Everything known of one order, oldest first; null when nothing is (no order, refund or audit row). */
export async function orderStory(db: Db, orderId: string): Promise<OrderStory | null> {
  const [order, refunds, events, reconciliation, audit, checksByHand] = await Promise.all([
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
    checksByHandOf(db, orderId),
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
    checksByHand,
    purgedDays: new Map(purged.map((p) => [p.day, p.purged_at])),
  };
}

/** The latest PAGE_SIZE audit rows of the order (console_audit_by_order, newest first), oldest first. */
async function auditOfOrder(db: Db, orderId: string): Promise<AuditRow[]> {
  const rows = await db
    .selectFrom('console_audit')
    .selectAll()
    .where('order_id', '=', orderId)
    .orderBy('id', 'desc')
    .limit(PAGE_SIZE)
    .execute();
  return rows.map(auditFromRow).reverse();
}

/** The checks of the order people asked for, counted (up to a bound), and the latest one. */
async function checksByHandOf(db: Db, orderId: string): Promise<{ count: number; last: AuditRow | null }> {
  const byHand = db
    .selectFrom('console_audit')
    .where('order_id', '=', orderId)
    .where('action', '=', CHECK_ACTION)
    .orderBy('id', 'desc');
  const [counted, last] = await Promise.all([
    db
      .selectFrom(byHand.select('id').limit(CHECKS_COUNTED).as('checks'))
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .executeTakeFirst(),
    byHand.selectAll().limit(1).executeTakeFirst(),
  ]);
  return { count: Number(counted?.n ?? 0), last: last ? auditFromRow(last) : null };
}

/** The audit's action for a check asked for by a person (the console's, and others' when they are audited). */
export const CHECK_ACTION = 'reconcile';
/** Checks by hand counted at most (a person does not check one order a thousand times). */
const CHECKS_COUNTED = 1000;

/** An order as it stands now, for an action's result: its status, whether anything of it is open, its checks. */
export interface OrderNow {
  status: string | null;
  updatedAt: Date | null;
  /** The order, or a refund of it, is not final. */
  open: boolean;
  /** Its last change, or its refunds'. */
  lastChange: Date | null;
  nextCheckAt: Date | null;
  givenUpAt: Date | null;
}

export async function orderNow(db: Db, orderId: string): Promise<OrderNow> {
  const [order, refunds, check] = await Promise.all([
    db.selectFrom('orders').select(['status', 'updated_at']).where('order_id', '=', orderId).executeTakeFirst(),
    db
      .selectFrom('refunds')
      .select(['status', 'updated_at'])
      .where('order_id', '=', orderId)
      .limit(PAGE_SIZE)
      .execute(),
    db
      .selectFrom('reconciliation_checks')
      .select(['next_check_at', 'given_up_at'])
      .where('order_id', '=', orderId)
      .executeTakeFirst(),
  ]);
  const changes = [order?.updated_at, ...refunds.map((r) => r.updated_at)].filter((d): d is Date => d !== undefined);
  return {
    status: order?.status ?? null,
    updatedAt: order?.updated_at ?? null,
    open:
      (order !== undefined && order.status !== 'COMPLETED' && order.status !== 'CANCELED') ||
      refunds.some((r) => r.status === 'PENDING'),
    lastChange: changes.length === 0 ? null : new Date(Math.max(...changes.map((d) => d.getTime()))),
    nextCheckAt: check?.next_check_at ?? null,
    givenUpAt: check?.given_up_at ?? null,
  };
}
