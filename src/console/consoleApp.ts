import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import { isDatabaseUnavailable } from '../database/databaseErrors';
import { RequestError } from '../errors';
import { attentionRoutes } from './attention/attentionRoutes';
import { auditRoutes } from './audit/auditRoutes';
import { deliveriesRoutes } from './deliveries/deliveriesRoutes';
import { exportRoutes } from './export/exportRoutes';
import { createAccess } from './frame/access';
import { CONSOLE_CSS } from './frame/assets';
import {
  pageContext,
  refusal,
  SECURITY_HEADERS,
  send,
  type ConsoleOptions,
  type PageFrame,
} from './frame/consoleRouting';
import { problemPage, signInPage, type PageContext, type Viewer } from './frame/layout';
import { setUpWebSecurity } from './frame/webSecurity';
import { glossaryRoutes } from './glossary/glossaryRoutes';
import { LocalTime } from './language/localTime';
import { orderActionRoutes } from './order/orderActionRoutes';
import { orderRoutes } from './order/orderRoutes';
import { overviewRoutes } from './overview/overviewRoutes';
import { quarantineRoutes } from './quarantine/quarantineRoutes';
import { sessionsRoutes } from './sessions/sessionsRoutes';
import type { SignInGuard } from './signIn/signInGuard';
import { signInRoutes } from './signIn/signInRoutes';

export type { ConsoleMode, ConsoleOptions, WorkLimit } from './frame/consoleRouting';

/**
 * The console, under /console on the admin port: server-rendered pages, forms, no script. Built here in the
 * order it runs: the web security first (headers, a closed console, same-origin forms), the stylesheet, then
 * sign-in and each page's routes (a folder a page: its routes, queries and views), each given who is asking
 * (frame/access.ts) and exactly the settings it uses; then the not-found page and the error pages. `guard` is shared with the JSON API's token.
 */
export function createConsole(options: ConsoleOptions, guard: SignInGuard): Router {
  const { db, logger } = options;
  const now = options.now ?? (() => new Date());
  const router = express.Router();
  const clock = new LocalTime(options.timeZone, options.locale);

  setUpWebSecurity(router, { mode: options.mode, adminOrigins: options.adminOrigins });
  router.get('/assets/console.css', (_req, res) => {
    res.set({ 'Content-Type': 'text/css; charset=utf-8', 'Cache-Control': 'public, max-age=3600' }).send(CONSOLE_CSS);
  });

  const context = (req: Request, viewer: Viewer | null): PageContext =>
    pageContext(req, viewer, now(), clock, options.paymentServiceTimeZone);
  const access = createAccess({
    db,
    mode: options.mode,
    tokens: options.tokens,
    sessionIdleMs: options.sessionIdleMs,
    now,
  });
  signInRoutes(router, access, {
    ...options,
    now,
    context,
    guard,
  });
  // Each page's routes. Their order matters once: `/quarantine/:id` hands `/quarantine/retry` on to the bulk
  // retry's confirmation, registered after it in quarantineRoutes; no other page's path matches another's.
  const pages: ConsoleOptions & PageFrame = { ...options, now, clock, context };
  overviewRoutes(router, access, pages);
  glossaryRoutes(router, access, pages);
  orderRoutes(router, access, pages);
  attentionRoutes(router, access, pages);
  deliveriesRoutes(router, access, pages);
  quarantineRoutes(router, access, pages);
  auditRoutes(router, access, pages);
  sessionsRoutes(router, access, pages);
  exportRoutes(router, access, pages);
  orderActionRoutes(router, access, pages);

  router.use((req) => {
    throw refusal(404, 'not_found', 'Not found', `There is no console page at ${req.path}.`);
  });

  router.use((error: unknown, req: Request, res: Response, _next: NextFunction) => {
    const frame = context(req, null);
    // The one error type: a console route's refusal carries its page's heading; the admin port's own (its work
    // cap's 503) has none, and reads as Busy.
    if (error instanceof RequestError) {
      if (error.status === 303) return res.set(SECURITY_HEADERS).redirect(303, error.headers.Location ?? '/console');
      const page =
        error.status === 401
          ? signInPage(frame, error.message)
          : problemPage(frame, error.title ?? 'Busy', error.message);
      return send(res, error.status, page, error.headers);
    }
    const status = (error as { status?: unknown }).status;
    if (typeof status === 'number' && status >= 400 && status < 500)
      return send(res, status, problemPage(frame, 'Bad request', 'The request could not be read.'));
    if (isDatabaseUnavailable(error))
      return send(res, 503, problemPage(frame, 'Unavailable', 'The database does not answer; retry in a moment.'), {
        'Retry-After': '5',
      });
    logger.error(
      { err: error, requestId: res.locals.requestId as string, method: req.method },
      'unexpected console error',
    );
    send(res, 500, problemPage(frame, 'Error', 'Something went wrong; retry later.'));
  });
  return router;
}
