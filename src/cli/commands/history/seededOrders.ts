import { createHash, randomUUID } from 'node:crypto';
import type {
  Database,
  DeliveriesTable,
  OrderOwnersTable,
  OrdersTable,
  OutboxEventsTable,
  ReconciliationChecksTable,
  RefundsTable,
} from '../../../database/schema';
import type { StatusTransition } from '../../../domain/outcomes';
import { buildEvent, statusEventType, type OrderEventData, type RefundEventData } from '../../../outbox/events';
import { notificationSubject, type Notification } from '../../../parsing/notification';
import { parseNotification } from '../../../parsing/parseNotification';
import {
  DELIVERY_COLUMNS,
  NOTIFICATION_COLUMNS,
  ORDER_COLUMNS,
  OUTBOX_COLUMNS,
  OWNER_COLUMNS,
  REFUND_COLUMNS,
  STREAM_COLUMNS,
  byteaText,
  type DeliveryRow,
  type NotificationRow,
  type OrderWriteRow,
  type OutboxRow,
  type OwnerRow,
  type RefundWriteRow,
  type StreamRow,
} from '../../../recording/batchRows';
import {
  applyOrder,
  applyRefund,
  orderEventData,
  refundEventData,
  type OrderProjection,
  type RefundProjection,
} from '../../../recording/projection';
import { orderToRow, refundToRow } from '../../../recording/projectionRows';
import { buildLifecycle, type LifecyclePlan } from '../../../simulator/lifecycle';
import { chance, pick, randomInt, type Random } from '../../../simulator/random';

/**
 * A year of history, order by order, as the recorder would have left it (issue 30): the same rows, typed and
 * listed by the recorder's own row types (src/recording/batchRows.ts), built from the simulator's bodies through
 * the service's own parser and projection rules. Pure apart from `random` and the event ids.
 *
 * - About 70 % of orders go PENDING (then WAITING_FOR_CONFIRMATION when not auto-received) to COMPLETED, 5 % are
 *   CANCELED, 25 % stay PENDING (abandoned checkouts); a tenth of the completed ones get a refund.
 * - About 20 % of deliveries are repeats of a notification already recorded.
 * - Raw bodies are kept only for days the body retention has not reached; events are published, and kept in the
 *   outbox only within its retention; open orders last observed within the reconciler's give-up time are in its
 *   schedule.
 */

/** What is fixed for a whole seeding run. */
export interface SeedSettings {
  /** The POS every order belongs to, and the fingerprint of the key its notifications were signed with. */
  posId: string;
  keyFingerprint: string;
  /** EVENT_SOURCE. */
  eventSource: string;
  nowMs: number;
  /** Days (UTC) before this one have had their bodies purged (BODY_RETENTION); null: bodies are kept. */
  bodiesFromMs: number | null;
  /** Published events created before this were deleted from the outbox (OUTBOX_RETENTION). */
  outboxFromMs: number;
  /** Open orders last observed before this were given up and forgotten by the reconciler (RECONCILE_GIVE_UP). */
  scheduleFromMs: number;
}

/** Columns the recorder leaves to now() and the seeder writes, as timestamptz text. */
type Times<Table, C extends keyof Table> = { [K in C]: string };

/** The rows the seeder writes: the recorder's, with the times it takes from now() given. */
export type SeedDeliveryRow = DeliveryRow & Times<DeliveriesTable, 'received_at'>;
export type SeedOrderRow = OrderWriteRow & Times<OrdersTable, 'created_at' | 'updated_at'>;
export type SeedRefundRow = RefundWriteRow & Times<RefundsTable, 'created_at' | 'updated_at'>;
export type SeedOwnerRow = OwnerRow & Times<OrderOwnersTable, 'bound_at'>;
/** An outbox row as the seeder writes it: the message as its text, published. */
export type SeedOutboxRow = Omit<OutboxRow, 'message'> & { message: string } & Times<
    OutboxEventsTable,
    'created_at' | 'published_at'
  >;
export type SeedCheckRow = Pick<ReconciliationChecksTable, 'order_id'> &
  Times<ReconciliationChecksTable, 'observed_at' | 'next_check_at'>;

/** The rows of many orders, by table. */
export interface SeedRows {
  notifications: NotificationRow[];
  deliveries: SeedDeliveryRow[];
  orders: SeedOrderRow[];
  refunds: SeedRefundRow[];
  owners: SeedOwnerRow[];
  streams: StreamRow[];
  events: SeedOutboxRow[];
  checks: SeedCheckRow[];
}

/** A table the seeder writes, with its columns: the recorder's lists (batchRows.ts) and the times. */
export interface SeedTable<Row> {
  table: keyof Database;
  columns: ReadonlyArray<keyof Row & string>;
}

const seedTable = <Row>(
  table: keyof Database,
  ...lists: ReadonlyArray<ReadonlyArray<keyof Row & string>>
): SeedTable<Row> => ({ table, columns: lists.flat() });

