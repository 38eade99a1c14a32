import { randomBytes } from 'node:crypto';
import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import { isDatabaseUnavailable } from '../database/errors';
import type { Db } from '../database/pool';
import type { PooledTransactions } from '../database/transaction';
import { DELIVERY_OUTCOMES, type DeliveryOutcome } from '../domain/outcomes';
import { RequestError } from '../errors';
import type { Logger } from '../observability/logger';
import { republishOrderEvents } from '../outbox/republish';
import { idProblem } from '../parsing/identifiers';
import type { PosProblem, Reconciliation } from '../reconciliation/reconciliation';
import { retryOne, type RetryResult } from '../recording/quarantineRetry';
import { CONSOLE_CSS } from './assets';
import {
  attention,
  auditPage as readAuditPage,
  countOpenQuarantined,
  deliveriesPage as readDeliveriesPage,
  openQuarantinedIds,
  orderStory,
  ordersOfNotifications,
  overview,
  PAGE_SIZE,
  searchIds,
  type QuarantineFilter,
} from './consoleQueries';
import { href, html, type Html } from './html';
import { openSession, sealSession, tokenHolder, type ConsoleRole, type ConsoleToken } from './session';
import { confirmPage, resultPage, type Confirmation } from './views/actions';
import { problemPage, signInPage, type PageContext, type Viewer } from './views/layout';
import { attentionPage, auditPage, deliveriesPage } from './views/lists';
import { orderPage } from './views/order';
import { overviewPage, searchResultsPage } from './views/overview';

/** The admin port's cap on work at once (adminApp.ts), which every console page goes through. */
export type WorkLimit = <T>(res: Response, work: (clientLeft: AbortSignal) => Promise<T>) => Promise<T>;

export interface ConsoleOptions {
  /** The admin port's own pool. */
  db: Db;
  /** Transactions on that pool, for the recorder (quarantine retry). */
  transactions: PooledTransactions;
  /** Everyone who may sign in (CONSOLE_OPERATOR_TOKENS, CONSOLE_VIEWER_TOKENS, ADMIN_TOKEN as an operator). */
  tokens: readonly ConsoleToken[];
  /** Signs session cookies (CONSOLE_SESSION_SECRET); null: a random one for this process. */
  sessionSecret: string | null;
  sessionTtlMs: number;
  /** The admin port listens on loopback only: with no tokens, the console is then open (as operator `local`). */
  loopbackOnly: boolean;
  viewersSeePersonalData: boolean;
  quietAfterMs: number;
  reconciliation: Reconciliation | null;
  eventSource: string;
  /** Hints the relay that events were written (quarantine retry). */
  onEventsWritten: () => void;
  limited: WorkLimit;
  logger: Logger;
  now?: () => Date;
}

/** A page answered with its status (a 4xx or 5xx the person can read), raised anywhere in a console route. */
class PageError extends Error {
  constructor(
    readonly status: number,
    readonly title: string,
    message: string,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
  }
}

export const SESSION_COOKIE = 'console_session';
/** Quarantined notifications one bulk retry takes at most; the rest wait for the next one. */
export const BULK_RETRY_MAX = 200;
/** Longest window of the deliveries list: its days' partitions are read. */
const MAX_WINDOW_MS = 31 * 86_400_000;

/**
 * No script at all; styles from our own file only; nothing may frame the console; forms post only to it.
 * The SVG charts are inline markup, which needs no script or style exception.
 */
const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy':
    "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'no-referrer',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
  'Cache-Control': 'no-store',
};

/**
 * A POST from another site is refused: the browser says where it comes from in `Sec-Fetch-Site` (every current
 * browser sends it); without it (an older browser, a script), `Origin` must name this very host. With neither, it
 * is refused: a form post from a page always carries one of them.
 */
export function sameOrigin(req: Pick<Request, 'headers'>): boolean {
  const site = req.headers['sec-fetch-site'];
  if (typeof site === 'string') return site === 'same-origin';
  const origin = req.headers.origin;
  const host = req.headers.host;
  if (typeof origin !== 'string' || typeof host !== 'string') return false;
  try {
    return new URL(origin).host === host;
  } catch {
    return false;
  }
}

function cookieValue(req: Request, name: string): string | null {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq !== -1 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return null;
}

/**
 * The cookie is always Secure: browsers keep Secure cookies from http://localhost and 127.0.0.1 (a port-forward),
 * and anywhere else the console must be reached over TLS, so a cookie never travels in clear.
 */
