import { sql, type RawBuilder } from 'kysely';
import type { Database } from './schema';

/** A table of schema.ts. */
export type Table = keyof Database;

/** A column of a table of schema.ts. */
export type Column<T extends Table> = keyof Database[T] & string;

/** A column of a table as SQL (columnsOf). */
export type ColumnRef = RawBuilder<unknown>;

/**
 * A table's columns for hand-written SQL, each name checked against schema.ts (so renaming a column fails tsc
 * wherever its old name is written): `const o = columnsOf('outbox_events', 'o')`, then `${o('published_at')}`
 * is `"o"."published_at"`. The table's own name, the same way: `tableOf(table)`. No other way to name a table
 * or a column in a `sql` template passes lint (lint/localRules.cjs: local/typed-sql-names).
 */
export function columnsOf<T extends Table>(_table: T, alias?: string): (column: Column<T>) => ColumnRef {
  // Made once per column: statements built per batch (the relay's, the history read) would otherwise parse the
  // same reference again each time. A RawBuilder is immutable, so one serves every statement.
  const refs = new Map<Column<T>, ColumnRef>();
  return (column) => {
    let ref = refs.get(column);
    if (ref === undefined) {
      ref = sql.ref(alias === undefined ? column : `${alias}.${column}`);
      refs.set(column, ref);
    }
    return ref;
  };
}

/** Columns of a table as a list, `"a", "b"` (an INSERT's, a COPY's). */
export const columnListOf = <T extends Table>(table: T, columns: ReadonlyArray<Column<T>>): RawBuilder<unknown> =>
  sql.join(columns.map(columnsOf(table)));

/** A table of schema.ts as SQL: `${tableOf('orders')}` is `"orders"`. */
export const tableOf = (table: Table): RawBuilder<unknown> => sql.table(table);
