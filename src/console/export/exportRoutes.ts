import type { Router } from 'express';
import type { Access } from '../frame/access';
import { refusal, param, send, type ConsoleOptions, type PageFrame } from '../frame/consoleRouting';
import type { LocalTime } from '../language/localTime';
import { exportRows } from './exportQueries';
import { EXPORT_MAX_DAYS, readExportRange, streamExport, type ExportRange } from './exportStream';
import { exportPage } from './exportView';
import { exportTotals } from './financeCsv';

/** What the finance export uses of the console's options. */
export type ExportSettings = Pick<ConsoleOptions, 'db' | 'limited' | 'knownPos' | 'paymentServiceTimeZone'> & PageFrame;

/** The finance export: its form with the chosen days' totals, and its CSV, streamed. */
export function exportRoutes(router: Router, access: Access, settings: ExportSettings): void {
  const { db, limited, now, clock, context } = settings;

  router.get('/export', async (req, res) => {
    const viewer = await access.viewerOf(req, res);
    const today = clock.localDay(now());
    const shortcuts = {
      today,
      yesterday: clock.localDay(new Date(clock.startOfDay(today).getTime() - 1)),
      monthStart: `${today.slice(0, 8)}01`,
    };
    const form = {
      pos: param(req, 'pos') || (settings.knownPos.length === 1 ? (settings.knownPos[0] ?? '') : ''),
      from: param(req, 'from') || today,
      to: param(req, 'to') || today,
    };
    // The totals, once a POS and days are chosen: the same rows the CSV is made of, added up.
    const chosen = param(req, 'pos') !== '' ? exportRangeOf(form, clock) : null;
    const totals = chosen === null ? null : await limited(res, () => exportTotals(exportRows(db, chosen)));
    send(res, 200, exportPage(context(req, viewer), form, settings.knownPos, EXPORT_MAX_DAYS, shortcuts, totals));
  });

  router.get('/export.csv', async (req, res) => {
    await access.viewerOf(req, res);
    const range = exportRangeOf({ pos: param(req, 'pos'), from: param(req, 'from'), to: param(req, 'to') }, clock);
    await limited(res, (clientLeft) =>
      streamExport(db, res, range, clock, settings.paymentServiceTimeZone, clientLeft),
    );
  });
}

function exportRangeOf(form: { pos: string; from: string; to: string }, clock: LocalTime): ExportRange {
  const range = readExportRange(form.pos, form.from, form.to, clock);
  if ('problem' in range) throw refusal(400, 'invalid_query', 'Bad export', range.problem);
  return range;
}
