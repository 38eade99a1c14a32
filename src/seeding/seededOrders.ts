import type { RecordingContext } from '../recording/projectionFold';
import { createHash } from 'node:crypto';
import type {
  DeliveriesTable,
  OrderOwnersTable,
  OrdersTable,
  OutboxEventsTable,
  ReconciliationChecksTable,
  RefundsTable,
} from '../database/schema';
import type { Column, Table } from '../database/columns';
import { parseNotification } from '../parsing/parseNotification';
import { NOTHING_READ, stateAfter, type BatchItem, type BatchState } from '../recording/batch';
import {
  DELIVERY_COLUMNS,
  NOTIFICATION_COLUMNS,
  ORDER_COLUMNS,
  OWNER_COLUMNS,
  REFUND_COLUMNS,
  STREAM_COLUMNS,
  batchRows,
  orderWriteRow,
  refundWriteRow,
  type DeliveryRow,
  type NotificationRow,
  type OrderWriteRow,
  type OwnerRow,
  type RefundWriteRow,
  type StreamRow,
} from '../recording/batchRows';
import { OUTBOX_COLUMNS, type OutboxRow } from '../outbox/outboxRows';
import { decideBatch } from '../recording/decideBatch';
import { buildLifecycle, type LifecyclePlan, type RefundPlan } from '../simulator/lifecycle';
import { chance, pick, randomInt, type Random } from '../simulator/random';
import type { SeedTable } from './seedQueries';

/**
 * A year of history, order by order, as the recorder would have left it (issue 30): the same rows, typed and
 * listed by the recorder's own row types (src/recording/batchRows.ts): the simulator's bodies, read by the service's
 * parser and decided by the recorder's own decision (decideBatch), whose rows are written. Pure apart from
 * `random` and the event ids.
 *
 * - About 70 % of orders go PENDING (then WAITING_FOR_CONFIRMATION when not auto-received) to COMPLETED, 5 % are
 *   CANCELED, 25 % stay PENDING (abandoned checkouts); a tenth of the completed ones get a refund, with an
 *   extRefundId of the shop's.
 * - About 20 % of deliveries are repeats of a notification already recorded.
 * - Raw bodies are kept only for days the body retention has not reached; events are published, and kept in the
 *   outbox only within its retention; open orders last observed within the reconciler's give-up time are in its
 *   schedule.
 */

/** What is fixed for a whole seeding run. */
export interface SeedSettings extends RecordingContext {
  /** The POS every order belongs to, and the fingerprint of the key its notifications were signed with. */
  posId: string;
  keyFingerprint: string;
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
/**
 * An outbox row as the seeder writes it: the message as its text, published by its row (no transaction id: outside the
 * relay's cursor, which would otherwise read every seeded event once; sql/024).
 */
export type SeedOutboxRow = Omit<OutboxRow, 'message'> & { message: string; xid: null } & Times<
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

const seedTable = <Row, T extends Table>(
  table: T,
  ...lists: ReadonlyArray<ReadonlyArray<keyof Row & Column<T>>>
): SeedTable<Row, T> => ({ table, columns: lists.flat() });

export const SEED_TABLES = {
  notifications: seedTable<NotificationRow, 'notifications'>('notifications', NOTIFICATION_COLUMNS),
  deliveries: seedTable<SeedDeliveryRow, 'deliveries'>('deliveries', DELIVERY_COLUMNS, ['received_at']),
  orders: seedTable<SeedOrderRow, 'orders'>('orders', ORDER_COLUMNS, ['created_at', 'updated_at']),
  refunds: seedTable<SeedRefundRow, 'refunds'>('refunds', REFUND_COLUMNS, ['created_at', 'updated_at']),
  owners: seedTable<SeedOwnerRow, 'order_owners'>('order_owners', OWNER_COLUMNS, ['bound_at']),
  streams: seedTable<StreamRow, 'event_streams'>('event_streams', STREAM_COLUMNS),
  events: seedTable<SeedOutboxRow, 'outbox_events'>('outbox_events', OUTBOX_COLUMNS, [
    'created_at',
    'published_at',
    'xid',
  ]),
  checks: seedTable<SeedCheckRow, 'reconciliation_checks'>('reconciliation_checks', [
    'order_id',
    'observed_at',
    'next_check_at',
  ]),
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
    refunds: completed && chance(random, 0.1) ? [refundOf(chance(random, 0.95), refundIdOf(nextId()))] : [],
    gapMs: randomInt(random, 2_000, 180_000),
    startMs: 0,
    runStartedAt: new Date(createdMs),
  };
  return { plan, abandoned };
}

