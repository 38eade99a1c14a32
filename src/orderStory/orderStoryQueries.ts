import { sql, type Selectable } from 'kysely';
import { jsonArrayFrom } from 'kysely/helpers/postgres';
import { columnsOf, type ColumnRef } from '../database/columns';
import type { Db } from '../database/pool';
import type { DeliveriesTable, Disagreement, ObservedVia, RecordedStatuses } from '../database/schema';
import type { DeliveryOutcome, StatusTransition } from '../domain/outcomes';
import { actionsOnOrder, auditOfOrder, CHECK_ACTION, type AuditRow } from '../audit/auditQueries';
import { eventsOfOrder, type StoredEventRow } from '../outbox/outboxQueries';
import { scheduleOf, type ScheduleEntry } from '../reconciliation/scheduleQueries';
import type { OrderProjection, RefundProjection } from '../recording/projection';
import { orderFromRow, refundFromRow } from '../recording/projectionRows';

/**
 * The one reader of an order's story: its projection and its refunds', every notification recorded for them with
 * its variants and deliveries, its events, its place in the reconciliation schedule and what people did to it in
 * the console. The console's order page, the admin API's order and refund and `inspect` all read it here.
 *
 * History is found through the projections (decision 0012): each keeps the statuses recorded for it, with their
 * notification's id and day, so only those days' partitions are read, whatever the history's age. A status whose
 * day retention removed is not in the story. Every part is read through an index and bounded.
 */

/** How much of each part is read at most: far more than a real order has (no one checks an order a thousand times). */
const MOST = { refunds: 1000, events: 1000, deliveries: 1000, audit: 200, checksByHand: 1000 } as const;

/** A projection's own times: first recorded, and last moved. */
interface Times {
  createdAt: Date;
  updatedAt: Date;
}

export type StoryOrder = OrderProjection & Times;
export type StoryRefund = RefundProjection & Times;

/** A body kept beside its notification: the same meaning, other bytes (sql/004). */
export interface StoryVariant {
  bodySha256: string;
  /** null once purged. */
  bodyBytes: number | null;
  firstReceivedAt: Date;
}

export interface StoryNotification {
  id: string;
  kind: 'order' | 'refund';
  subjectId: string;
  status: string;
  outcome: StatusTransition;
  posId: string;
  keyFingerprint: string;
  receivedAt: Date;
  observedVia: ObservedVia;
  /** Facts it stated otherwise than the projection keeps (the projection kept its own values). */
  disagreements: Disagreement[];
  bodySha256: string;
  /** null once purged. */
  body: Buffer | null;
  variants: StoryVariant[];
  /** Every delivery of it, those counted without a row of their own (past the first 100) included. */
  deliveries: number;
  /** The deliveries counted without a row: how many, the first and the last; null when none. */
  repeated: { count: number; firstAt: Date; lastAt: Date } | null;
}

export interface DeliveryRow {
  id: string;
  receivedAt: Date;
  sourceAddress: string | null;
  processingTimeMs: number | null;
  posId: string;
  keyFingerprint: string;
  bodySha256: string;
  outcome: DeliveryOutcome;
  observedVia: ObservedVia;
  notificationId: string | null;
  quarantineId: string | null;
  /** Its notification's receive time: the day it lives in. */
  notificationReceivedAt: Date;
}

export interface OrderStory {
  orderId: string;
  /** null when only its refunds were recorded. */
  order: StoryOrder | null;
  refunds: StoryRefund[];
  /** Oldest first. */
  notifications: StoryNotification[];
  /** The delivery rows, oldest first, at most MOST.deliveries (each notification counts all of its own). */
  deliveries: DeliveryRow[];
  /** In sequence; published ones are deleted after OUTBOX_RETENTION. */
  events: StoredEventRow[];
  reconciliation: ScheduleEntry | null;
  audit: AuditRow[];
  /** The checks people asked for in the console (counted up to a thousand), and the latest. */
  checksByHand: { count: number; last: AuditRow | null };
  /** Days whose bodies were purged, with when (YYYY-MM-DD to the purge's time). */
  purgedDays: Map<string, Date>;
}

