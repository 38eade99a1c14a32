import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import type { Table } from '../database/columns';
import { copyInto, type SeedTable } from './seedQueries';

/**
 * Rows into a table through COPY, the fastest way Postgres takes them: each value in its column's text input
 * (the same text the recorder's JSON parameters carry: bytea as hex, amounts as text, jsonb as JSON), in COPY's
 * text format.
 */

const SPECIAL = /[\\\t\n\r]/;
const SPECIALS = /[\\\t\n\r]/g;
const ESCAPED: Readonly<Record<string, string>> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };

/** One value in COPY's text format: NULL as \N, text as it is, anything else as its JSON, the four specials escaped. */
export function copyValue(value: unknown): string {
  if (value === null || value === undefined) return '\\N';
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return SPECIAL.test(text) ? text.replace(SPECIALS, (c) => ESCAPED[c] ?? c) : text;
}

/** Rows as COPY text, the columns in the order given. */
export function copyText<Row>(rows: readonly Row[], columns: ReadonlyArray<keyof Row & string>): string {
  let text = '';
  for (const row of rows) {
    let line = '';
    for (let i = 0; i < columns.length; i++) {
      const column = columns[i] as keyof Row;
      line += (i === 0 ? '' : '\t') + copyValue(row[column]);
    }
    text += `${line}\n`;
  }
  return text;
}

/** Copies `rows` into their table on `client`, in its transaction if one is open. */
export async function copyRows<Row, T extends Table>(
  client: pg.ClientBase,
  target: SeedTable<Row, T>,
  rows: readonly Row[],
): Promise<void> {
  if (rows.length === 0) return;
  await pipeline(Readable.from([copyText(rows, target.columns)]), client.query(copyFrom(copyInto(target))));
}