export const SEED_TABLES: { [K in keyof SeedRows]: SeedTable<SeedRows[K][number]> } = {
  notifications: seedTable<NotificationRow>('notifications', NOTIFICATION_COLUMNS),
  deliveries: seedTable<SeedDeliveryRow>('deliveries', DELIVERY_COLUMNS, ['received_at']),
  orders: seedTable<SeedOrderRow>('orders', ORDER_COLUMNS, ['created_at', 'updated_at']),
  refunds: seedTable<SeedRefundRow>('refunds', REFUND_COLUMNS, ['created_at', 'updated_at']),
  owners: seedTable<SeedOwnerRow>('order_owners', OWNER_COLUMNS, ['bound_at']),
  streams: seedTable<StreamRow>('event_streams', STREAM_COLUMNS),
  events: seedTable<SeedOutboxRow>('outbox_events', OUTBOX_COLUMNS, ['created_at', 'published_at']),
  checks: seedTable<SeedCheckRow>('reconciliation_checks', ['order_id', 'observed_at', 'next_check_at']),
};

export const emptyRows = (): SeedRows => ({
  notifications: [],
  deliveries: [],
  orders: [],
  refunds: [],
  owners: [],
  streams: [],
  events: [],
  checks: [],
});

/** The payment service's sending addresses (spec, "Notifications"). */
const SENDER_ADDRESSES = [
  '185.68.12.10',
  '185.68.12.11',
  '185.68.12.12',
  '185.68.12.26',
  '185.68.12.27',
  '185.68.12.28',
];

/** The first attempt reaches the receiver this long after the status changed. */
const DELIVERY_DELAY_MS = { min: 50, max: 3_000 };
/** A repeat comes this long after the first delivery (the sender retrying a lost answer, a replay). */
const REPEAT_DELAY_MS = { min: 1_000, max: 6 * 3_600_000 };
/** The relay publishes this long after the commit. */
const PUBLISH_DELAY_MS = { min: 5, max: 200 };
/** An open order in the reconciler's schedule is due within this long. */
const CHECK_SPREAD_MS = 3_600_000;

const iso = (ms: number): string => new Date(ms).toISOString();

/** What happens to one order: completed (70 %), canceled (5 %), abandoned at PENDING (25 %). */
function planOf(
  random: Random,
  posId: string,
  createdMs: number,
  nextId: () => string,
): { plan: LifecyclePlan; abandoned: boolean } {
  const roll = random();
  const completed = roll < 0.7;
  const abandoned = roll >= 0.75;
  const plan: LifecyclePlan = {
    posId,
    notifyUrl: 'https://shop.example/payments/notify',
    payMethod: pick(random, ['pbl', 'card', 'blik'] as const),
    autoReceive: chance(random, 0.7),
    outcome: completed || abandoned ? 'COMPLETED' : 'CANCELED',
    totalAmount: String(randomInt(random, 100, 250_000)),
    currencyCode: 'PLN',
    refunds:
      completed && chance(random, 0.1)
        ? [{ status: chance(random, 0.95) ? 'FINALIZED' : 'CANCELED', refundId: refundIdOf(nextId()) }]
        : [],
    gapMs: randomInt(random, 2_000, 180_000),
    startMs: 0,
    runStartedAt: new Date(createdMs),
  };
  return { plan, abandoned };
}

/**
 * A refund id the payment service's way (digits), unique across the seeded history: drawn from the notification
 * ids (random ones collide by the tens of thousands over a year).
 */
const refundIdOf = (id: string): string => String(6_000_000_000n + BigInt(id));

/** How many repeats a notification gets: none for 80 %, one for 20 %, two for 2.5 % (20 % of deliveries). */
function repeatsOf(random: Random): number {
  const roll = random();
  return roll < 0.2 ? 1 : roll < 0.225 ? 2 : 0;
}

/** Every seeded status moves its projection forward (the simulator's lifecycles do): the rows below rely on it. */
function appliedOrThrow(outcome: StatusTransition): void {
  if (outcome !== 'applied')
    throw new Error(`a seeded status was ${outcome}: the simulator's lifecycle went backwards`);
}

/** A projection and the statuses recorded for it, as an order's or refund's notifications build it. */
interface Projected<P> {
  projection: P;
  recorded: Record<string, { id: string; at: string }>;
  firstMs: number;
  lastMs: number;
}

/**
 * One order's history, appended to `rows`: its notifications received from `createdMs` on (those that would
 * arrive after now are left out: the order is still going on), their deliveries, its projections, owner, event
 * stream, and what the outbox and the reconciler's schedule still hold of it. `nextId` hands out notification
 * ids. Answers the order's id, or null when none of its notifications would have arrived yet.
 */