/** What a delivery row shows: the story's and the console's recent deliveries alike. */
export const DELIVERY_COLUMNS = [
  'd.id',
  'd.received_at',
  sql<string | null>`host(${columnsOf('deliveries', 'd')('source_address')})`.as('source_address'),
  'd.processing_time_ms',
  'd.pos_id',
  'd.key_fingerprint',
  'd.body_sha256',
  'd.outcome',
  'd.observed_via',
  'd.notification_id',
  'd.quarantine_id',
  'd.notification_received_at',
] as const;

/** A deliveries row as DELIVERY_COLUMNS select it. */
type SelectedDelivery = Pick<
  Selectable<DeliveriesTable>,
  | 'id'
  | 'received_at'
  | 'source_address'
  | 'processing_time_ms'
  | 'pos_id'
  | 'key_fingerprint'
  | 'body_sha256'
  | 'outcome'
  | 'observed_via'
  | 'notification_id'
  | 'quarantine_id'
  | 'notification_received_at'
>;

export const deliveryFromRow = (d: SelectedDelivery): DeliveryRow => ({
  id: d.id,
  receivedAt: d.received_at,
  sourceAddress: d.source_address,
  processingTimeMs: d.processing_time_ms,
  posId: d.pos_id,
  keyFingerprint: d.key_fingerprint,
  bodySha256: d.body_sha256.toString('hex'),
  outcome: d.outcome,
  observedVia: d.observed_via,
  notificationId: d.notification_id,
  quarantineId: d.quarantine_id,
  notificationReceivedAt: d.notification_received_at,
});

/** The day (UTC, YYYY-MM-DD) a time falls on: a history partition's. */
export const dayOf = (at: Date): string => at.toISOString().slice(0, 10);

/** The order a refund was recorded under; null when no such refund was. */
export async function orderOfRefund(db: Db, refundId: string): Promise<string | null> {
  const row = await db.selectFrom('refunds').select('order_id').where('refund_id', '=', refundId).executeTakeFirst();
  return row?.order_id ?? null;
}

const n = columnsOf('notifications', 'n');
const d = columnsOf('deliveries', 'd');
const v = columnsOf('notification_variants', 'v');
const purgedDay = columnsOf('history_bodies_purged')('day');

/** Everything known of one order, oldest first; null when nothing is (no order, refund or audit row). */
export async function readOrderStory(db: Db, orderId: string): Promise<OrderStory | null> {
  const [order, refunds, events, reconciliation, audit, checksByHand] = await Promise.all([
    db.selectFrom('orders').selectAll().where('order_id', '=', orderId).executeTakeFirst(),
    db
      .selectFrom('refunds')
      .selectAll()
      .where('order_id', '=', orderId)
      .orderBy('created_at')
      .orderBy('refund_id')
      .limit(MOST.refunds)
      .execute(),
    eventsOfOrder(db, orderId, MOST.events),
    scheduleOf(db, orderId),
    auditOfOrder(db, orderId, MOST.audit),
    actionsOnOrder(db, orderId, CHECK_ACTION, MOST.checksByHand),
  ]);
  if (!order && refunds.length === 0 && audit.length === 0) return null;
  const history = await historyOf(db, [order?.recorded ?? {}, ...refunds.map((r) => r.recorded)]);
  return {
    orderId,
    order: order ? { ...orderFromRow(order), createdAt: order.created_at, updatedAt: order.updated_at } : null,
    refunds: refunds.map((r) => ({ ...refundFromRow(r), createdAt: r.created_at, updatedAt: r.updated_at })),
    ...history,
    events,
    reconciliation,
    audit,
    checksByHand,
  };
}

/**
 * The notifications the projections recorded (each by its id, in its day), with what lives in the same days:
 * their variants, deliveries and repeats counted, the delivery rows, and whether the days' bodies were purged.
 */
