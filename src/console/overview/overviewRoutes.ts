import type { Request, Response, Router } from 'express';
import { SharedWork } from '../../reconciliation/sharedWork';
import type { Access } from '../frame/access';
import { refusal, param, send, type ConsoleOptions, type PageFrame } from '../frame/consoleRouting';
import { href, type Html } from '../frame/html';
import type { PageContext } from '../frame/layout';
import { LocalTime } from '../language/localTime';
import { orderSummaries, overview, searchIds, type Overview } from './overviewQueries';
import { overviewPage } from './overviewView';
import { searchResultsPage } from './searchView';

/** What the overview and search use of the console's options. */
export type OverviewSettings = Pick<ConsoleOptions, 'db' | 'limited' | 'expectedUnroutedTypes'> & PageFrame;

/** The overview (today's notifications, deliveries and events) and the search box's answer. */
export function overviewRoutes(router: Router, access: Access, settings: OverviewSettings): void {
  const { db, limited, now, clock, context } = settings;
  // The overview is a page a team leaves open and reloads: loads that arrive while one read is under way share it,
  // so 32 people reloading cost the database one read, not 32.
  const overviewReads = new SharedWork<Overview>();

  router.get('/', async (req, res) => {
    const today = clock.localDay(now());
    const start = clock.startOfDay(today);
    const end = clock.startOfDay(LocalTime.nextDay(today));
    const { viewer, data } = await access.readFor(req, res, 'viewer', () =>
      limited(res, (clientLeft) =>
        overviewReads.run(
          start.toISOString(),
          () => overview(db, start, end, settings.expectedUnroutedTypes),
          clientLeft,
        ),
      ),
    );
    send(res, 200, overviewPage(context(req, viewer), data, { start, text: today }));
  });

  router.get('/search', async (req, res) => {
    const { viewer, data: found } = await access.readFor(req, res, 'viewer', () => search(req, res));
    if (typeof found === 'string') return res.redirect(303, href(['orders', found]).path);
    send(res, 200, found(context(req, viewer)));
  });

  /** What a search finds: the one order its id names, or a page of the several, to draw for whoever may see it. */
  async function search(req: Request, res: Response): Promise<string | ((frame: PageContext) => Html)> {
    const q = param(req, 'q');
    if (q === '' || q.length > 200 || /\p{Cc}/u.test(q))
      throw refusal(
        400,
        'invalid_query',
        'Bad search',
        'Give one id of up to 200 characters: an order id (orderId), shop reference (extOrderId), payment id ' +
          '(PAYMENT_ID), refund id (refundId) or the shop’s refund reference (extRefundId).',
      );
    const matches = await limited(res, () => searchIds(db, q));
    const orders = new Set(matches.map((m) => m.orderId));
    if (orders.size === 0)
      throw refusal(
        404,
        'not_found',
        'Not found',
        `No order or refund has the id “${q}”: not as an order id, shop reference, payment id, refund id or shop’s ` +
          'refund reference. Check it with the customer; a payment started moments ago may not be here yet.',
      );
    if (orders.size === 1) return matches[0]?.orderId ?? '';
    const summaries = await limited(res, () => orderSummaries(db, [...orders]));
    return (frame) => searchResultsPage(frame, q, matches, summaries);
  }
}
