import { sql } from 'kysely';
import { columnsOf, tableOf } from '../../database/columns';
import type { Db } from '../../database/pool';
import type { DeliveryOutcome } from '../../domain/outcomes';
import { dayOf } from '../../orderStory/orderStoryQueries';
import { outboxLag, type OutboxLag } from '../../outbox/outboxQueries';
import { PAGE_SIZE } from './rows';

/** The overview: the search box's lookups, and today's counts with the outbox lag. */

export type SearchField = 'orderId' | 'extOrderId' | 'paymentId' | 'refundId' | 'extRefundId';

export interface SearchMatch {
  orderId: string;
  field: SearchField;
  /** The refund matched, for refund ids. */
  refundId: string | null;
}

const o = columnsOf('orders');
const r = columnsOf('refunds');

/** Each id column a person may hold, each by its own index, at most a page of matches in all. */
export async function searchIds(db: Db, q: string): Promise<SearchMatch[]> {
  const [orders, refunds] = [tableOf('orders'), tableOf('refunds')];
  const { rows } = await sql<{ matched_order: string; field: SearchField; matched_refund: string | null }>`
    (SELECT ${o('order_id')} AS matched_order, 'orderId' AS field, NULL::text AS matched_refund
       FROM ${orders} WHERE ${o('order_id')} = ${q})
    UNION ALL (SELECT ${o('order_id')}, 'extOrderId', NULL FROM ${orders} WHERE ${o('ext_order_id')} = ${q} LIMIT ${PAGE_SIZE})
    UNION ALL (SELECT ${o('order_id')}, 'paymentId', NULL FROM ${orders} WHERE ${o('payment_id')} = ${q} LIMIT ${PAGE_SIZE})
    UNION ALL (SELECT ${r('order_id')}, 'refundId', ${r('refund_id')} FROM ${refunds} WHERE ${r('refund_id')} = ${q})
    UNION ALL (SELECT ${r('order_id')}, 'extRefundId', ${r('refund_id')} FROM ${refunds}
                WHERE ${r('ext_refund_id')} = ${q} LIMIT ${PAGE_SIZE})
    LIMIT ${PAGE_SIZE}`.execute(db);
  return rows.map((m) => ({ orderId: m.matched_order, field: m.field, refundId: m.matched_refund }));
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
      .select([
        'outcome',
        sql<number>`extract(hour from ${columnsOf('deliveries')('received_at')} AT TIME ZONE 'UTC')::int`.as('hour'),
      ])
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