async function historyOf(
  db: Db,
  recorded: readonly RecordedStatuses[],
): Promise<Pick<OrderStory, 'notifications' | 'deliveries' | 'purgedDays'>> {
  const places = recorded.flatMap((statuses) => Object.values(statuses));
  if (places.length === 0) return { notifications: [], deliveries: [], purgedDays: new Map() };
  const ids = places.map((p) => p.id);
  const ats = places.map((p) => p.at);
  /** The days' partitions only: planned with these values, so the others are pruned at planning. */
  const inDays = (column: ColumnRef) => sql<boolean>`${column} = ANY(${ats}::timestamptz[])`;
  const [notifications, deliveries, purged] = await Promise.all([
    db
      .selectFrom('notifications as n')
      .leftJoin('delivery_repeats as r', 'r.notification_id', 'n.id')
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
        'r.deliveries as repeats',
        'r.first_at as repeats_first_at',
        'r.last_at as repeats_last_at',
      ])
      .select((eb) => [
        eb
          .selectFrom('deliveries as d')
          .select((c) => c.fn.countAll<string>().as('c'))
          .where(inDays(d('notification_received_at')))
          .whereRef('d.notification_received_at', '=', 'n.received_at')
          .whereRef('d.notification_id', '=', 'n.id')
          .as('delivery_rows'),
        jsonArrayFrom(
          eb
            .selectFrom('notification_variants as v')
            .select((c) => [
              c.fn<string>('encode', ['v.body_sha256', sql.lit('hex')]).as('body_sha256'),
              c.fn<number | null>('octet_length', ['v.body']).as('body_bytes'),
              'v.first_received_at',
            ])
            .where(inDays(v('notification_received_at')))
            .whereRef('v.notification_received_at', '=', 'n.received_at')
            .whereRef('v.notification_id', '=', 'n.id')
            .orderBy('v.first_received_at'),
        ).as('variants'),
      ])
      .where(inDays(n('received_at')))
      .where(sql<boolean>`${n('id')} = ANY(${ids}::bigint[])`)
      .orderBy('n.received_at')
      .orderBy('n.id')
      .execute(),
    db
      .selectFrom('deliveries as d')
      .select(DELIVERY_COLUMNS)
      .where(inDays(d('notification_received_at')))
      .where(sql<boolean>`${d('notification_id')} = ANY(${ids}::bigint[])`)
      .orderBy('d.id')
      .limit(MOST.deliveries)
      .execute(),
    db
      .selectFrom('history_bodies_purged')
      .select([sql<string>`to_char(${purgedDay}, 'YYYY-MM-DD')`.as('day'), 'purged_at'])
      .where(sql<boolean>`${purgedDay} = ANY(${[...new Set(ats.map((at) => dayOf(new Date(at))))]}::date[])`)
      .execute(),
  ]);
  return {
    notifications: notifications.map((row) => ({
      id: row.id,
      kind: row.kind,
      subjectId: row.subject_id,
      status: row.status,
      outcome: row.outcome,
      posId: row.pos_id,
      keyFingerprint: row.key_fingerprint,
      receivedAt: row.received_at,
      observedVia: row.observed_via,
      disagreements: row.disagreements ?? [],
      bodySha256: row.body_sha256.toString('hex'),
      body: row.body,
      variants: row.variants.map((variant) => ({
        bodySha256: variant.body_sha256,
        bodyBytes: variant.body_bytes,
        firstReceivedAt: new Date(variant.first_received_at),
      })),
      deliveries: Number(row.delivery_rows ?? 0) + Number(row.repeats ?? 0),
      repeated:
        row.repeats === null || row.repeats_first_at === null || row.repeats_last_at === null
          ? null
          : { count: Number(row.repeats), firstAt: row.repeats_first_at, lastAt: row.repeats_last_at },
    })),
    deliveries: deliveries.map(deliveryFromRow),
    purgedDays: new Map(purged.map((p) => [p.day, p.purged_at])),
  };
}
