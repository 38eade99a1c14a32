import { sql, type RawBuilder } from 'kysely';
import { columnListOf, columnsOf, tableOf, type Column, type Table } from '../database/columns';
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
  type BatchGuards,
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
        (SELECT json_agg(${jsonObjectOf('orders', 'o', [...projected(ORDER_COLUMNS), 'revision'], ['total_amount', 'revision'])})
           FROM ${tableOf('orders')} o WHERE ${o('order_id')} IN (SELECT involved_order FROM involved)) AS orders,
        (SELECT json_agg(${jsonObjectOf('refunds', 'r', [...projected(REFUND_COLUMNS), 'revision'], ['amount', 'revision'])})
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

/**
 * Sent before the history read, in its transaction: plan it with its values, whatever the pool's plan_cache_mode
 * (a generic plan locks every day partition at each run).
 */
export const planHistoryReadWithItsValues: Statement = statement(sql`SET LOCAL plan_cache_mode = force_custom_plan`);

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

/** Both projections' last change, and their revision (sql/025). */
const UPDATED_AT: Column<'orders'> & Column<'refunds'> = 'updated_at';
const REVISION: Column<'orders'> & Column<'refunds'> = 'revision';

/** `SET column = source.column` for the given columns, and the extras (e.g. updated_at = now()). */
const setFrom = <T extends Table>(
  table: T,
  source: string,
  columns: ReadonlyArray<Column<T>>,
  ...extra: RawBuilder<unknown>[]
) => {
  const [own, from] = [columnsOf(table), columnsOf(table, source)];
  return sql.join([...columns.map((c) => sql`${own(c)} = ${from(c)}`), ...extra]);
};

/** The rows a write expects, `g (subject, expected)`, from their JSON parameter (batchRows.ts, GuardRow). */
const guardRows = (rows: Slot) => sql`json_to_recordset(${rows}::json) AS g (subject text, expected bigint)`;

/**
 * A projection's guarded write (docs/decisions/0024), as three parts of the statement: its rows with what the
 * decision expects of each (`<name>_guarded`), the update of the rows still at the revision expected, and the insert
 * of those expected absent, which does nothing where a row is there. Every column from the row, a new revision, and
 * `updated_at` moved only when the projection did (a status recorded without applying changes only `recorded`).
 * Each answers the rows it wrote and their revisions: as many as the rows, or the guard fails.
 */
const guardedProjection = <T extends 'orders' | 'refunds'>(
  table: T,
  columns: ReadonlyArray<Column<T>>,
  key: Column<T>,
  rows: Slot,
  guards: Slot,
) => {
  const [own, stored, row] = [columnsOf(table), columnsOf(table, table), columnsOf(table, 'j')];
  const projected = columns.filter((c) => c !== key && c !== 'recorded');
  const values = (ref: (column: Column<T>) => RawBuilder<unknown>) => sql.join(projected.map(ref));
  const name = (part: string) => sql.id(`${table}_${part}`);
  return sql`${name('guarded')} AS (
        SELECT j.*, g.expected FROM json_populate_recordset(NULL::${tableOf(table)}, ${rows}::json) j
          JOIN ${guardRows(guards)} ON g.subject = ${row(key)}
      ), ${name('updated')} AS (
        UPDATE ${tableOf(table)} SET ${setFrom(
          table,
          'j',
          columns.filter((c) => c !== key),
          sql`${own(REVISION)} = new_revision()`,
          sql`${own(UPDATED_AT)} = CASE WHEN (${values(stored)}) IS DISTINCT FROM (${values(row)})
                                THEN now() ELSE ${stored(UPDATED_AT)} END`,
        )}
          FROM ${name('guarded')} j
         WHERE ${stored(key)} = ${row(key)} AND ${stored(REVISION)} = j.expected
        RETURNING ${stored(key)} AS subject, ${stored(REVISION)}::text AS given
      ), ${name('inserted')} AS (
        INSERT INTO ${tableOf(table)} (${columnListOf(table, columns)})
        SELECT ${columnListOf(table, columns)} FROM ${name('guarded')} WHERE expected IS NULL
        ON CONFLICT (${own(key)}) DO NOTHING
        RETURNING ${own(key)} AS subject, ${own(REVISION)}::text AS given
      )`;
};

/** How many rows a part of the statement answered: `(SELECT count(*) FROM part)`. */
const countOf = (...parts: string[]) =>
  sql.join(
    parts.map((part) => sql`(SELECT count(*) FROM ${sql.id(part)})`),
    sql` + `,
  );

/** The revisions a projection's write gave, `[{subject, given}]` (null when it wrote none). */
const revisionsOf = (table: 'orders' | 'refunds') => sql`(SELECT json_agg(w) FROM (
          SELECT * FROM ${sql.id(`${table}_updated`)} UNION ALL SELECT * FROM ${sql.id(`${table}_inserted`)}) w)`;

/** Rows read and not written, still at the revision read: as many as expected. */
const stillAt = <T extends 'orders' | 'refunds'>(table: T, key: Column<T>, reads: Slot) => {
  const row = columnsOf(table, 'x');
  return sql`(SELECT count(*) FROM ${guardRows(reads)}
          JOIN ${tableOf(table)} x ON ${row(key)} = g.subject AND ${row(REVISION)} = g.expected)
        = json_array_length(${reads}::json)`;
};

/** The tables a batch writes, each its rows as one JSON parameter, what it expects of them, and its lane's chain. */
type WriteArgs = { [Table in keyof BatchRows]: string } & {
  [Guard in keyof BatchGuards as `${Guard}Guards`]: string;
} & {
  eventCount: number;
  lane: string | null;
  /** The token the lane's last commit left; null on the reading path, which needs none. */
  laneExpected: string | null;
  laneToken: string;
  /** The lane's first write: it also deletes the rows of lanes silent for a week. */
  laneBegins: boolean;
  /** Ids to reserve for the lane's next batch. */
  idCount: number;
};

const stream = columnsOf('event_streams');
const streamStored = columnsOf('event_streams', 'event_streams');
const streamRow = columnsOf('event_streams', 'j');
const lanes = columnsOf('recorder_lanes');
const laneStored = columnsOf('recorder_lanes', 'recorder_lanes');

const writeStatement = preparedStatement<WriteArgs, WriteAnswer>(
  'record_write',
  (p) => sql<WriteAnswer>`
      WITH notifications_added AS (${insertJson('notifications', NOTIFICATION_COLUMNS, p.notifications)}
      ), owners_added AS (${insertJson('order_owners', OWNER_COLUMNS, p.owners)}
        ON CONFLICT (${columnsOf('order_owners')('order_id')}) DO NOTHING RETURNING 1
      ), ${guardedProjection('orders', ORDER_COLUMNS, 'order_id', p.orders, p.ordersGuards)}, ${guardedProjection(
        'refunds',
        REFUND_COLUMNS,
        'refund_id',
        p.refunds,
        p.refundsGuards,
      )}, streams_guarded AS (
        SELECT j.*, g.expected FROM json_populate_recordset(NULL::${tableOf('event_streams')}, ${p.streams}::json) j
          JOIN ${guardRows(p.streamsGuards)} ON g.subject = ${streamRow('order_id')}
      ), streams_updated AS (
        UPDATE ${tableOf('event_streams')} SET ${stream('last_sequence')} = ${streamRow('last_sequence')}
          FROM streams_guarded j
         WHERE ${streamStored('order_id')} = ${streamRow('order_id')} AND ${streamStored('last_sequence')} = j.expected
        RETURNING 1
      ), streams_inserted AS (
        INSERT INTO ${tableOf('event_streams')} (${columnListOf('event_streams', STREAM_COLUMNS)})
        SELECT ${columnListOf('event_streams', STREAM_COLUMNS)} FROM streams_guarded WHERE expected IS NULL
        ON CONFLICT (${stream('order_id')}) DO NOTHING RETURNING 1
      ), lane_moved AS (
        UPDATE ${tableOf('recorder_lanes')} SET ${lanes('token')} = ${p.laneToken}::bigint, ${lanes('written_at')} = now()
         WHERE ${lanes('lane')} = ${p.lane}::uuid AND ${lanes('token')} = ${p.laneExpected}::bigint
        RETURNING 1
      ), lane_begun AS (
        INSERT INTO ${tableOf('recorder_lanes')} (${lanes('lane')}, ${lanes('token')})
        SELECT ${p.lane}::uuid, ${p.laneToken}::bigint WHERE ${p.laneExpected}::bigint IS NULL AND ${p.lane}::uuid IS NOT NULL
        ON CONFLICT (${lanes('lane')}) DO UPDATE SET ${lanes('token')} = ${columnsOf('recorder_lanes', 'excluded')('token')},
                                                ${lanes('written_at')} = now()
      ), lanes_forgotten AS (
        DELETE FROM ${tableOf('recorder_lanes')}
         WHERE ${p.laneBegins}::boolean AND ${laneStored('lane')} <> ${p.lane}::uuid
           AND ${laneStored('written_at')} < now() - interval '7 days'
      ), events_added AS (${insertOutboxRows(p.events)}
      ), variants_added AS (${insertJson('notification_variants', VARIANT_COLUMNS, p.variants)}
      ), ${insertDeliveries(p.deliveries, p.repeats)}
      SELECT recording_guard(
               ${countOf('orders_updated', 'orders_inserted')} = json_array_length(${p.orders}::json)
           AND ${countOf('refunds_updated', 'refunds_inserted')} = json_array_length(${p.refunds}::json)
           AND ${countOf('streams_updated', 'streams_inserted')} = json_array_length(${p.streams}::json)
           AND ${countOf('owners_added')} = json_array_length(${p.owners}::json)
           AND ${stillAt('orders', 'order_id', p.orderReadsGuards)}
           AND ${stillAt('refunds', 'refund_id', p.refundReadsGuards)}
           AND (${p.laneExpected}::bigint IS NULL OR EXISTS (SELECT 1 FROM lane_moved))
             ) AS guarded,
             ${revisionsOf('orders')} AS order_revisions,
             ${revisionsOf('refunds')} AS refund_revisions,
             (SELECT array_agg(nextval('notification_ids')::text) FROM generate_series(1, ${p.idCount}::int)) AS next_ids,
             -- The database's clock as the statement ends: the lane's next batch, decided without a read, takes its
             -- time from it (recorderLane.ts).
             to_json(clock_timestamp())#>>'{}' AS now,
             -- The relay's wake-up hint, delivered at commit; it also polls, so a lost hint costs a poll interval.
             CASE WHEN ${p.eventCount}::int > 0 THEN ${relayHint} END AS notified`,
);

/** What the write answers: the revisions it gave, ids for the lane's next batch, and the database's clock at its end. */
export interface WriteAnswer {
  order_revisions: Array<{ subject: string; given: string }> | null;
  refund_revisions: Array<{ subject: string; given: string }> | null;
  next_ids: string[] | null;
  now: string;
}

/** Where a write stands in its lane's chain of commits (docs/decisions/0024). */
export interface LaneLink {
  /** The lane's id (recorder_lanes); null for a write outside any lane (the command line's). */
  lane: string | null;
  /** The token of the lane's last commit, which this write expects; null on the reading path. */
  expected: string | null;
  /** The token this write leaves. */
  token: string;
  /** The lane's first write (of this process): it also deletes the rows of lanes silent for a week. */
  begins: boolean;
  /** Ids to reserve for the lane's next batch. */
  idCount: number;
}

/**
 * Everything the decision wrote, as one statement: alone (the fast path) or sent with COMMIT after the read, with
 * its guards, the lane's link, and the relay's wake-up hint. Fails with SQLSTATE PR001, writing nothing, when a
 * guard did not hold.
 */
export const writeBatch = (rows: BatchRows, guards: BatchGuards, link: LaneLink): Statement<WriteAnswer> =>
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
    ordersGuards: json(guards.orders),
    refundsGuards: json(guards.refunds),
    streamsGuards: json(guards.streams),
    orderReadsGuards: json(guards.orderReads),
    refundReadsGuards: json(guards.refundReads),
    eventCount: rows.events.length,
    lane: link.lane,
    laneExpected: link.expected,
    laneToken: link.token,
    laneBegins: link.begins,
    idCount: link.idCount,
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
