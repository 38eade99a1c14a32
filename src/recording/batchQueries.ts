import { sql, type RawBuilder } from 'kysely';
import { columnsOf, tableOf, type Column, type Table } from '../database/columns';
import { insertJson } from '../database/jsonRows';
import { prepared, preparedStatement, queries, statement, type Slot, type Statement } from '../database/transaction';
import type { DeliveryOutcome } from '../domain/outcomes';
import { insertOutboxRows, relayHint } from '../outbox/outboxQueries';
import { DELIVERY_ROWS_PER_NOTIFICATION } from './batch';
import {
  DELIVERY_COLUMNS,
  DELIVERY_REPEAT_COLUMNS,
  NOTIFICATION_COLUMNS,
  ORDER_COLUMNS,
  OWNER_COLUMNS,
  REFUND_COLUMNS,
  STREAM_COLUMNS,
  VARIANT_COLUMNS,
  type BatchRows,
  type HistoryRow,
  type HistoryLookup,
  type StateRow,
} from './batchRows';
import type { Delivery } from './notificationStore';

/**
 * The SQL of a recording transaction: lock, read, write, each with a constant text whatever the batch's size
 * (rows travel as one JSON parameter per table, batchRows.ts), so each connection prepares them once; and, for
 * a batch with repeats the cache did not know, a read of their history. Column lists come from batchRows.ts.
 * Only that history read touches the day partitions: everything else reads the projections, which hold what
 * dedup needs.
 */

/** The seed of the order locks' keys (hashtextextended): the other advisory locks use keys of their own. */
export const ORDER_LOCK_SEED = 7316;

/** Rows as their statement's JSON parameter. */
const json = (rows: readonly object[]): string => JSON.stringify(rows);

/** `SET column = excluded.column` for every column but the key (and the given extras, e.g. updated_at = now()). */
const updateFromExcluded = <T extends Table>(
  table: T,
  columns: ReadonlyArray<Column<T>>,
  key: Column<T>,
  ...extra: RawBuilder<unknown>[]
) => {
  const [own, excluded] = [columnsOf(table), columnsOf(table, 'excluded')];
  return sql.join([...columns.filter((c) => c !== key).map((c) => sql`${own(c)} = ${excluded(c)}`), ...extra]);
};

/** `json_build_object('column', alias.column, ...)` of a table's columns; those named in `asText` as text. */
const jsonObjectOf = <T extends Table>(
  table: T,
  alias: string,
  columns: ReadonlyArray<Column<T>>,
  asText: ReadonlyArray<Column<T>> = [],
) => {
  const ref = columnsOf(table, alias);
  return sql`json_build_object(${sql.join(
    columns.map((c) => sql`${sql.lit(c)}, ${ref(c)}${asText.includes(c) ? sql`::text` : sql``}`),
  )})`;
};

const refund = columnsOf('refunds');

/** `involved (involved_order)`: the orders named, and those the refunds named were recorded under. */
const involved = (orderIds: Slot, refundIds: Slot) => sql`involved (involved_order) AS (
        SELECT unnest(${orderIds}::text[])
        UNION
        SELECT ${refund('order_id')} FROM ${tableOf('refunds')} WHERE ${refund('refund_id')} = ANY(${refundIds}::text[])
      )`;

/**
 * Serializes every writer of an order (its notifications, projection, owner, refunds and event sequence)
 * for the rest of the transaction: the orders named, and the orders the named refunds were recorded under
 * (a refund's order never changes once recorded, so reading it before the lock is safe). Taken in one
 * global order (sorted keys), so two transactions holding several orders each never deadlock. Rows that
 * do not exist yet are covered too, which row locks could not do. Answers the orders it locked.
 */
const lockStatement = preparedStatement<
  { orderIds: readonly string[]; refundIds: readonly string[] },
  { orders: string[] }
>(
  'record_lock',
  (p) => sql<{ orders: string[] }>`
      WITH ${involved(p.orderIds, p.refundIds)}
      SELECT (SELECT array_agg(involved_order) FROM involved) AS orders,
             (SELECT count(*) FROM (
                SELECT pg_advisory_xact_lock(k)
                  FROM (SELECT DISTINCT hashtextextended(involved_order, ${ORDER_LOCK_SEED}) AS k FROM involved ORDER BY k) AS keys
              ) AS locks) AS locked`,
);

