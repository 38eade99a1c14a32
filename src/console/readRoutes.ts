import type { Request, Response, Router } from 'express';
import { DELIVERY_OUTCOMES, type DeliveryOutcome } from '../domain/outcomes';
import { idProblem } from '../parsing/identifiers';
import type { Access } from './access';
import {
  ID,
  orderIdOf,
  PageError,
  param,
  parseLocalTime,
  POS,
  readingNote,
  send,
  type ConsoleOptions,
} from './consoleRouting';
import { exportTotals } from './financeCsv';
import { EXPORT_MAX_DAYS, readExportRange, streamExport, type ExportRange } from './exportStream';
import { href, type Html } from './html';
import { LocalTime } from './localTime';
import { AUDIT_ACTIONS, auditPage as readAuditPage } from '../audit/auditQueries';
import { readOrderStory } from '../orderStory/orderStoryQueries';
import { quarantinedNotification } from '../recording/quarantineQueries';
import { SharedWork } from '../reconciliation/sharedWork';
import { attention, type Attention } from './queries/attention';
import { exportRows } from './queries/export';
import { deliveriesPage as readDeliveriesPage } from './queries/lists';
import { orderSummaries, overview, searchIds, type Overview } from './queries/overview';
import { PAGE_SIZE } from './queries/rows';
import { signedIn } from './queries/sessions';
import { attentionPage } from './views/attention';
import { exportPage } from './views/export';
import { glossaryPage } from './views/glossary';
import type { PageContext, Viewer } from './views/layout';
import { auditPage, deliveriesPage, quarantinePage, sessionsPage } from './views/lists';
import { orderPage } from './views/order';
import { overviewPage, searchResultsPage } from './views/overview';

/** Longest window of the deliveries list: its days' partitions are read. */
const MAX_WINDOW_MS = 31 * 86_400_000;

/** What the reading pages use of the console's options, and how they draw a page's frame. */
export type ReadSettings = Pick<
  ConsoleOptions,
  | 'db'
  | 'limited'
  | 'viewersSeePersonalData'
  | 'quietAfterMs'
  | 'confirmWithinMs'
  | 'knownPos'
  | 'reconciliation'
  | 'checkSchedule'
  | 'sessionIdleMs'
  | 'expectedUnroutedTypes'
  | 'paymentServiceTimeZone'
> & { now: () => Date; clock: LocalTime; context: (req: Request, viewer: Viewer | null) => PageContext };

/**
 * The pages that read: the overview, search, an order, what needs attention, the deliveries, a notification set
 * aside, the audit log, the glossary, the finance export, and (operators) who is signed in.
 */
