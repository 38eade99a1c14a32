import { sql } from 'kysely';
import { columnsOf, tableOf } from '../../database/columns';
import type { Db } from '../../database/pool';
import type { RecordedStatuses } from '../../database/schema';
import type { DeliveryOutcome } from '../../domain/outcomes';
import { recordedContradiction, type ContradictedStatus } from '../../orderStory/uncertainty';
import { outboxLag, type OutboxLag } from '../../outbox/outboxQueries';
import type { EventType } from '../../outbox/cloudEvents';
import { PAGE_SIZE } from '../frame/listBounds';
import { unroutedTypes, type UnroutedType } from '../attention/unroutedTypeQueries';

/** The overview: the search box's lookups, and today's counts with the outbox lag. */

export type SearchField = 'orderId' | 'extOrderId' | 'paymentId' | 'refundId' | 'extRefundId';

export interface SearchMatch {
  orderId: string;
  field: SearchField;
  /** The refund matched, for refund ids. */
  refundId: string | null;
  /** The matched refund's two contradictory final statuses (FINALIZED and CANCELED), in the order they came. */
  refundContradicted: [ContradictedStatus, ContradictedStatus] | null;
}

const o = columnsOf('orders');
const r = columnsOf('refunds');

/** Each id column a person may hold, each by its own index, at most a page of matches in all. */
export async function searchIds(db: Db, q: string): Promise<SearchMatch[]> {
  const [orders, refunds] = [tableOf('orders'), tableOf('refunds')];
  const { rows } = await sql<{
    matched_order: string;
    field: SearchField;
    matched_refund: string | null;
    refund_recorded: RecordedStatuses | null;
  }>`
    (SELECT ${o('order_id')} AS matched_order, 'orderId' AS field, NULL::text AS matched_refund,
            NULL::jsonb AS refund_recorded
       FROM ${orders} WHERE ${o('order_id')} = ${q})
    UNION ALL (SELECT ${o('order_id')}, 'extOrderId', NULL, NULL FROM ${orders} WHERE ${o('ext_order_id')} = ${q} LIMIT ${PAGE_SIZE})
    UNION ALL (SELECT ${o('order_id')}, 'paymentId', NULL, NULL FROM ${orders} WHERE ${o('payment_id')} = ${q} LIMIT ${PAGE_SIZE})
    UNION ALL (SELECT ${r('order_id')}, 'refundId', ${r('refund_id')}, ${r('recorded')} FROM ${refunds}
                WHERE ${r('refund_id')} = ${q})
    UNION ALL (SELECT ${r('order_id')}, 'extRefundId', ${r('refund_id')}, ${r('recorded')} FROM ${refunds}
                WHERE ${r('ext_refund_id')} = ${q} LIMIT ${PAGE_SIZE})
    LIMIT ${PAGE_SIZE}`.execute(db);
  return rows.map((m) => ({
    orderId: m.matched_order,
    field: m.field,
    refundId: m.matched_refund,
    refundContradicted: m.refund_recorded && recordedContradiction('refund', m.refund_recorded),
  }));
}

/** What tells apart the orders a search found: each one's status, amount and when it was first seen. */
export interface OrderSummary {
  status: string;
  totalAmount: string | null;
  currencyCode: string | null;
  createdAt: Date;
  /** Both final statuses (COMPLETED and CANCELED), in the order they came, when the order is contradicted. */
  contradicted: [ContradictedStatus, ContradictedStatus] | null;
}

/** The orders of a page of search matches, by primary key. */
export async function orderSummaries(db: Db, orderIds: readonly string[]): Promise<Map<string, OrderSummary>> {
  if (orderIds.length === 0) return new Map();
  const rows = await db
    .selectFrom('orders')
    .selectAll()
    .where('order_id', 'in', [...orderIds])
    .execute();
  return new Map(
    rows.map((o) => [
      o.order_id,
      {
        status: o.status,
        totalAmount: o.total_amount,
        currencyCode: o.currency_code,
        createdAt: o.created_at,
        contradicted: recordedContradiction('order', o.recorded),
      },
    ]),
  );
}

export interface Overview {
  /** The local day's deliveries (of notifications first received that day: its partitions only), by outcome. */
  byOutcome: Array<{ outcome: DeliveryOutcome; count: number }>;
  /** The same, by quarter of an hour since the day's start (for the chart, by local hour, whatever the offset). */
  byQuarter: number[];
  pending: OutboxLag;
  /** The event types that reached no queue, within retention. */
  unrouted: UnroutedType[];
}

/** A quarter of an hour: every time zone's offset is a whole number of them. */
export const QUARTER_MS = 15 * 60_000;

/** The deliveries of the local day from `start` to `end` (23, 24 or 25 hours), and the events waiting. */
export async function overview(db: Db, start: Date, end: Date, expected: readonly EventType[]): Promise<Overview> {
  const quarter = sql<string>`floor(extract(epoch FROM ${columnsOf('deliveries')('received_at')}) * 1000 / ${QUARTER_MS})::bigint`;
  const [rows, pending, unrouted] = await Promise.all([
    db
      .selectFrom('deliveries')
      .select(['outcome', quarter.as('quarter')])
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('notification_received_at', '>=', start)
      // The days ahead already exist (empty): pruned, so only the day's partitions are read.
      .where('notification_received_at', '<', end)
      .where('received_at', '>=', start)
      .groupBy(['outcome', 'quarter'])
      .execute(),
    outboxLag(db),
    unroutedTypes(db, expected),
  ]);
  const byOutcome = new Map<DeliveryOutcome, number>();
  const first = Math.floor(start.getTime() / QUARTER_MS);
  const byQuarter = Array.from({ length: Math.ceil((end.getTime() - start.getTime()) / QUARTER_MS) }, () => 0);
  for (const r of rows) {
    byOutcome.set(r.outcome, (byOutcome.get(r.outcome) ?? 0) + Number(r.n));
    const index = Number(r.quarter) - first;
    if (index >= 0 && index < byQuarter.length) byQuarter[index] = (byQuarter[index] ?? 0) + Number(r.n);
  }
  return {
    byOutcome: [...byOutcome].map(([outcome, count]) => ({ outcome, count })),
    byQuarter,
    pending,
    unrouted,
  };
}
