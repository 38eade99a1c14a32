import { sql, type InsertType, type RawBuilder } from 'kysely';
import { columnListOf, tableOf, type Column, type Table } from './columns';
import type { Slot } from './transaction';

/**
 * Rows written as one JSON parameter (json_populate_recordset): the recording transaction's (src/recording/
 * batchRows.ts) and the outbox's (src/outbox/outboxRows.ts). Each row type lists its columns once; a statement
 * takes only columns of the table it names.
 */

/** A value as the JSON parameter carries it to its column. */
type JsonCell<V> = V extends Buffer ? string : V;

/**
 * A table's row as json_populate_recordset reads it: the named columns, each value in its JSON form. A column no
 * longer in the table (renamed) is dropped from the row, so every row written with it fails tsc, not only this.
 */
export type JsonRow<Table, Column extends keyof Table = keyof Table> = {
  [C in Column & keyof Table]: JsonCell<Exclude<InsertType<Table[C]>, undefined>>;
};

/** The columns of a row type, each named once: one missing from the list, or not in the row, fails tsc. */
export function rowColumns<Row>(listed: { readonly [C in keyof Row]-?: true }): ReadonlyArray<keyof Row & string> {
  return Object.keys(listed) as Array<keyof Row & string>;
}

/** A table's rows from their JSON parameter: `SELECT columns FROM json_populate_recordset(NULL::table, rows)`. */
const fromJson = <T extends Table>(table: T, columns: ReadonlyArray<Column<T>>, rows: Slot): RawBuilder<unknown> =>
  sql`SELECT ${columnListOf(table, columns)} FROM json_populate_recordset(NULL::${tableOf(table)}, ${rows}::json)`;

/** `INSERT INTO table (columns) SELECT columns FROM` their JSON parameter: only columns of that table. */
export const insertJson = <T extends Table>(
  table: T,
  columns: ReadonlyArray<Column<T>>,
  rows: Slot,
): RawBuilder<unknown> =>
  sql`INSERT INTO ${tableOf(table)} (${columnListOf(table, columns)}) ${fromJson(table, columns, rows)}`;
