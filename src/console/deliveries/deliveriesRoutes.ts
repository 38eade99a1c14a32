import type { Request, Response, Router } from 'express';
import { DELIVERY_OUTCOMES, type DeliveryOutcome } from '../../domain/outcomes';
import type { Access } from '../frame/access';
import {
  ID,
  refusal,
  param,
  parseLocalTime,
  POS,
  readingNote,
  send,
  type ConsoleOptions,
  type PageFrame,
} from '../frame/consoleRouting';
import type { Html } from '../frame/html';
import type { PageContext } from '../frame/layout';
import { PAGE_SIZE } from '../frame/listBounds';
import { deliveriesPage as readDeliveriesPage } from './deliveriesQueries';
import { deliveriesPage } from './deliveriesView';

/** Longest window of the deliveries list: its days' partitions are read. */
const MAX_WINDOW_MS = 31 * 86_400_000;

/** The recent deliveries, filtered by outcome, POS and time, a keyset page at a time. */
export function deliveriesRoutes(
  router: Router,
  access: Access,
  settings: Pick<ConsoleOptions, 'db' | 'limited'> & PageFrame,
): void {
  const { db, limited, now, clock, context } = settings;

  router.get('/deliveries', async (req, res) => {
    const { viewer, data: page } = await access.readFor(req, res, 'viewer', () => deliveries(req, res));
    send(res, 200, page(context(req, viewer)));
  });

  /** The deliveries the filters ask for, as a page to draw for whoever may see it. */
  async function deliveries(req: Request, res: Response): Promise<(frame: PageContext) => Html> {
    const query = {
      outcome: param(req, 'outcome'),
      pos: param(req, 'pos'),
      from: param(req, 'from'),
      to: param(req, 'to'),
    };
    const cursor = param(req, 'cursor');
    if (query.outcome !== '' && !DELIVERY_OUTCOMES.includes(query.outcome as DeliveryOutcome))
      throw refusal(400, 'invalid_query', 'Bad filter', `outcome must be one of ${DELIVERY_OUTCOMES.join(', ')}.`);
    if (query.pos !== '' && !POS.test(query.pos))
      throw refusal(
        400,
        'invalid_query',
        'Bad filter',
        'pos must be a shop account (POS) id: letters, digits, _ and -.',
      );
    if (cursor !== '' && !ID.test(cursor))
      throw refusal(400, 'invalid_query', 'Bad filter', 'cursor must be a delivery id.');
    const toRead = query.to === '' ? null : parseLocalTime(clock, 'to', query.to, true);
    const to = toRead?.at ?? now();
    const fromRead = query.from === '' ? null : parseLocalTime(clock, 'from', query.from, false);
    const from = fromRead?.at ?? new Date(to.getTime() - 86_400_000);
    if (from.getTime() >= to.getTime())
      throw refusal(400, 'invalid_query', 'Bad filter', 'from must be before to: the range is given oldest first.');
    if (to.getTime() - from.getTime() > MAX_WINDOW_MS)
      throw refusal(400, 'invalid_query', 'Bad filter', 'from and to may be at most 31 days apart.');
    const notes = [
      fromRead ? readingNote('from', query.from, fromRead) : null,
      toRead ? readingNote('to', query.to, toRead) : null,
    ].filter((n): n is string => n !== null);
    const outcome = DELIVERY_OUTCOMES.find((o) => o === query.outcome) ?? null;
    const rows = await limited(res, () =>
      readDeliveriesPage(db, {
        outcome,
        posId: query.pos === '' ? null : query.pos,
        from,
        to,
        before: cursor === '' ? null : cursor,
      }),
    );
    const next = rows.length > PAGE_SIZE ? (rows[PAGE_SIZE - 1]?.id ?? null) : null;
    // The form shows local times as its datetime-local inputs hold them, whatever form they were typed in.
    const shown = { ...query, from: fromRead ? clock.inputValue(from) : '', to: toRead ? clock.inputValue(to) : '' };
    return (frame) => deliveriesPage(frame, shown, { from, to, notes }, rows.slice(0, PAGE_SIZE), next);
  }
}