const cookieAttributes = 'Path=/console; HttpOnly; Secure; SameSite=Strict';

function send(res: Response, status: number, page: Html, headers: Readonly<Record<string, string>> = {}): void {
  res
    .status(status)
    .set({ ...SECURITY_HEADERS, ...headers, 'Content-Type': 'text/html; charset=utf-8' })
    .send(page.text);
}

const ID = /^\d{1,18}$/;
const POS = /^[A-Za-z0-9_-]{1,64}$/;
const REASON = /^[a-z_]{1,64}$/;
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:\d{2})?)?$/;

/** A query parameter as one string ('' when absent); a repeated one is nonsense. */
function param(req: Request, name: string): string {
  const value = req.query[name];
  if (value === undefined) return '';
  if (typeof value !== 'string') throw new PageError(400, 'Bad request', `${name} is given more than once.`);
  return value.trim();
}

function field(req: Request, name: string): string {
  const body: unknown = req.body;
  const value =
    body !== null && typeof body === 'object' && name in body ? (body as Record<string, unknown>)[name] : '';
  return typeof value === 'string' ? value.trim() : '';
}

function parseTime(name: string, value: string): Date {
  const ms = TIMESTAMP.test(value)
    ? Date.parse(/T.*(Z|[+-]\d{2}:\d{2})$/.test(value) || !value.includes('T') ? value : `${value}Z`)
    : NaN;
  if (Number.isNaN(ms))
    throw new PageError(
      400,
      'Bad filter',
      `${name} must be a UTC time such as 2026-11-27T09:00Z or a day such as 2026-11-27.`,
    );
  return new Date(ms);
}

function orderIdOf(req: Request): string {
  const id = typeof req.params.orderId === 'string' ? req.params.orderId : '';
  const problem = idProblem(id);
  if (problem !== null) throw new PageError(400, 'Bad order id', `That is not an order id: ${problem}.`);
  return id;
}

function quarantineFilterOf(reason: string, pos: string): QuarantineFilter {
  if (reason !== '' && !REASON.test(reason))
    throw new PageError(400, 'Bad filter', 'reason must be a quarantine reason such as invalid_json.');
  if (pos !== '' && !POS.test(pos))
    throw new PageError(400, 'Bad filter', 'pos must be a POS id: letters, digits, _ and -.');
  return { reason: reason === '' ? null : reason, posId: pos === '' ? null : pos };
}

const POS_PROBLEMS: Record<PosProblem, { status: number; message: string }> = {
  pos_required: {
    status: 409,
    message: 'Nothing is recorded for this order and several POS are configured: use the admin API with a posId.',
  },
  unknown_pos: { status: 409, message: 'No payment API credentials are configured for this order’s POS.' },
  pos_mismatch: { status: 409, message: 'The order belongs to another POS.' },
};

function retryLine(r: RetryResult): Html {
  if (r.result === 'recorded')
    return html`#${r.id}: recorded (${r.outcome}${r.notificationId ? `, notification #${r.notificationId}` : ''},
    ${r.eventsWritten} event(s)); resolved.`;
  if (r.result === 'still_unreadable') return html`#${r.id}: still unreadable (${r.reason}: ${r.detail}); left open.`;
  return html`#${r.id}: ${r.result.replace('_', ' ')} (${r.detail}).`;
}

