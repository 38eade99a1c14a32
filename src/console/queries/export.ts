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
  /** held_*: both final statuses came (COMPLETED and CANCELED, FINALIZED and CANCELED): book nothing yet. */
  kind: 'payment' | 'refund' | 'held_payment' | 'held_refund';
  /** For a held row, what came and what to do; null otherwise. */
  held: string | null;
  /** When it completed (an order) or was finalized (a refund), as recorded here: what the range is of. */
  at: Date;
  /** The payment service's own times of it, in the order the booking time takes them (bookingInstant). */
  said: Array<string | null>;
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
      held: null,
      at: r.updated_at,
      said: [r.local_receipt_date_time],
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
      held: null,
      at: r.updated_at,
      said: [r.refund_date, r.status_date_time],
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

/** Contradictions read at most for one export (they are few: each is a payment service's mistake). */
export const HELD_BOUND = 10_000;

/** The final statuses that contradict each other: both came, and which is true is for a person to find out. */
const CONTRADICTING: Record<'order' | 'refund', readonly string[]> = {
  order: ['COMPLETED', 'CANCELED'],
  refund: ['FINALIZED', 'CANCELED'],
};

const heldNote = (kept: string, came: string): string =>
  `held: ${kept} and then ${came} both came; book nothing until reconciled with the payment service`;

interface Contradiction {
  kind: 'order' | 'refund';
  subjectId: string;
  note: string;
  /** When the contradicting status came. */
  at: Date;
  /** The row to list when what is kept is CANCELED (it is in no list of final rows): null otherwise. */
  canceled: ExportRow | null;
}

/**
 * The POS's contradicted final statuses, from notifications_troubled (sql/009): conflicts received since the range's
 * start (a final status comes before what contradicts it, so a row final in the range is contradicted after it).
 */
async function contradictions(db: Db, range: ExportRange): Promise<Map<string, Contradiction>> {
  const rows = await db
    .selectFrom('notifications as n')
    .leftJoin('orders as o', (j) => j.onRef('o.order_id', '=', 'n.subject_id').on('n.kind', '=', 'order'))
    .leftJoin('refunds as r', (j) => j.onRef('r.refund_id', '=', 'n.subject_id').on('n.kind', '=', 'refund'))
    .leftJoin('orders as ro', 'ro.order_id', 'r.order_id')
    .select([
      'n.kind',
      'n.subject_id',
      'n.order_id',
      'n.status as came',
      'n.received_at',
      'o.status as order_status',
      'o.ext_order_id',
      'o.payment_id',
      'o.total_amount',
      'o.currency_code',
      'o.local_receipt_date_time',
      'r.status as refund_status',
      'r.refund_date',
      'r.status_date_time',
      'r.ext_order_id as refund_ext_order_id',
      'r.ext_refund_id',
      'r.amount',
      'r.currency_code as refund_currency_code',
      'ro.payment_id as refund_payment_id',
    ])
    .where('n.outcome', '=', 'conflict')
    .where('n.pos_id', '=', range.posId)
    .where('n.received_at', '>=', range.from)
    .orderBy('n.received_at')
    .limit(HELD_BOUND)
    .execute();
  const found = new Map<string, Contradiction>();
  for (const n of rows) {
    const kept = n.kind === 'order' ? n.order_status : n.refund_status;
    const pair = CONTRADICTING[n.kind];
    if (kept === null || kept === n.came || !pair.includes(kept) || !pair.includes(n.came)) continue;
    const key = `${n.kind}:${n.subject_id}`;
    if (found.has(key)) continue;
    const inRange = n.received_at >= range.from && n.received_at < range.to;
    const note = heldNote(kept, n.came);
    found.set(key, {
      kind: n.kind,
      subjectId: n.subject_id,
      note,
      at: n.received_at,
      canceled:
        kept !== 'CANCELED' || !inRange
          ? null
          : n.kind === 'order'
            ? {
                kind: 'held_payment',
                held: note,
                at: n.received_at,
                said: [n.local_receipt_date_time],
                orderId: n.order_id,
                extOrderId: n.ext_order_id,
                paymentId: n.payment_id,
                refundId: null,
                extRefundId: null,
                amount: n.total_amount,
                currencyCode: n.currency_code,
                posId: range.posId,
              }
            : {
                kind: 'held_refund',
                held: note,
                at: n.received_at,
                said: [n.refund_date, n.status_date_time],
                orderId: n.order_id,
                extOrderId: n.refund_ext_order_id,
                paymentId: n.refund_payment_id,
                refundId: n.subject_id,
                extRefundId: n.ext_refund_id,
                amount: n.amount,
                currencyCode: n.refund_currency_code,
                posId: range.posId,
              },
    });
  }
  return found;
}

/**
 * Payments and refunds as they became final, in time order; a contradicted one (the other final status came too)
 * as held, where it would have been, and one kept CANCELED whose COMPLETED or FINALIZED came in the range, as held
 * at the time that came.
 */
export async function* exportRows(db: Db, range: ExportRange): AsyncGenerator<ExportRow> {
  const contradicted = await contradictions(db, range);
  const canceled = [...contradicted.values()].flatMap((c) => (c.canceled === null ? [] : [c.canceled]));
  let first = canceled.shift();
  for await (const row of finalRows(db, range)) {
    while (first !== undefined && first.at.getTime() <= row.at.getTime()) {
      yield first;
      first = canceled.shift();
    }
    const held = contradicted.get(row.kind === 'payment' ? `order:${row.orderId}` : `refund:${row.refundId ?? ''}`);
    yield held === undefined
      ? row
      : { ...row, kind: row.kind === 'payment' ? 'held_payment' : 'held_refund', held: held.note };
  }
  for (; first !== undefined; first = canceled.shift()) yield first;
}

/** Payments and refunds merged in time order, as they became final. */
async function* finalRows(db: Db, range: ExportRange): AsyncGenerator<ExportRow> {
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