export function seedOrder(
  settings: SeedSettings,
  random: Random,
  createdMs: number,
  nextId: () => string,
  rows: SeedRows,
): string | null {
  const { plan, abandoned } = planOf(random, settings.posId, createdMs, nextId);
  const lifecycle = buildLifecycle(plan, random);
  const sent = abandoned ? lifecycle.notifications.slice(0, 1) : lifecycle.notifications;

  let order: Projected<OrderProjection> | undefined;
  const refunds = new Map<string, Projected<RefundProjection>>();
  let sequence = 0;
  for (const simulated of sent) {
    const receivedMs =
      createdMs + simulated.changedAtMs + randomInt(random, DELIVERY_DELAY_MS.min, DELIVERY_DELAY_MS.max);
    if (receivedMs > settings.nowMs) break;
    const parsed = parseNotification(simulated.body);
    if (!parsed.ok) throw new Error(`the simulator wrote a body the parser refuses: ${parsed.detail}`);
    const n: Notification = parsed.notification;
    const id = nextId();
    const at = iso(receivedMs);
    sequence += 1;

    // The event as the recorder built it, when the outbox still holds it.
    let event: () => OrderEventData | RefundEventData;
    if (n.kind === 'order') {
      const t = applyOrder(order?.projection, n, settings.posId);
      appliedOrThrow(t.outcome);
      order = {
        projection: t.projection,
        recorded: { ...order?.recorded, [n.status]: { id, at } },
        firstMs: order?.firstMs ?? receivedMs,
        lastMs: receivedMs,
      };
      event = () => orderEventData(n, t.projection, t.previousStatus, sequence, id, 'notification');
    } else {
      const before = refunds.get(n.refundId);
      const t = applyRefund(before?.projection, n);
      appliedOrThrow(t.outcome);
      refunds.set(n.refundId, {
        projection: t.projection,
        recorded: { ...before?.recorded, [n.status]: { id, at } },
        firstMs: before?.firstMs ?? receivedMs,
        lastMs: receivedMs,
      });
      event = () => refundEventData(n, t.projection, t.previousStatus, sequence, id, 'notification');
    }

    const bodySha256 = createHash('sha256').update(simulated.body).digest();
    const keepBody = settings.bodiesFromMs === null || receivedMs >= settings.bodiesFromMs;
    rows.notifications.push({
      id,
      received_at: at,
      kind: n.kind,
      subject_id: notificationSubject(n),
      status: n.status,
      order_id: n.orderId,
      outcome: 'applied',
      pos_id: settings.posId,
      key_fingerprint: settings.keyFingerprint,
      body: keepBody ? byteaText(simulated.body) : null,
      body_sha256: byteaText(bodySha256),
      parsed: n,
      disagreements: null,
      observed_via: 'notification',
    });
    const delivery = (deliveredAt: string, outcome: 'accepted' | 'duplicate'): SeedDeliveryRow => ({
      notification_received_at: at,
      received_at: deliveredAt,
      source_address: pick(random, SENDER_ADDRESSES),
      processing_time_ms: simulated.processingTimeMs,
      pos_id: settings.posId,
      key_fingerprint: settings.keyFingerprint,
      body_sha256: byteaText(bodySha256),
      outcome,
      notification_id: id,
      quarantine_id: null,
      observed_via: 'notification',
    });
    rows.deliveries.push(delivery(at, 'accepted'));
    for (let r = repeatsOf(random); r > 0; r--) {
      const repeatMs = receivedMs + randomInt(random, REPEAT_DELAY_MS.min, REPEAT_DELAY_MS.max);
      if (repeatMs <= settings.nowMs) rows.deliveries.push(delivery(iso(repeatMs), 'duplicate'));
    }

    if (receivedMs >= settings.outboxFromMs) {
      const published = buildEvent(
        settings.eventSource,
        statusEventType(n.kind, n.status, false),
        event(),
        new Date(receivedMs),
        randomUUID(),
      );
      rows.events.push({
        id: published.id,
        order_id: n.orderId,
        sequence,
        type: published.type,
        message: JSON.stringify(published),
        created_at: at,
        published_at: iso(receivedMs + randomInt(random, PUBLISH_DELAY_MS.min, PUBLISH_DELAY_MS.max)),
      });
    }
  }

  if (!order) return null;
  rows.orders.push({
    ...orderToRow(order.projection),
    recorded: order.recorded,
    created_at: iso(order.firstMs),
    updated_at: iso(order.lastMs),
  });
  rows.owners.push({ order_id: lifecycle.orderId, pos_id: settings.posId, bound_at: iso(order.firstMs) });
  rows.streams.push({ order_id: lifecycle.orderId, last_sequence: sequence });
  for (const refund of refunds.values()) {
    rows.refunds.push({
      ...refundToRow(refund.projection),
      recorded: refund.recorded,
      created_at: iso(refund.firstMs),
      updated_at: iso(refund.lastMs),
    });
  }
  const open = order.projection.status === 'PENDING' || order.projection.status === 'WAITING_FOR_CONFIRMATION';
  if (open && order.lastMs >= settings.scheduleFromMs) {
    rows.checks.push({
      order_id: lifecycle.orderId,
      observed_at: iso(order.lastMs),
      next_check_at: iso(settings.nowMs + randomInt(random, 0, CHECK_SPREAD_MS)),
    });
  }
  return lifecycle.orderId;
}
