import { DELIVERY_OUTCOMES, type DeliveryOutcome } from '../domain/outcomes';
import { auditPage as readAuditPage } from '../history/auditQueries';
import { readOrderStory } from '../orderStory/orderStoryQueries';
import { attention } from './queries/attention';
import { deliveriesPage as readDeliveriesPage, ordersOfNotifications } from './queries/lists';
import { overview, searchIds } from './queries/overview';
import { PAGE_SIZE } from './queries/rows';
import { ID, orderIdOf, PageError, param, parseTime, POS, send, type ConsoleKit, type Signed } from './consoleRouting';
import { href } from './html';
import { attentionPage, auditPage, deliveriesPage } from './views/lists';
import { orderPage } from './views/order';
import { overviewPage, searchResultsPage } from './views/overview';

/** Longest window of the deliveries list: its days' partitions are read. */
const MAX_WINDOW_MS = 31 * 86_400_000;

/** The pages that read: the overview, search, an order, what needs attention, the deliveries, the audit log. */
export function readRoutes(kit: ConsoleKit, { viewerOf }: Signed): void {
  const { router, options, db, limited, now, context } = kit;

  router.get('/', async (req, res) => {
    const viewer = viewerOf(req, res);
    const data = await limited(res, () => overview(db, now()));
    send(res, 200, overviewPage(context(req, viewer), data));
  });

  router.get('/search', async (req, res) => {
    const viewer = viewerOf(req, res);
    const q = param(req, 'q');
    if (q === '' || q.length > 200 || /\p{Cc}/u.test(q))
      throw new PageError(
        400,
        'Bad search',
        'Give one id of up to 200 characters: an orderId, extOrderId, refundId, extRefundId or PAYMENT_ID.',
      );
    const matches = await limited(res, () => searchIds(db, q));
    const orders = new Set(matches.map((m) => m.orderId));
    if (orders.size === 0) throw new PageError(404, 'Not found', `No order or refund has the id “${q}”.`);
    if (orders.size === 1) return res.redirect(303, href(['orders', matches[0]?.orderId ?? '']));
    send(res, 200, searchResultsPage(context(req, viewer), q, matches));
  });

  router.get('/orders/:orderId', async (req, res) => {
    const viewer = viewerOf(req, res);
    const orderId = orderIdOf(req);
    const story = await limited(res, () => readOrderStory(db, orderId));
    if (story === null) throw new PageError(404, 'Not found', `No order or refund has the id “${orderId}”.`);
    send(
      res,
      200,
      orderPage(context(req, viewer), story, {
        personalData: viewer.role === 'operator' || options.viewersSeePersonalData,
        canAct: viewer.role === 'operator',
      }),
    );
  });

  router.get('/attention', async (req, res) => {
    const viewer = viewerOf(req, res);
    const data = await limited(res, () => attention(db, now()));
    send(
      res,
      200,
      attentionPage(context(req, viewer), data, {
        canAct: viewer.role === 'operator',
        quietAfterMs: options.quietAfterMs,
      }),
    );
  });

  router.get('/deliveries', async (req, res) => {
    const viewer = viewerOf(req, res);
    const query = {
      outcome: param(req, 'outcome'),
      pos: param(req, 'pos'),
      from: param(req, 'from'),
      to: param(req, 'to'),
    };
    const cursor = param(req, 'cursor');
    if (query.outcome !== '' && !DELIVERY_OUTCOMES.includes(query.outcome as DeliveryOutcome))
      throw new PageError(400, 'Bad filter', `outcome must be one of ${DELIVERY_OUTCOMES.join(', ')}.`);
    if (query.pos !== '' && !POS.test(query.pos))
      throw new PageError(400, 'Bad filter', 'pos must be a POS id: letters, digits, _ and -.');
    if (cursor !== '' && !ID.test(cursor)) throw new PageError(400, 'Bad filter', 'cursor must be a delivery id.');
    const to = query.to === '' ? now() : parseTime('to', query.to);
    const from = query.from === '' ? new Date(to.getTime() - 86_400_000) : parseTime('from', query.from);
    if (from.getTime() >= to.getTime()) throw new PageError(400, 'Bad filter', 'from must be before to.');
    if (to.getTime() - from.getTime() > MAX_WINDOW_MS)
      throw new PageError(400, 'Bad filter', 'from and to may be at most 31 days apart.');
    const outcome = DELIVERY_OUTCOMES.find((o) => o === query.outcome) ?? null;
    const { rows, orders } = await limited(res, async () => {
      const rows = await readDeliveriesPage(db, {
        outcome,
        posId: query.pos === '' ? null : query.pos,
        from,
        to,
        before: cursor === '' ? null : cursor,
      });
      const shown = rows.slice(0, PAGE_SIZE);
      // A delivery's notification lives in its day: found by id there.
      const refs = shown
        .filter((d) => d.notificationId !== null)
        .map((d) => ({ id: d.notificationId ?? '', at: d.notificationReceivedAt }));
      return { rows, orders: await ordersOfNotifications(db, refs) };
    });
    const next = rows.length > PAGE_SIZE ? (rows[PAGE_SIZE - 1]?.id ?? null) : null;
    send(res, 200, deliveriesPage(context(req, viewer), query, rows.slice(0, PAGE_SIZE), orders, next));
  });

  router.get('/audit', async (req, res) => {
    const viewer = viewerOf(req, res);
    const cursor = param(req, 'cursor');
    if (cursor !== '' && !ID.test(cursor)) throw new PageError(400, 'Bad filter', 'cursor must be an audit id.');
    const rows = await limited(res, () => readAuditPage(db, cursor === '' ? null : cursor, PAGE_SIZE + 1));
    const next = rows.length > PAGE_SIZE ? (rows[PAGE_SIZE - 1]?.id ?? null) : null;
    send(res, 200, auditPage(context(req, viewer), rows.slice(0, PAGE_SIZE), next));
  });
}
