import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import { isDatabaseUnavailable } from '../database/databaseErrors';
import { RequestError } from '../errors';
import { createAccess } from './access';
import { actionRoutes } from './actionRoutes';
import { CONSOLE_CSS } from './assets';
import { pageContext, PageError, SECURITY_HEADERS, send, type ConsoleOptions } from './consoleRouting';
import { LocalTime } from './localTime';
import { readRoutes } from './readRoutes';
import type { SignInGuard } from './signInGuard';
import { signInRoutes } from './signInRoutes';
import { problemPage, signInPage, type PageContext, type Viewer } from './views/layout';
import { setUpWebSecurity } from './webSecurity';

export type { ConsoleMode, ConsoleOptions, WorkLimit } from './consoleRouting';

/**
 * The console, under /console on the admin port: server-rendered pages, forms, no script. Built here in the
 * order it runs: the web security first (headers, a closed console, same-origin forms), the stylesheet, then
 * sign-in, the pages that read and the actions, each group given who is asking (access.ts) and exactly the
 * settings it uses; then the not-found page and the error pages. `guard` is shared with the JSON API's token.
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
  readRoutes(router, access, { ...options, now, clock, context });
  actionRoutes(router, access, { ...options, context });

  router.use((req) => {
    throw new PageError(404, 'Not found', `There is no console page at ${req.path}.`);
  });

  router.use((error: unknown, req: Request, res: Response, _next: NextFunction) => {
    const frame = context(req, null);
    if (error instanceof PageError) {
      if (error.status === 303) return res.set(SECURITY_HEADERS).redirect(303, error.headers.Location ?? '/console');
      const page =
        error.status === 401 ? signInPage(frame, error.message) : problemPage(frame, error.title, error.message);
      return send(res, error.status, page, error.headers);
    }
    if (error instanceof RequestError)
      return send(res, error.status, problemPage(frame, 'Busy', error.message), error.headers);
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