export function readRoutes(router: Router, access: Access, settings: ReadSettings): void {
  const { db, limited, now, clock, context } = settings;
  const options = settings;
  const personalData = (viewer: Viewer): boolean => viewer.role === 'operator' || options.viewersSeePersonalData;
  // The overview and the board are the pages a team leaves open and reloads: loads that arrive while one read is
  // under way share it (16 queries for the board), so 32 people reloading cost the database one read, not 32.
  const boardReads = new SharedWork<Attention>();
  const overviewReads = new SharedWork<Overview>();

  router.get('/', async (req, res) => {
    const today = clock.localDay(now());
    const start = clock.startOfDay(today);
    const end = clock.startOfDay(LocalTime.nextDay(today));
    const { viewer, data } = await access.readFor(req, res, 'viewer', () =>
      limited(res, (clientLeft) =>
        overviewReads.run(
          start.toISOString(),
          () => overview(db, start, end, options.expectedUnroutedTypes),
          clientLeft,
        ),
      ),
    );
    send(res, 200, overviewPage(context(req, viewer), data, { start, text: today }));
  });

  router.get('/glossary', async (req, res) => {
    // Words only, no data: readable before signing in too (the sign-in page links it).
    let viewer: Viewer | null = null;
    try {
      viewer = await access.viewerOf(req, res);
    } catch (error) {
      if (!(error instanceof PageError)) throw error;
    }
    send(res, 200, glossaryPage(context(req, viewer)));
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
      throw new PageError(
        400,
        'Bad search',
        'Give one id of up to 200 characters: an order id (orderId), shop reference (extOrderId), payment id ' +
          '(PAYMENT_ID), refund id (refundId) or the shop’s refund reference (extRefundId).',
      );
    const matches = await limited(res, () => searchIds(db, q));
    const orders = new Set(matches.map((m) => m.orderId));
    if (orders.size === 0)
      throw new PageError(
        404,
        'Not found',
        `No order or refund has the id “${q}”: not as an order id, shop reference, payment id, refund id or shop’s ` +
          'refund reference. Check it with the customer; a payment started moments ago may not be here yet.',
      );
    if (orders.size === 1) return matches[0]?.orderId ?? '';
    const summaries = await limited(res, () => orderSummaries(db, [...orders]));
    return (frame) => searchResultsPage(frame, q, matches, summaries);
  }

  router.get('/orders/:orderId', async (req, res) => {
    const { viewer, data: story } = await access.readFor(req, res, 'viewer', async () => {
      const orderId = orderIdOf(req);
      const found = await limited(res, () => readOrderStory(db, orderId));
      if (found === null) throw new PageError(404, 'Not found', `No order or refund has the id “${orderId}”.`);
      return found;
    });
    send(
      res,
      200,
      orderPage(context(req, viewer), story, {
        personalData: personalData(viewer),
        canAct: viewer.role === 'operator',
        checks: options.checkSchedule,
        confirmWithinMs: options.confirmWithinMs,
      }),
    );
  });

  router.get('/attention', async (req, res) => {
    const { viewer, data } = await access.readFor(req, res, 'viewer', () =>
      limited(res, (clientLeft) =>
        boardReads.run('board', () => attention(db, now(), options.expectedUnroutedTypes), clientLeft),
      ),
    );
    send(
      res,
      200,
      attentionPage(context(req, viewer), data, {
        canAct: viewer.role === 'operator',
        quietAfterMs: options.quietAfterMs,
        confirmWithinMs: options.confirmWithinMs,
        checksOn: options.reconciliation !== null,
      }),
    );
  });

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
      throw new PageError(400, 'Bad filter', `outcome must be one of ${DELIVERY_OUTCOMES.join(', ')}.`);
    if (query.pos !== '' && !POS.test(query.pos))
      throw new PageError(400, 'Bad filter', 'pos must be a shop account (POS) id: letters, digits, _ and -.');
    if (cursor !== '' && !ID.test(cursor)) throw new PageError(400, 'Bad filter', 'cursor must be a delivery id.');
    const toRead = query.to === '' ? null : parseLocalTime(clock, 'to', query.to, true);
    const to = toRead?.at ?? now();
    const fromRead = query.from === '' ? null : parseLocalTime(clock, 'from', query.from, false);
    const from = fromRead?.at ?? new Date(to.getTime() - 86_400_000);
    if (from.getTime() >= to.getTime())
      throw new PageError(400, 'Bad filter', 'from must be before to: the range is given oldest first.');
    if (to.getTime() - from.getTime() > MAX_WINDOW_MS)
      throw new PageError(400, 'Bad filter', 'from and to may be at most 31 days apart.');
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

  router.get('/quarantine/:id', async (req, res, next) => {
    const id = typeof req.params.id === 'string' ? req.params.id : '';
    // `/quarantine/retry` is the bulk retry's confirmation (actionRoutes.ts).
    if (!ID.test(id)) return next();
    const { viewer, data: found } = await access.readFor(req, res, 'viewer', async () => {
      const stored = await limited(res, () => quarantinedNotification(db, id));
      if (stored === null) throw new PageError(404, 'Not found', `No notification set aside has the number ${id}.`);
      return stored;
    });
    send(
      res,
      200,
      quarantinePage(context(req, viewer), found, {
        personalData: personalData(viewer),
        canAct: viewer.role === 'operator',
      }),
    );
  });

  router.get('/audit', async (req, res) => {
    const { viewer, data: page } = await access.readFor(req, res, 'viewer', () => audit(req, res));
    send(res, 200, page(context(req, viewer)));
  });

  /** The audit rows the filters ask for, as a page to draw for whoever may see it. */
  async function audit(req: Request, res: Response): Promise<(frame: PageContext) => Html> {
    const query = {
      actor: param(req, 'actor'),
      action: param(req, 'action'),
      order: param(req, 'order'),
      from: param(req, 'from'),
      to: param(req, 'to'),
    };
    const cursor = param(req, 'cursor');
    if (query.actor.length > 200 || /\p{Cc}/u.test(query.actor))
      throw new PageError(400, 'Bad filter', 'person must be a name of up to 200 characters.');
    const action = AUDIT_ACTIONS.find((a) => a === query.action) ?? null;
    if (query.action !== '' && action === null)
      throw new PageError(400, 'Bad filter', `action must be one of ${AUDIT_ACTIONS.join(', ')}.`);
    const orderProblem = query.order === '' ? null : idProblem(query.order);
    if (orderProblem !== null) throw new PageError(400, 'Bad filter', `order is not an order id: ${orderProblem}.`);
    if (cursor !== '' && !ID.test(cursor)) throw new PageError(400, 'Bad filter', 'cursor must be an audit id.');
    const from = query.from === '' ? null : parseLocalTime(clock, 'from', query.from, false).at;
    const to = query.to === '' ? null : parseLocalTime(clock, 'to', query.to, true).at;
    if (from !== null && to !== null && from.getTime() >= to.getTime())
      throw new PageError(400, 'Bad filter', 'from must be before to: the range is given oldest first.');
    const rows = await limited(res, () =>
      readAuditPage(
        db,
        {
          actor: query.actor === '' ? null : query.actor,
          action,
          orderId: query.order === '' ? null : query.order,
          from,
          to,
          before: cursor === '' ? null : cursor,
        },
        PAGE_SIZE + 1,
      ),
    );
    const next = rows.length > PAGE_SIZE ? (rows[PAGE_SIZE - 1]?.id ?? null) : null;
    return (frame) => auditPage(frame, query, rows.slice(0, PAGE_SIZE), next);
  }

  router.get('/sessions', async (req, res) => {
    const { viewer, data: sessions } = await access.readFor(req, res, 'operator', () =>
      limited(res, () => signedIn(db, now(), settings.sessionIdleMs)),
    );
    send(res, 200, sessionsPage(context(req, viewer), sessions));
  });

  router.get('/export', async (req, res) => {
    const viewer = await access.viewerOf(req, res);
    const today = clock.localDay(now());
    const shortcuts = {
      today,
      yesterday: clock.localDay(new Date(clock.startOfDay(today).getTime() - 1)),
      monthStart: `${today.slice(0, 8)}01`,
    };
    const form = {
      pos: param(req, 'pos') || (options.knownPos.length === 1 ? (options.knownPos[0] ?? '') : ''),
      from: param(req, 'from') || today,
      to: param(req, 'to') || today,
    };
    // The totals, once a POS and days are chosen: the same rows the CSV is made of, added up.
    const chosen = param(req, 'pos') !== '' ? exportRangeOf(form, clock) : null;
    const totals = chosen === null ? null : await limited(res, () => exportTotals(exportRows(db, chosen)));
    send(res, 200, exportPage(context(req, viewer), form, options.knownPos, EXPORT_MAX_DAYS, shortcuts, totals));
  });

  router.get('/export.csv', async (req, res) => {
    await access.viewerOf(req, res);
    const range = exportRangeOf({ pos: param(req, 'pos'), from: param(req, 'from'), to: param(req, 'to') }, clock);
    await limited(res, (clientLeft) => streamExport(db, res, range, clock, options.paymentServiceTimeZone, clientLeft));
  });
}

function exportRangeOf(form: { pos: string; from: string; to: string }, clock: LocalTime): ExportRange {
  const range = readExportRange(form.pos, form.from, form.to, clock);
  if ('problem' in range) throw new PageError(400, 'Bad export', range.problem);
  return range;
}