export const lockOrders = (
  orderIds: readonly string[],
  refundIds: readonly string[],
): Statement<{ orders: string[] }> => lockStatement({ orderIds, refundIds });

/**
 * What the batch needs, as of after its locks were granted: the projections of its orders and refunds with the
 * statuses recorded for them, their owners and event sequences, ids for its new notifications (one per meaning,
 * at least), and the transaction's time.
 */
const projected = <C extends string>(columns: readonly C[]): Array<Exclude<C, 'status_rank'>> =>
  columns.filter((c): c is Exclude<C, 'status_rank'> => c !== 'status_rank');

const o = columnsOf('orders', 'o');
const r = columnsOf('refunds', 'r');
const s = columnsOf('event_streams', 's');
const w = columnsOf('order_owners', 'w');

const readStatement = preparedStatement<
  { orderIds: readonly string[]; refundIds: readonly string[]; meanings: number },
  StateRow
>(
  'record_read',
  (p) => sql<StateRow>`
      WITH ${involved(p.orderIds, p.refundIds)}
      SELECT
        (SELECT json_agg(${jsonObjectOf('orders', 'o', projected(ORDER_COLUMNS), ['total_amount'])})
           FROM ${tableOf('orders')} o WHERE ${o('order_id')} IN (SELECT involved_order FROM involved)) AS orders,
        (SELECT json_agg(${jsonObjectOf('refunds', 'r', projected(REFUND_COLUMNS), ['amount'])})
           FROM ${tableOf('refunds')} r WHERE ${r('refund_id')} = ANY(${p.refundIds}::text[])) AS refunds,
        (SELECT json_agg(${jsonObjectOf('event_streams', 's', STREAM_COLUMNS, ['last_sequence'])})
           FROM ${tableOf('event_streams')} s WHERE ${s('order_id')} IN (SELECT involved_order FROM involved)) AS streams,
        (SELECT json_agg(${jsonObjectOf('order_owners', 'w', OWNER_COLUMNS)})
           FROM ${tableOf('order_owners')} w WHERE ${w('order_id')} IN (SELECT involved_order FROM involved)) AS owners,
        (SELECT array_agg(nextval('notification_ids')::text) FROM generate_series(1, ${p.meanings}::int)) AS new_ids,
        to_json(now())#>>'{}' AS now`,
);

export const readState = (
  orderIds: readonly string[],
  refundIds: readonly string[],
  meanings: number,
): Statement<StateRow> => readStatement({ orderIds, refundIds, meanings });

/**
 * The notifications the batch's repeats are of, each in its own day (the receive time its projection recorded),
 * with what lives in the same day: the first body's digest, the variants' digests, and the delivery rows up to
 * the cap. Not prepared: planned with its values, so that only those days' partitions are read (a plan made once
 * for any day would lock every partition at each run).
 */
const n = columnsOf('notifications', 'n');
const v = columnsOf('notification_variants', 'v');
const d = columnsOf('deliveries', 'd');

export function readHistory(refs: readonly HistoryLookup[]): Statement<HistoryRow> {
  const ats = sql`ANY(${refs.map((r) => r.at)}::timestamptz[])`;
  return statement(
    sql<HistoryRow>`
      SELECT ${n('id')}::text AS id, encode(${n('body_sha256')}, 'hex') AS body_sha256,
             ARRAY(SELECT encode(${v('body_sha256')}, 'hex') FROM ${tableOf('notification_variants')} v
                    WHERE ${v('notification_received_at')} = ${ats}
                      AND ${v('notification_received_at')} = ${n('received_at')} AND ${v('notification_id')} = ${n('id')}) AS variants,
             (SELECT count(*)::int FROM (
                SELECT 1 FROM ${tableOf('deliveries')} d
                 WHERE ${d('notification_received_at')} = ${ats}
                   AND ${d('notification_received_at')} = ${n('received_at')} AND ${d('notification_id')} = ${n('id')}
                 LIMIT ${DELIVERY_ROWS_PER_NOTIFICATION}::int) AS kept) AS delivery_rows
        FROM ${tableOf('notifications')} n
       WHERE ${n('received_at')} = ${ats} AND ${n('id')} = ANY(${refs.map((r) => r.id)}::bigint[])`,
  );
}

