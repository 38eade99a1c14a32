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
  'time',
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

/** A payment or refund as a line: the amount in major units, or, when it has none, empty and said why. */
export function exportLine(row: ExportRow, clock: LocalTime): string {
  const major = row.amount === null || row.currencyCode === null ? null : majorUnits(row.amount, row.currencyCode);
  const note =
    row.amount === null
      ? 'no amount was received'
      : major === null
        ? `amount not in major units: ${row.amount} minor units of ${row.currencyCode ?? 'an unknown currency'}, as received`
        : '';
  return csvLine([
    row.kind,
    clock.isoWithOffset(row.at),
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