/** A refund the shop asked for with an id of its own (extRefundId), as the API's later statement expects. */
const refundOf = (finalized: boolean, refundId: string): RefundPlan => ({
  status: finalized ? 'FINALIZED' : 'CANCELED',
  refundId,
  extRefundId: `RF-${refundId}`,
});

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
  const signer = { posId: settings.posId, keyFingerprint: settings.keyFingerprint };

  // The recorder's own decision (decideBatch) takes each notification, with its repeats, as one batch received
  // when it arrives; what it writes is what a later batch would read (stateAfter).
  let state: BatchState = NOTHING_READ;
  const times = new Map<string, { firstMs: number; lastMs: number }>();
  const touched = (id: string, ms: number) => times.set(id, { firstMs: times.get(id)?.firstMs ?? ms, lastMs: ms });
  for (const simulated of sent) {
    const receivedMs =
      createdMs + simulated.changedAtMs + randomInt(random, DELIVERY_DELAY_MS.min, DELIVERY_DELAY_MS.max);
    if (receivedMs > settings.nowMs) break;
    const parsed = parseNotification(simulated.body);
    if (!parsed.ok) throw new Error(`the simulator wrote a body the parser refuses: ${parsed.detail}`);
    const at = iso(receivedMs);
    const delivered = [at];
    for (let r = repeatsOf(random); r > 0; r--) {
      const repeatMs = receivedMs + randomInt(random, REPEAT_DELAY_MS.min, REPEAT_DELAY_MS.max);
      if (repeatMs <= settings.nowMs) delivered.push(iso(repeatMs));
    }
    const bodySha256 = createHash('sha256').update(simulated.body).digest();
    const items = delivered.map((): BatchItem => ({
      notification: parsed.notification,
      delivery: {
        observedVia: 'notification',
        body: simulated.body,
        bodySha256,
        signers: [signer],
        sourceAddress: pick(random, SENDER_ADDRESSES),
        processingTimeMs: simulated.processingTimeMs,
      },
    }));
    state = { ...state, newIds: [nextId()], now: at };
    const { writes } = decideBatch(items, state, settings);
    state = stateAfter(state, writes);
    for (const { projection } of [...writes.orders, ...writes.refunds])
      touched('refundId' in projection ? projection.refundId : projection.orderId, receivedMs);
    for (const owner of writes.owners) rows.owners.push({ order_id: owner.orderId, pos_id: owner.posId, bound_at: at });

    const written = batchRows(writes);
    // Bodies of the days the purge has reached are gone (BODY_RETENTION).
    const keepBody = settings.bodiesFromMs === null || receivedMs >= settings.bodiesFromMs;
    // Each row typed as its table's, so a renamed column fails here rather than be written beside the row's own.
    rows.notifications.push(
      ...written.notifications.map((row): NotificationRow => (keepBody ? row : { ...row, body: null })),
    );
    rows.deliveries.push(
      ...written.deliveries.map((row, i): SeedDeliveryRow => ({ ...row, received_at: delivered[i] ?? at })),
    );
    // Published; the outbox keeps them for its retention.
    if (receivedMs >= settings.outboxFromMs)
      for (const event of written.events)
        rows.events.push({
          ...event,
          message: JSON.stringify(event.message),
          created_at: at,
          published_at: iso(receivedMs + randomInt(random, PUBLISH_DELAY_MS.min, PUBLISH_DELAY_MS.max)),
          xid: null,
        });
  }

  const order = state.orders.get(lifecycle.orderId);
  if (!order) return null;
  const timesOf = (id: string) => {
    const { firstMs, lastMs } = times.get(id) ?? { firstMs: settings.nowMs, lastMs: settings.nowMs };
    return { created_at: iso(firstMs), updated_at: iso(lastMs) };
  };
  rows.orders.push({ ...orderWriteRow(order), ...timesOf(lifecycle.orderId) });
  for (const refund of state.refunds.values())
    rows.refunds.push({ ...refundWriteRow(refund), ...timesOf(refund.projection.refundId) });
  for (const [orderId, lastSequence] of state.sequences)
    rows.streams.push({ order_id: orderId, last_sequence: lastSequence });
  const { status } = order.projection;
  const lastMs = times.get(lifecycle.orderId)?.lastMs ?? settings.nowMs;
  if ((status === 'PENDING' || status === 'WAITING_FOR_CONFIRMATION') && lastMs >= settings.scheduleFromMs) {
    rows.checks.push({
      order_id: lifecycle.orderId,
      observed_at: iso(lastMs),
      next_check_at: iso(settings.nowMs + randomInt(random, 0, CHECK_SPREAD_MS)),
    });
  }
  return lifecycle.orderId;
}
