import type { RecordedStatuses } from '../database/schema';
import { readStoredNotification } from '../parsing/parseNotification';
import { ORDER_COLUMNS, REFUND_COLUMNS } from './batchRows';
import type { OrderProjection, RefundProjection } from './projection';
import { ProjectionFold, type StoredProjection } from './projectionFold';
import { orderToRow, refundToRow, type OrderRow, type RefundRow } from './projectionRows';

/**
 * What `reproject` decides for one page of orders, pure: their stored history folded into projections by the
 * recorder's own fold (projectionFold.ts), and those compared with the stored projections.
 */

/** The columns compared: every column of a projection but its key (and its timestamps and recorded statuses). */
export const COMPARED_ORDER_COLUMNS = ORDER_COLUMNS.filter((c) => c !== 'order_id' && c !== 'recorded');
export const COMPARED_REFUND_COLUMNS = REFUND_COLUMNS.filter((c) => c !== 'refund_id' && c !== 'recorded');

/** A stored notification as reproject reads it: in arrival order (id) within its order. */
export interface HistoryEntry {
  id: string;
  order_id: string;
  parsed: unknown;
  pos_id: string;
  /** Its receive time as text (microseconds kept, as the projections' recorded statuses keep it). */
  at: string;
}

/** A page of orders' projections rebuilt from their history. */
export interface Rebuilt {
  orders: Map<string, StoredProjection<OrderProjection>>;
  refunds: Map<string, StoredProjection<RefundProjection>>;
  /** The notifications history still holds, by id. */
  seen: Set<string>;
  /** Rows of `parsed` that are not a notification: nothing is applied while there are any. */
  unreadable: string[];
}

/**
 * Folds a page's history, by order and in arrival order, into fresh projections. `owners`: the POS each order
 * belongs to (order_owners); an order without one is taken as its notification names it.
 */
export function rebuildPage(history: readonly HistoryEntry[], owners: ReadonlyMap<string, string>): Rebuilt {
  const fold = new ProjectionFold();
  const seen = new Set<string>();
  const unreadable: string[] = [];
  for (const entry of history) {
    seen.add(entry.id);
    const n = readStoredNotification(entry.parsed);
    if (!n) unreadable.push(entry.id);
    else
      fold.fold(n, owners.get(n.orderId) ?? (n.kind === 'order' ? n.merchantPosId : null) ?? entry.pos_id, {
        id: entry.id,
        at: entry.at,
      });
  }
  const { orders, refunds } = fold.changed();
  return {
    orders: new Map(orders.map((o) => [o.projection.orderId, o])),
    refunds: new Map(refunds.map((r) => [r.projection.refundId, r])),
    seen,
    unreadable,
  };
}

export interface FieldDifference {
  column: string;
  stored: string | number | null;
  rebuilt: string | number | null;
}

export interface ProjectionDifference {
  table: 'orders' | 'refunds';
  id: string;
  /** missing: rebuilt but not stored; extra: stored but no notification supports it; different: fields differ. */
  change: 'missing' | 'extra' | 'different';
  fields: FieldDifference[];
}

const comparable = (value: unknown): string | number | null =>
  value === null || value === undefined
    ? null
    : typeof value === 'number' || typeof value === 'string'
      ? value
      : value instanceof Date
        ? value.toISOString()
        : JSON.stringify(value);

function compareRows<Row extends object>(
  table: 'orders' | 'refunds',
  columns: readonly (keyof Row & string)[],
  stored: ReadonlyMap<string, Row>,
  rebuilt: ReadonlyMap<string, Row>,
): ProjectionDifference[] {
  const differences: ProjectionDifference[] = [];
  const fieldsOf = (row: Row, side: 'stored' | 'rebuilt'): FieldDifference[] =>
    columns.map((c) =>
      side === 'stored'
        ? { column: c, stored: comparable(row[c]), rebuilt: null }
        : { column: c, stored: null, rebuilt: comparable(row[c]) },
    );
  for (const [id, row] of rebuilt) {
    const current = stored.get(id);
    if (!current) {
      differences.push({ table, id, change: 'missing', fields: fieldsOf(row, 'rebuilt') });
      continue;
    }
    const fields = columns
      .map((c) => ({ column: c, stored: comparable(current[c]), rebuilt: comparable(row[c]) }))
      .filter((f) => f.stored !== f.rebuilt);
    if (fields.length > 0) differences.push({ table, id, change: 'different', fields });
  }
  for (const [id, row] of stored)
    if (!rebuilt.has(id)) differences.push({ table, id, change: 'extra', fields: fieldsOf(row, 'stored') });
  return differences;
}

/** A page's stored projections (as read: amounts as text), with the statuses recorded for each. */
export interface StoredPage {
  orders: ReadonlyMap<string, OrderRow & { recorded: RecordedStatuses }>;
  refunds: ReadonlyMap<string, RefundRow & { recorded: RecordedStatuses }>;
}

/** What comparing one page found. */
export interface PageComparison {
  differences: ProjectionDifference[];
  /** Projections some of whose recorded statuses history retention removed: not compared (their history is partial). */
  partial: { orders: number; refunds: number };
}

/** The rows of a map but those named. */
const without = <Row>(rows: ReadonlyMap<string, Row>, left: ReadonlySet<string>): Map<string, Row> =>
  new Map([...rows].filter(([id]) => !left.has(id)));

const asRows = <P, Row>(rebuilt: ReadonlyMap<string, StoredProjection<P>>, toRow: (p: P) => Row) =>
  new Map([...rebuilt].map(([id, { projection }]) => [id, toRow(projection)]));

/** Compares a page's rebuilt projections with its stored ones. */
export function comparePage(stored: StoredPage, rebuilt: Rebuilt): PageComparison {
  const partialOf = (rows: StoredPage['orders'] | StoredPage['refunds']) =>
    new Set(
      [...rows]
        .filter(([, row]) => Object.values(row.recorded).some((entry) => !rebuilt.seen.has(entry.id)))
        .map(([id]) => id),
    );
  const partial = { orders: partialOf(stored.orders), refunds: partialOf(stored.refunds) };
  return {
    differences: [
      ...compareRows<OrderRow>(
        'orders',
        COMPARED_ORDER_COLUMNS,
        without(stored.orders, partial.orders),
        without(asRows(rebuilt.orders, orderToRow), partial.orders),
      ),
      ...compareRows<RefundRow>(
        'refunds',
        COMPARED_REFUND_COLUMNS,
        without(stored.refunds, partial.refunds),
        without(asRows(rebuilt.refunds, refundToRow), partial.refunds),
      ),
    ],
    partial: { orders: partial.orders.size, refunds: partial.refunds.size },
  };
}