/** The console, under /console on the admin port: server-rendered pages, forms, no script. */
export function createConsole(options: ConsoleOptions): Router {
  const { db, limited, logger } = options;
  const now = options.now ?? (() => new Date());
  const secret = Buffer.from(options.sessionSecret ?? randomBytes(32).toString('hex'));
  const closed = options.tokens.length === 0 && !options.loopbackOnly;
  const open = options.tokens.length === 0 && options.loopbackOnly;
  const router = express.Router();

  const context = (req: Request, viewer: Viewer | null): PageContext => ({
    viewer,
    now: now(),
    q: typeof req.query.q === 'string' ? req.query.q : '',
  });

  const audit = async (
    viewer: { name: string; role: ConsoleRole | null },
    action: string,
    target: string | null,
    orderId: string | null,
    result: string,
    detail = '',
  ): Promise<void> => {
    await db
      .insertInto('console_audit')
      .values({
        actor: viewer.name,
        role: viewer.role,
        action,
        target,
        order_id: orderId,
        result,
        detail: detail.slice(0, 2000),
      })
      .execute();
  };

  router.use((req, res, next) => {
    res.set(SECURITY_HEADERS);
    if (closed && req.path !== '/assets/console.css')
      throw new PageError(
        403,
        'The console is closed',
        'No console token is set and the admin port is not bound to loopback: set CONSOLE_OPERATOR_TOKENS (or ' +
          'CONSOLE_VIEWER_TOKENS) and CONSOLE_SESSION_SECRET, or bind HOST to 127.0.0.1.',
      );
    if (req.method === 'POST' && !sameOrigin(req))
      throw new PageError(403, 'Refused', 'A form posted from another site is refused; use the console’s own pages.');
    next();
  });

  router.get('/assets/console.css', (_req, res) => {
    res.set({ 'Content-Type': 'text/css; charset=utf-8', 'Cache-Control': 'public, max-age=3600' }).send(CONSOLE_CSS);
  });

  const form = express.urlencoded({ extended: false, limit: 4096, parameterLimit: 20 });

  router.get('/sign-in', (req, res) => {
    if (open) return res.redirect(303, '/console');
    send(res, 200, signInPage(context(req, null), null));
  });

  router.post('/sign-in', form, async (req, res) => {
    if (open) return res.redirect(303, '/console');
    const holder = tokenHolder(options.tokens, field(req, 'token'));
    if (holder === null) {
      await audit({ name: '(unknown)', role: null }, 'sign_in', null, null, 'refused', 'no token matches');
      return send(res, 401, signInPage(context(req, null), 'That token is not valid.'));
    }
    await audit(holder, 'sign_in', null, null, 'signed_in');
    const expiresAt = Math.floor(now().getTime() / 1000) + Math.floor(options.sessionTtlMs / 1000);
    res.set(
      'Set-Cookie',
      `${SESSION_COOKIE}=${sealSession(secret, { name: holder.name, role: holder.role, expiresAt })}; ${cookieAttributes}; Max-Age=${Math.floor(options.sessionTtlMs / 1000)}`,
    );
    res.redirect(303, '/console');
  });

  /** Who is asking: a valid session, or everyone as operator `local` in the open mode; else a page saying why. */
  const viewerOf = (req: Request, res: Response): Viewer => {
    if (open) return { name: 'local', role: 'operator' };
    const value = cookieValue(req, SESSION_COOKIE);
    if (value === null) {
      if (req.method === 'GET') throw new PageError(303, 'Sign in', 'Sign in first.', { Location: '/console/sign-in' });
      throw new PageError(401, 'Sign in', 'Sign in first.');
    }
    const opened = openSession(secret, value, Math.floor(now().getTime() / 1000));
    if ('problem' in opened) {
      res.set('Set-Cookie', `${SESSION_COOKIE}=; ${cookieAttributes}; Max-Age=0`);
      throw new PageError(
        401,
        'Sign in again',
        opened.problem === 'expired'
          ? 'Your session has expired: sign in again.'
          : 'Your session is not valid: sign in again.',
      );
    }
    return { name: opened.session.name, role: opened.session.role };
  };

  const operatorOf = (req: Request, res: Response): Viewer => {
    const viewer = viewerOf(req, res);
    if (viewer.role !== 'operator')
      throw new PageError(403, 'Operators only', 'Only an operator may do this; you are signed in as a viewer.');
    return viewer;
  };

  router.post('/sign-out', async (req, res) => {
    const viewer = viewerOf(req, res);
    await audit(viewer, 'sign_out', null, null, 'signed_out');
    res.set('Set-Cookie', `${SESSION_COOKIE}=; ${cookieAttributes}; Max-Age=0`);
    res.redirect(303, open ? '/console' : '/console/sign-in');
  });

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
    const story = await limited(res, () => orderStory(db, orderId));
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
    const rows = await limited(res, () => readAuditPage(db, cursor === '' ? null : cursor));
    const next = rows.length > PAGE_SIZE ? (rows[PAGE_SIZE - 1]?.id ?? null) : null;
    send(res, 200, auditPage(context(req, viewer), rows.slice(0, PAGE_SIZE), next));
  });

  /** A confirmed action: GET shows what it will do, POST with confirm=yes does it and says what happened. */
  const action = (
    path: string,
    confirm: (req: Request, res: Response, viewer: Viewer) => Confirmation | Promise<Confirmation>,
    act: (
      req: Request,
      res: Response,
      viewer: Viewer,
    ) => Promise<{ status: number; title: string; lines: Html[]; back: { label: string; href: string } }>,
  ): void => {
    router.get(path, async (req, res) => {
      const viewer = operatorOf(req, res);
      send(res, 200, confirmPage(context(req, viewer), await confirm(req, res, viewer)));
    });
    router.post(path, form, async (req, res) => {
      const viewer = operatorOf(req, res);
      if (field(req, 'confirm') !== 'yes')
        throw new PageError(
          400,
          'Not confirmed',
          'Nothing was done: the action needs its confirmation (confirm=yes), from its confirmation page.',
        );
      const result = await act(req, res, viewer);
      send(res, result.status, resultPage(context(req, viewer), result.title, result.lines, result.back));
    });
  };

  action(
    '/orders/:orderId/reconcile',
    (req) => {
      const orderId = orderIdOf(req);
      return {
        title: `Reconcile order ${orderId} now`,
        explanation: html`<p>
          The service asks the payment API for this order’s status and its refunds’ now, and records what it says as a
          notification would be recorded (marked “via reconciliation”). Nothing changes if it says nothing new.
        </p>`,
        action: href(['orders', orderId, 'reconcile']),
        fields: {},
        button: 'reconcile now',
      };
    },
    async (req, res, viewer) => {
      const orderId = orderIdOf(req);
      const reconciliation = options.reconciliation;
      if (!reconciliation) {
        await audit(viewer, 'reconcile', orderId, orderId, 'refused', 'reconciliation is off');
        throw new PageError(
          409,
          'Reconciliation is off',
          'PAYMENT_API_URL is not set: the service cannot ask the payment API.',
        );
      }
      const checked = await limited(res, (clientLeft) =>
        reconciliation.reconcileOrder(orderId, undefined, false, clientLeft),
      );
      if ('problem' in checked) {
        await audit(viewer, 'reconcile', orderId, orderId, checked.problem);
        const { status, message } = POS_PROBLEMS[checked.problem];
        throw new PageError(status, 'Cannot reconcile', message);
      }
      const detail = `applied ${checked.applied.length}, stale ${checked.stale.length}, conflicts ${checked.conflicts.length}`;
      await audit(viewer, 'reconcile', orderId, orderId, checked.result, detail);
      const said = checked.said
        .map((s) => (s.kind === 'refund' ? `refund ${s.id} ${s.status}` : `order ${s.status}`))
        .join(', ');
      return {
        status: checked.result === 'unavailable' ? 503 : 200,
        title: `Reconciled order ${orderId}`,
        lines: [
          html`Result: <strong>${checked.result}</strong>.`,
          html`The payment API says: ${said === '' ? 'nothing' : said}.`,
          html`Recorded: ${detail}.`,
        ],
        back: { label: 'Back to the order', href: href(['orders', orderId]) },
      };
    },
  );

  action(
    '/orders/:orderId/republish',
    (req) => {
      const orderId = orderIdOf(req);
      return {
        title: `Re-publish the events of order ${orderId}`,
        explanation: html`<p>
          Its events already published and still in the outbox are published again, in order, each with its original id,
          so consumers that already have them ignore them (they deduplicate by id). Nothing new is written. Events
          deleted after OUTBOX_RETENTION cannot be re-published.
        </p>`,
        action: href(['orders', orderId, 'republish']),
        fields: {},
        button: 're-publish',
      };
    },
    async (req, res, viewer) => {
      const orderId = orderIdOf(req);
      const { republished } = await limited(res, () => republishOrderEvents(db, orderId));
      await audit(viewer, 'republish', orderId, orderId, 'done', `${republished} event(s) pending again`);
      options.onEventsWritten();
      return {
        status: 200,
        title: `Re-published the events of order ${orderId}`,
        lines: [html`${republished} event(s) will be published again, with their original ids.`],
        back: { label: 'Back to the order', href: href(['orders', orderId]) },
      };
    },
  );

  const quarantineIdOf = (req: Request): string => {
    const id = typeof req.params.id === 'string' ? req.params.id : '';
    if (!ID.test(id)) throw new PageError(400, 'Bad id', 'A quarantine id is a number.');
    return id;
  };

  action(
    '/quarantine/:id/retry',
    (req) => {
      const id = quarantineIdOf(req);
      return {
        title: `Retry quarantined notification #${id}`,
        explanation: html`<p>
          Its body is read again; if it now parses, it is recorded as a live delivery would be and the quarantine row is
          marked resolved, in one transaction. If not, it is left as it is.
        </p>`,
        action: href(['quarantine', id, 'retry']),
        fields: {},
        button: 'retry it',
      };
    },
    async (req, res, viewer) => {
      const id = quarantineIdOf(req);
      const result = await limited(res, () => retryOne(options.transactions, id, options.eventSource));
      await audit(
        viewer,
        'quarantine_retry',
        `quarantine #${id}`,
        null,
        result.result,
        'detail' in result ? result.detail : '',
      );
      if (result.result === 'recorded' && result.eventsWritten > 0) options.onEventsWritten();
      return {
        status: result.result === 'not_found' ? 404 : 200,
        title: `Retried quarantined notification #${id}`,
        lines: [retryLine(result)],
        back: { label: 'Back to what needs attention', href: '/console/attention' },
      };
    },
  );

  action(
    '/quarantine/retry',
    async (req, res) => {
      const reason = param(req, 'reason');
      const pos = param(req, 'pos');
      const filter = quarantineFilterOf(reason, pos);
      const count = await limited(res, () => countOpenQuarantined(db, filter, BULK_RETRY_MAX));
      return {
        title: 'Retry quarantined notifications',
        explanation: html`<p>
            <strong>${count > BULK_RETRY_MAX ? `More than ${BULK_RETRY_MAX}` : count}</strong> open quarantined
            notification(s)
            match${reason ? html` reason <code>${reason}</code>` : ''}${pos ? html` POS <code>${pos}</code>` : ''}. At
            most ${BULK_RETRY_MAX} are retried at once, oldest first; run it again for the rest.
          </p>
          <p>
            Each body is read again; one that now parses is recorded as a live delivery would be and resolved; the
            others are left open.
          </p>`,
        action: '/console/quarantine/retry',
        fields: { reason, pos },
        button: `retry ${Math.min(count, BULK_RETRY_MAX)}`,
      };
    },
    async (req, res, viewer) => {
      const reason = field(req, 'reason');
      const pos = field(req, 'pos');
      const filter = quarantineFilterOf(reason, pos);
      const results = await limited(res, async () => {
        const ids = await openQuarantinedIds(db, filter, BULK_RETRY_MAX);
        const done: RetryResult[] = [];
        for (const id of ids) {
          try {
            done.push(await retryOne(options.transactions, id, options.eventSource));
          } catch (error) {
            if (isDatabaseUnavailable(error)) throw error;
            done.push({ id, result: 'failed', detail: 'recording failed; nothing changed' });
          }
        }
        return done;
      });
      const recorded = results.filter((r) => r.result === 'recorded').length;
      const target = `quarantine reason=${reason || 'any'} pos=${pos || 'any'}`;
      await audit(viewer, 'quarantine_retry_all', target, null, `${recorded} of ${results.length} recorded`);
      if (recorded > 0) options.onEventsWritten();
      return {
        status: 200,
        title: 'Retried quarantined notifications',
        lines: [html`${recorded} of ${results.length} recorded.`, ...results.map(retryLine)],
        back: { label: 'Back to what needs attention', href: '/console/attention' },
      };
    },
  );

  router.use((req) => {
    throw new PageError(404, 'Not found', `There is no console page at ${req.path}.`);
  });

  router.use((error: unknown, req: Request, res: Response, _next: NextFunction) => {
    const viewer = null;
    if (error instanceof PageError) {
      if (error.status === 303) return res.set(SECURITY_HEADERS).redirect(303, error.headers.Location ?? '/console');
      const page =
        error.status === 401
          ? signInPage(context(req, viewer), error.message)
          : problemPage(context(req, viewer), error.title, error.message);
      return send(res, error.status, page, error.headers);
    }
    if (error instanceof RequestError)
      return send(res, error.status, problemPage(context(req, viewer), 'Busy', error.message), error.headers);
    const status = (error as { status?: unknown }).status;
    if (typeof status === 'number' && status >= 400 && status < 500)
      return send(res, status, problemPage(context(req, viewer), 'Bad request', 'The request could not be read.'));
    if (isDatabaseUnavailable(error))
      return send(
        res,
        503,
        problemPage(context(req, viewer), 'Unavailable', 'The database does not answer; retry in a moment.'),
        {
          'Retry-After': '5',
        },
      );
    logger.error(
      { err: error, requestId: res.locals.requestId as string, method: req.method },
      'unexpected console error',
    );
    send(res, 500, problemPage(context(req, viewer), 'Error', 'Something went wrong; retry later.'));
  });
  return router;
}