const repeat = columnsOf('delivery_repeats');
const repeatStored = columnsOf('delivery_repeats', 'delivery_repeats');
const repeatAdded = columnsOf('delivery_repeats', 'excluded');

/** The deliveries' audit rows, and the repeats counted instead of a row. Part of a write. */
const insertDeliveries = (deliveries: Slot, repeats: Slot) => sql`
    deliveries_added AS (${insertJson('deliveries', DELIVERY_COLUMNS, deliveries)}),
    repeats_counted AS (
      ${insertJson('delivery_repeats', DELIVERY_REPEAT_COLUMNS, repeats)}
      ON CONFLICT (${repeat('notification_id')}) WHERE ${repeat('notification_id')} IS NOT NULL
      DO UPDATE SET ${repeat('deliveries')} = ${repeatStored('deliveries')} + ${repeatAdded('deliveries')},
                    ${repeat('last_at')} = now()
    )`;

const deliveriesStatement = preparedStatement<{ deliveries: string; repeats: string }, unknown>(
  'record_deliveries',
  (p) => sql`WITH ${insertDeliveries(p.deliveries, p.repeats)} SELECT 1`,
);

/** A batch of known duplicates writes only their deliveries: one statement. */
export const writeDeliveries = ({ deliveries, repeats }: Pick<BatchRows, 'deliveries' | 'repeats'>): Statement =>
  deliveriesStatement({ deliveries: json(deliveries), repeats: json(repeats) });

/**
 * A projection's upsert: every column from the row, and `updated_at` moved only when the projection did (a status
 * recorded without applying changes only `recorded`).
 */
/** Both projections' last change. */
const UPDATED_AT: Column<'orders'> & Column<'refunds'> = 'updated_at';

const upsertProjection = <T extends 'orders' | 'refunds'>(
  table: T,
  columns: ReadonlyArray<Column<T>>,
  key: Column<T>,
) => {
  const projected = columns.filter((c) => c !== key && c !== 'recorded');
  const [own, stored, excluded] = [columnsOf(table), columnsOf(table, table), columnsOf(table, 'excluded')];
  const row = (ref: (column: Column<T>) => RawBuilder<unknown>) => sql.join(projected.map(ref));
  return sql`ON CONFLICT (${own(key)}) DO UPDATE SET ${updateFromExcluded(
    table,
    columns,
    key,
    sql`${own(UPDATED_AT)} = CASE WHEN (${row(stored)}) IS DISTINCT FROM (${row(excluded)})
                          THEN now() ELSE ${stored(UPDATED_AT)} END`,
  )}`;
};

/** The tables a batch writes, each its rows as one JSON parameter, and how many events it wrote. */
type WriteArgs = { [Table in keyof BatchRows]: string } & { eventCount: number };

const writeStatement = preparedStatement<WriteArgs, unknown>(
  'record_write',
  (p) => sql`
      WITH notifications_added AS (${insertJson('notifications', NOTIFICATION_COLUMNS, p.notifications)}
      ), owners_added AS (${insertJson('order_owners', OWNER_COLUMNS, p.owners)}
      ), orders_upserted AS (
        ${insertJson('orders', ORDER_COLUMNS, p.orders)} ${upsertProjection('orders', ORDER_COLUMNS, 'order_id')}
      ), refunds_upserted AS (
        ${insertJson('refunds', REFUND_COLUMNS, p.refunds)} ${upsertProjection('refunds', REFUND_COLUMNS, 'refund_id')}
      ), sequences_updated AS (
        ${insertJson('event_streams', STREAM_COLUMNS, p.streams)}
        ON CONFLICT (${columnsOf('event_streams')('order_id')})
        DO UPDATE SET ${updateFromExcluded('event_streams', STREAM_COLUMNS, 'order_id')}
      ), events_added AS (${insertOutboxRows(p.events)}
      ), variants_added AS (${insertJson('notification_variants', VARIANT_COLUMNS, p.variants)}
      ), ${insertDeliveries(p.deliveries, p.repeats)}
      -- The relay's wake-up hint, delivered at commit; it also polls, so a lost hint costs a poll interval.
      SELECT CASE WHEN ${p.eventCount}::int > 0 THEN ${relayHint} END AS notified`,
);

