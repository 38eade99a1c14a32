import { bookingInstant } from '../domain/paymentServiceTime';
import type { LocalTime } from './localTime';
import { majorUnits } from './money';
import type { ExportRow } from './queries/export';

/**
 * The finance export as CSV (pure): RFC 4180 (every cell quoted, CRLF line ends), UTF-8 with a byte order mark so
 * that a spreadsheet reads "Zażółć" as written. Amounts in major units with a dot, times with their offset. A cell
 * that a spreadsheet would read as a formula is prefixed with an apostrophe, as OWASP's advice on CSV injection has
 * it, so it stays text (a shop reference is text the buyer's shop chose, or anyone who can create an order).
 */

export const CSV_HEADER = [
  'type',
  'booking_time',
  'shop_reference',
  'payment_id',
  'order_id',
  'refund_id',
  'shop_refund_reference',
  'amount',
  'currency',
  'shop_account',
  'note',
] as const;

/** The byte order mark that tells a spreadsheet the file is UTF-8. */
export const BOM = '\ufeff';

/**
 * What a spreadsheet may read as the start of a formula (OWASP, "CSV Injection"): = + - @, also in their fullwidth
 * (＝ ＋ － ＠) and small (﹦ ﹢ ﹣ ﹫) forms, which some spreadsheets fold to them, and also after leading
 * whitespace of any kind (a space, a no-break space, an ideographic space) or an invisible zero-width character,
 * which they skip; or a tab, a carriage return or a line feed first.
 */
const FORMULA_START = /^(?:[\t\r\n]|[\s\u200b-\u200d\u2060]*[=+\-@\uff1d\uff0b\uff0d\uff20\ufe66\ufe62\ufe63\ufe6b])/u;

/** One cell: quoted, quotes doubled, and a would-be formula made text. */
export function csvCell(value: string | null): string {
  const text = value ?? '';
  const safe = FORMULA_START.test(text) ? `'${text}` : text;
  return `"${safe.replace(/"/g, '""')}"`;
}

export const csvLine = (cells: ReadonlyArray<string | null>): string => `${cells.map(csvCell).join(',')}\r\n`;

/**
 * A payment or refund as a line: its booking time (the payment service's own, read in `paymentServiceTimeZone` when
 * it has no offset; when it gave none, when it was recorded) in the console's zone with its offset, the amount in
 * major units, or, when it has none, empty and said why.
 */
export function exportLine(row: ExportRow, clock: LocalTime, paymentServiceTimeZone: string): string {
  const major = row.amount === null || row.currencyCode === null ? null : majorUnits(row.amount, row.currencyCode);
  const amountNote =
    row.amount === null
      ? 'no amount was received'
      : major === null
        ? `amount not in major units: ${row.amount} minor units of ${row.currencyCode ?? 'an unknown currency'}, as received`
        : '';
  const note = [row.held, amountNote].filter((n) => n !== null && n !== '').join('; ');
  return csvLine([
    row.kind,
    clock.isoWithOffset(new Date(bookingInstant(row.said, row.at, paymentServiceTimeZone))),
    row.extOrderId,
    row.paymentId,
    row.orderId,
    row.refundId,
    row.extRefundId,
    major,
    row.currencyCode,
    row.posId,
    note,
  ]);
}

/** A type and currency's count and total on the export page: what the CSV's rows of that type and currency add up to. */
export interface ExportTotal {
  kind: ExportRow['kind'];
  currencyCode: string | null;
  count: number;
  /** The sum of the amounts, in minor units as received. */
  minorUnits: bigint;
  /** Rows of it with no amount (counted, not added). */
  withoutAmount: number;
}

/**
 * Counts and totals per type and currency of the export's rows, in the CSV's order of types: added up as they stream
 * by, so that memory is that of the totals whatever the days hold.
 */
export async function exportTotals(rows: AsyncIterable<ExportRow> | Iterable<ExportRow>): Promise<ExportTotal[]> {
  const totals = new Map<string, ExportTotal>();
  for await (const row of rows) {
    const key = `${row.kind} ${row.currencyCode ?? ''}`;
    const total = totals.get(key) ?? {
      kind: row.kind,
      currencyCode: row.currencyCode,
      count: 0,
      minorUnits: 0n,
      withoutAmount: 0,
    };
    total.count += 1;
    if (row.amount === null) total.withoutAmount += 1;
    else total.minorUnits += BigInt(row.amount);
    totals.set(key, total);
  }
  const order: ReadonlyArray<ExportRow['kind']> = ['payment', 'refund', 'held_payment', 'held_refund'];
  return [...totals.values()].sort(
    (a, b) =>
      order.indexOf(a.kind) - order.indexOf(b.kind) || (a.currencyCode ?? '').localeCompare(b.currencyCode ?? ''),
  );
}
