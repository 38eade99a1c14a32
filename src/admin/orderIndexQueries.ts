import { sql } from 'kysely';
import { columnsOf } from '../database/columns';
import type { Db } from '../database/pool';
import type { RecordedStatuses } from '../database/schema';
import { recordedContradiction } from '../orderStory/uncertainty';
import { idProblem } from '../parsing/identifiers';

/**
 * The JSON API's list of orders (GET /orders): newest change first, by time, status and POS, keyset-paged on
 * (updated_at, order_id) through sql/022's indexes, a bounded page at a time. The cursor is opaque to callers: the
 * last row's change (to the microsecond, as Postgres keeps it) and id, base64url JSON; a forged one is refused.
 */

export const ORDER_LIST_DEFAULT = 100;
export const ORDER_LIST_MAX = 1000;

export interface OrderListFilter {
  /** Changed at or after. */
  from: Date | null;
  /** Changed before. */
  to: Date | null;
  status: string | null;
  posId: string | null;
  limit: number;
  after: OrderCursor | null;
}

export interface OrderCursor {
  /** updated_at, ISO 8601 in UTC to the microsecond. */
  at: string;
  orderId: string;
}

export interface ListedOrder {
  orderId: string;
  extOrderId: string | null;
  merchantPosId: string | null;
  status: string;
  totalAmount: string | null;
  currencyCode: string | null;
  paymentId: string | null;
  updatedAt: string;
  /** Both final statuses, when the order was both COMPLETED and CANCELED (held until reconciled); else null. */
  contradicted: { statuses: { status: string; receivedAt: string }[]; held: true } | null;
}

const MICROS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

export const encodeCursor = (c: OrderCursor): string =>
  Buffer.from(JSON.stringify([c.at, c.orderId])).toString('base64url');

/** The cursor a `cursor` parameter holds, or null when it is none this service made. */
export function decodeCursor(text: string): OrderCursor | null {
  if (!/^[A-Za-z0-9_-]{1,400}$/.test(text)) return null;
  try {
    const parsed: unknown = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
    if (!Array.isArray(parsed) || parsed.length !== 2) return null;
    const [at, orderId] = parsed as unknown[];
    // Year 0000 parses in JavaScript but not in Postgres: refused here, never sent.
    if (typeof at !== 'string' || !MICROS.test(at) || at < '0001' || Number.isNaN(Date.parse(at))) return null;
    if (typeof orderId !== 'string' || idProblem(orderId) !== null) return null;
    return { at, orderId };
  } catch {
    return null;
  }
}

function contradictionOf(recorded: RecordedStatuses): ListedOrder['contradicted'] {
  const both = recordedContradiction('order', recorded);
  return both && { statuses: both.map((s) => ({ status: s.status, receivedAt: s.at.toISOString() })), held: true };
}

/** A page of orders, and the cursor of the next (null: none). */
export async function listOrders(
  db: Db,
  filter: OrderListFilter,
): Promise<{ orders: ListedOrder[]; next: string | null }> {
  const o = columnsOf('orders');
  const changed = sql<string>`to_char(${o('updated_at')} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;
  let query = db
    .selectFrom('orders')
    .select([
      'order_id',
      'ext_order_id',
      'merchant_pos_id',
      'status',
      sql<string | null>`${o('total_amount')}::text`.as('total_amount'),
      'currency_code',
      'payment_id',
      'recorded',
      changed.as('changed'),
    ])
    .orderBy('updated_at', 'desc')
    .orderBy('order_id', 'desc')
    .limit(filter.limit + 1);
  if (filter.posId !== null) query = query.where('merchant_pos_id', '=', filter.posId);
  if (filter.status !== null) query = query.where('status', '=', filter.status);
  if (filter.from !== null) query = query.where('updated_at', '>=', filter.from);
  if (filter.to !== null) query = query.where('updated_at', '<', filter.to);
  const after = filter.after;
  if (after !== null)
    query = query.where((eb) =>
      eb(eb.refTuple('updated_at', 'order_id'), '<', eb.tuple(sql<Date>`${after.at}::timestamptz`, after.orderId)),
    );
  const rows = await query.execute();
  const page = rows.slice(0, filter.limit);
  const last = page[page.length - 1];
  return {
    orders: page.map((r) => ({
      orderId: r.order_id,
      extOrderId: r.ext_order_id,
      merchantPosId: r.merchant_pos_id,
      status: r.status,
      totalAmount: r.total_amount,
      currencyCode: r.currency_code,
      paymentId: r.payment_id,
      updatedAt: r.changed,
      contradicted: contradictionOf(r.recorded),
    })),
    next: rows.length > filter.limit && last ? encodeCursor({ at: last.changed, orderId: last.order_id }) : null,
  };
}
