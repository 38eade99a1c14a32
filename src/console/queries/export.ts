import { sql } from 'kysely';
import { columnsOf } from '../../database/columns';
import type { Db } from '../../database/pool';

/**
 * The finance export's rows: the orders of one POS that completed, and their refunds that were finalized, in a time
 * range, in the order they did. Read a page at a time by keyset through partial indexes of final rows
 * (orders_completed, refunds_finalized: sql/014), so memory stays that of two pages whatever the range holds.
 * A final projection's updated_at is when it became final (it moves only with the status).
 */

export interface ExportRow {
  kind: 'payment' | 'refund';
  /** When it completed (an order) or was finalized (a refund), as recorded here. */
  at: Date;
  orderId: string;
  extOrderId: string | null;
  paymentId: string | null;
  refundId: string | null;
  extRefundId: string | null;
  amount: string | null;
  currencyCode: string | null;
  posId: string;
}

/** Rows read per statement. */
export const EXPORT_PAGE = 1000;

/**
 * The keyset cursor: the last row's time as Postgres writes it (to the microsecond, which a JavaScript Date would
 * cut, losing or repeating rows of one millisecond) and its key.
 */
interface Cursor {
  at: string;
  key: string;
}

export interface ExportRange {
  posId: string;
  from: Date;
  to: Date;
}

async function* pages<Row extends { cursorAt: string; key: string }>(
  read: (after: Cursor | null) => Promise<Row[]>,
): AsyncGenerator<Row> {
  let after: Cursor | null = null;
  for (;;) {
    const rows = await read(after);
    yield* rows;
    const last = rows[rows.length - 1];
    if (rows.length < EXPORT_PAGE || last === undefined) return;
    after = { at: last.cursorAt, key: last.key };
  }
}

/** The POS's orders completed in the range, oldest first (orders_completed). */
export function completedOrders(
  db: Db,
  range: ExportRange,
): AsyncGenerator<ExportRow & { cursorAt: string; key: string }> {
  return pages(async (after) => {
    let query = db
      .selectFrom('orders')
      .selectAll()
      .select(sql<string>`${columnsOf('orders')('updated_at')}::text`.as('cursor_at'))
      .where('status', '=', 'COMPLETED')
      .where('merchant_pos_id', '=', range.posId)
      .where('updated_at', '>=', range.from)
      .where('updated_at', '<', range.to)
      .orderBy('updated_at')
      .orderBy('order_id')
      .limit(EXPORT_PAGE);
    if (after !== null)
      query = query.where((eb) =>
        eb(eb.refTuple('updated_at', 'order_id'), '>', eb.tuple(sql<Date>`${after.at}::timestamptz`, after.key)),
      );
    const rows = await query.execute();
    return rows.map((r) => ({
      kind: 'payment' as const,
      at: r.updated_at,
      orderId: r.order_id,
      extOrderId: r.ext_order_id,
      paymentId: r.payment_id,
      refundId: null,
      extRefundId: null,
      amount: r.total_amount,
      currencyCode: r.currency_code,
      posId: r.merchant_pos_id ?? range.posId,
      cursorAt: r.cursor_at,
      key: r.order_id,
    }));
  });
}

/** The POS's refunds finalized in the range, oldest first (refunds_finalized; the POS is the order's owner). */
export function finalizedRefunds(
  db: Db,
  range: ExportRange,
): AsyncGenerator<ExportRow & { cursorAt: string; key: string }> {
  return pages(async (after) => {
    let query = db
      .selectFrom('refunds as r')
      .innerJoin('order_owners as w', 'w.order_id', 'r.order_id')
      .leftJoin('orders as o', 'o.order_id', 'r.order_id')
      .selectAll('r')
      .select(['o.payment_id', sql<string>`${columnsOf('refunds', 'r')('updated_at')}::text`.as('cursor_at')])
      .where('r.status', '=', 'FINALIZED')
      .where('w.pos_id', '=', range.posId)
      .where('r.updated_at', '>=', range.from)
      .where('r.updated_at', '<', range.to)
      .orderBy('r.updated_at')
      .orderBy('r.refund_id')
      .limit(EXPORT_PAGE);
    if (after !== null)
      query = query.where((eb) =>
        eb(eb.refTuple('r.updated_at', 'r.refund_id'), '>', eb.tuple(sql<Date>`${after.at}::timestamptz`, after.key)),
      );
    const rows = await query.execute();
    return rows.map((r) => ({
      kind: 'refund' as const,
      at: r.updated_at,
      orderId: r.order_id,
      extOrderId: r.ext_order_id,
      paymentId: r.payment_id,
      refundId: r.refund_id,
      extRefundId: r.ext_refund_id,
      amount: r.amount,
      currencyCode: r.currency_code,
      posId: range.posId,
      cursorAt: r.cursor_at,
      key: r.refund_id,
    }));
  });
}

/** Both, merged in time order: payments and refunds as they became final. */
export async function* exportRows(db: Db, range: ExportRange): AsyncGenerator<ExportRow> {
  const orders = completedOrders(db, range);
  const refunds = finalizedRefunds(db, range);
  let order = await orders.next();
  let refund = await refunds.next();
  while (!order.done || !refund.done) {
    if (!order.done && (refund.done || order.value.at.getTime() <= refund.value.at.getTime())) {
      yield order.value;
      order = await orders.next();
    } else if (!refund.done) {
      yield refund.value;
      refund = await refunds.next();
    }
  }
}
