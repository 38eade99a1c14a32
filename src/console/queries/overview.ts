import { sql } from 'kysely';
import type { Db } from '../../database/pool';
import type { DeliveryOutcome } from '../../domain/outcomes';
import { outboxLag, type OutboxLag } from './attention';
import { PAGE_SIZE } from './rows';

/** The overview: the search box's lookups, and today's counts with the outbox lag. */

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

/** What tells apart the orders a search found: each one's status, amount and when it was first seen. */
export interface OrderSummary {
  status: string;
  totalAmount: string | null;
  currencyCode: string | null;
  createdAt: Date;
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
      { status: o.status, totalAmount: o.total_amount, currencyCode: o.currency_code, createdAt: o.created_at },
    ]),
  );
}

export interface Overview {
  /** The local day's deliveries (of notifications first received that day: its partitions only), by outcome. */
  byOutcome: Array<{ outcome: DeliveryOutcome; count: number }>;
  /** The same, by quarter of an hour since the day's start (for the chart, by local hour, whatever the offset). */
  byQuarter: number[];
  pending: OutboxLag;
}

/** A quarter of an hour: every time zone's offset is a whole number of them. */
export const QUARTER_MS = 15 * 60_000;

/** The deliveries of the local day from `start` to `end` (23, 24 or 25 hours), and the events waiting. */
export async function overview(db: Db, start: Date, end: Date): Promise<Overview> {
  const quarter = sql<string>`floor(extract(epoch FROM ${sql.ref('received_at')}) * 1000 / ${QUARTER_MS})::bigint`;
  const [rows, pending] = await Promise.all([
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
  };
}
