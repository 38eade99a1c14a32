import { sql } from 'kysely';
import { tableOf } from '../database/columns';
import type { Db } from '../database/pool';
import { orderWriteRow, refundWriteRow } from './batchRows';
import type { OrderProjection, RefundProjection } from './projection';
import type { StoredProjection } from './projectionFold';
import { orderToRow, refundToRow } from './projectionRows';
import { COMPARED_ORDER_COLUMNS, COMPARED_REFUND_COLUMNS, type HistoryEntry, type StoredPage } from './reprojection';

/** `reproject`'s reads and repairs: a keyset page of orders at a time, its history and projections. */

/** Orders after `after` that any projection, owner or refund names, up to a page; their notifications follow. */
export async function nextOrderPage(db: Db, after: string, size: number): Promise<string[]> {
  const rows = await db
    .selectFrom((eb) =>
      eb.selectFrom('orders').select('order_id').where('order_id', '>', after).orderBy('order_id').limit(size).as('o'),
    )
    .select('o.order_id')
    .union((eb) =>
      eb
        .selectFrom((inner) =>
          inner
            .selectFrom('order_owners')
            .select('order_id')
            .where('order_id', '>', after)
            .orderBy('order_id')
            .limit(size)
            .as('w'),
        )
        .select('w.order_id'),
    )
    .union((eb) =>
      eb
        .selectFrom((inner) =>
          inner
            .selectFrom('refunds')
            .select('order_id')
            .where('order_id', '>', after)
            .orderBy('order_id')
            .limit(size)
            .as('r'),
        )
        .select('r.order_id'),
    )
    .orderBy('order_id')
    .limit(size)
    .execute();
  return rows.map((r) => r.order_id);
}

/** The orders after `after`, up to `through` (to the end when null). */
export type Range = { after: string; through: string | null };

/** A page's history, owners and stored projections: every row whose order is in the range. */
export async function readReprojectPage(
  db: Db,
  { after, through }: Range,
): Promise<{ history: HistoryEntry[]; owners: Map<string, string>; stored: StoredPage }> {
  const history = await db
    .selectFrom('notifications')
    .select(['id', 'order_id', 'parsed', 'pos_id'])
    // As text: a Date would drop the microseconds the projections' recorded statuses keep.
    .select((eb) => sql<string>`to_json(${eb.ref('received_at')})#>>'{}'`.as('at'))
    .where('order_id', '>', after)
    .$if(through !== null, (q) => q.where('order_id', '<=', through as string))
    .orderBy('order_id')
    .orderBy('id')
    .execute();
  const owners = await db
    .selectFrom('order_owners')
    .select(['order_id', 'pos_id'])
    .where('order_id', '>', after)
    .$if(through !== null, (q) => q.where('order_id', '<=', through as string))
    .execute();
  const orders = await db
    .selectFrom('orders')
    .select(['order_id', 'recorded', ...COMPARED_ORDER_COLUMNS])
    .where('order_id', '>', after)
    .$if(through !== null, (q) => q.where('order_id', '<=', through as string))
    .execute();
  const refunds = await db
    .selectFrom('refunds')
    .select(['refund_id', 'recorded', ...COMPARED_REFUND_COLUMNS])
    .where('order_id', '>', after)
    .$if(through !== null, (q) => q.where('order_id', '<=', through as string))
    .execute();
  const stored: StoredPage = {
    orders: new Map(orders.map((o) => [o.order_id, { ...o, status_rank: Number(o.status_rank) }])),
    refunds: new Map(refunds.map((r) => [r.refund_id, { ...r, status_rank: Number(r.status_rank) }])),
  };
  return { history, owners: new Map(owners.map((o) => [o.order_id, o.pos_id])), stored };
}

/** A projection no notification supports, deleted. */
export async function deleteProjection(db: Db, table: 'orders' | 'refunds', id: string): Promise<void> {
  if (table === 'orders') await db.deleteFrom('orders').where('order_id', '=', id).execute();
  else await db.deleteFrom('refunds').where('refund_id', '=', id).execute();
}

/** An order's projection as rebuilt: inserted with the statuses it was rebuilt from, or its fields updated. */
export async function repairOrder(db: Db, stored: StoredProjection<OrderProjection>): Promise<void> {
  await db
    .insertInto('orders')
    .values(orderWriteRow(stored))
    .onConflict((oc) => oc.column('order_id').doUpdateSet({ ...orderToRow(stored.projection), updated_at: sql`now()` }))
    .execute();
}

/** A refund's projection as rebuilt, likewise. */
export async function repairRefund(db: Db, stored: StoredProjection<RefundProjection>): Promise<void> {
  await db
    .insertInto('refunds')
    .values(refundWriteRow(stored))
    .onConflict((oc) =>
      oc.column('refund_id').doUpdateSet({ ...refundToRow(stored.projection), updated_at: sql`now()` }),
    )
    .execute();
}

/** Every notification history holds (for the progress bar). */
export async function countNotifications(db: Db): Promise<number> {
  const row = await db
    .selectFrom('notifications')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Writers wait, for the rest of the transaction, while the projections are repaired. */
export async function lockProjections(trx: Db): Promise<void> {
  await sql`LOCK TABLE ${tableOf('orders')}, ${tableOf('refunds')} IN EXCLUSIVE MODE`.execute(trx);
}
