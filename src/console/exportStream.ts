import { once } from 'node:events';
import type { Response } from 'express';
import type { Db } from '../database/pool';
import { POS, SECURITY_HEADERS } from './consoleRouting';
import { BOM, CSV_HEADER, csvLine, exportLine } from './financeCsv';
import type { LocalTime } from './localTime';
import { exportRows } from './queries/export';

/**
 * The finance export's range and its CSV stream: one for the console (GET /console/export.csv) and the JSON API
 * (GET /exports/finance.csv), so that both give the same file for the same days.
 */

/** Most days one finance export covers. */
export const EXPORT_MAX_DAYS = 31;
const DAY = /^\d{4}-\d{2}-\d{2}$/;

export interface ExportRange {
  posId: string;
  fromDay: string;
  toDay: string;
  from: Date;
  to: Date;
}

/** The range a POS and two local days (in the clock's zone, both included) name, or what is wrong with them. */
export function readExportRange(
  posId: string,
  fromDay: string,
  toDay: string,
  clock: LocalTime,
): ExportRange | { problem: string } {
  if (!POS.test(posId)) return { problem: 'pos must be a shop account (POS) id: letters, digits, _ and -.' };
  const from = DAY.test(fromDay) ? clock.readLocalTime(fromDay, false) : null;
  const to = DAY.test(toDay) ? clock.readLocalTime(toDay, true) : null;
  if (from === null || to === null)
    return {
      problem: `from and to must be days such as 2026-11-27 (in ${clock.timeZone}), between the years 2000 and 2099.`,
    };
  if (to.at.getTime() <= from.at.getTime()) return { problem: 'from must not be after to: the first day comes first.' };
  const days = Math.round((Date.parse(`${toDay}T00:00Z`) - Date.parse(`${fromDay}T00:00Z`)) / 86_400_000) + 1;
  if (days > EXPORT_MAX_DAYS)
    return { problem: `An export covers at most ${EXPORT_MAX_DAYS} days; this asks for ${days}.` };
  return { posId, fromDay, toDay, from: from.at, to: to.at };
}

function writeHead(res: Response, range: ExportRange): void {
  res.status(200).set({
    ...SECURITY_HEADERS,
    'Content-Type': 'text/csv; charset=utf-8',
    'Content-Disposition': `attachment; filename="payments-${range.posId}-${range.fromDay}-to-${range.toDay}.csv"`,
  });
  res.write(BOM + csvLine(CSV_HEADER));
}

/** Streams the export a page of rows at a time, waiting for the client to take each write. */
export async function streamExport(
  db: Db,
  res: Response,
  range: ExportRange,
  clock: LocalTime,
  paymentServiceTimeZone: string,
  clientLeft: AbortSignal,
): Promise<void> {
  const rows = exportRows(db, { posId: range.posId, from: range.from, to: range.to });
  try {
    for await (const row of rows) {
      if (!res.headersSent) writeHead(res, range);
      if (clientLeft.aborted) return void res.destroy();
      if (!res.write(exportLine(row, clock, paymentServiceTimeZone))) await once(res, 'drain', { signal: clientLeft });
    }
    if (!res.headersSent) writeHead(res, range);
    res.end();
  } catch (error) {
    // Once the first line is sent, a failure can only cut the file short, never pass for its end.
    if (!res.headersSent) throw error;
    res.destroy(error instanceof Error ? error : undefined);
  }
}