/** Everything the decision wrote, as one statement (sent with COMMIT), and the relay's wake-up hint. */
export const writeBatch = (rows: BatchRows): Statement =>
  writeStatement({
    notifications: json(rows.notifications),
    owners: json(rows.owners),
    orders: json(rows.orders),
    refunds: json(rows.refunds),
    streams: json(rows.streams),
    events: json(rows.events),
    variants: json(rows.variants),
    deliveries: json(rows.deliveries),
    repeats: json(rows.repeats),
    eventCount: rows.events.length,
  });

/**
 * Keeps an authentic body that could not be read (or recorded), with the reason, and its delivery: the same
 * bytes again make one quarantine row and one more delivery (counted past the cap, as for notifications).
 */
export function writeQuarantine(delivery: Delivery, reason: string, detail: string): Statement<{ id: string }> {
  const posId = delivery.signers[0]?.posId ?? '';
  const keyFingerprint = delivery.signers[0]?.keyFingerprint ?? '';
  return prepared(
    'record_quarantine',
    queries
      .with('quarantined', (db) =>
        db
          .insertInto('quarantined_notifications')
          .values({
            reason,
            detail,
            pos_id: posId,
            key_fingerprint: keyFingerprint,
            body: delivery.body,
            body_sha256: delivery.bodySha256,
          })
          // A no-op update, so that the row already there answers its id.
          .onConflict((oc) =>
            oc.column('body_sha256').doUpdateSet((eb) => ({ body_sha256: eb.ref('excluded.body_sha256') })),
          )
          .returning(['id', 'received_at']),
      )
      .with('delivery', (db) =>
        db.selectFrom('quarantined as q').select((eb) => [
          'q.id',
          'q.received_at',
          eb(
            eb
              .selectFrom((kept) =>
                kept
                  .selectFrom('deliveries as d')
                  .select('d.id')
                  .whereRef('d.notification_received_at', '=', 'q.received_at')
                  .whereRef('d.quarantine_id', '=', 'q.id')
                  .limit(DELIVERY_ROWS_PER_NOTIFICATION)
                  .as('kept'),
              )
              .select((kept) => kept.fn.countAll<number>().as('rows')),
            '>=',
            DELIVERY_ROWS_PER_NOTIFICATION,
          ).as('counted_only'),
        ]),
      )
      .with('delivery_added', (db) =>
        db
          .insertInto('deliveries')
          .columns([
            'source_address',
            'processing_time_ms',
            'pos_id',
            'key_fingerprint',
            'body_sha256',
            'outcome',
            'quarantine_id',
            'notification_received_at',
          ])
          .expression((eb) =>
            eb
              .selectFrom('delivery')
              .select([
                sql<string | null>`${delivery.sourceAddress}::inet`.as('source_address'),
                sql<number | null>`${delivery.processingTimeMs}::int`.as('processing_time_ms'),
                sql<string>`${posId}::text`.as('pos_id'),
                sql<string>`${keyFingerprint}::text`.as('key_fingerprint'),
                sql<Buffer>`${delivery.bodySha256}::bytea`.as('body_sha256'),
                sql<DeliveryOutcome>`'quarantined'`.as('outcome'),
                'id',
                'received_at as notification_received_at',
              ])
              .where('counted_only', '=', false),
          ),
      )
      .with('repeat_counted', (db) =>
        db
          .insertInto('delivery_repeats')
          .columns(['quarantine_id', 'deliveries'])
          .expression((eb) =>
            eb
              .selectFrom('delivery')
              .select(['id', sql<number>`1`.as('deliveries')])
              .where('counted_only', '=', true),
          )
          .onConflict((oc) =>
            oc
              .column('quarantine_id')
              .where('quarantine_id', 'is not', null)
              // An object, not a callback's: its keys are checked against the table's columns (a callback's are not).
              .doUpdateSet({
                deliveries: (eb) => eb('delivery_repeats.deliveries', '+', eb.lit(1)),
                last_at: sql`now()`,
              }),
          ),
      )
      .selectFrom('quarantined')
      .select((eb) => eb.cast<string>('id', 'text').as('id')),
  );
}
