import { randomBytes } from 'node:crypto';
import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import { isDatabaseUnavailable } from '../database/errors';
import { RequestError } from '../errors';
import { recordAudit } from '../history/auditQueries';
import { actionRoutes } from './actionRoutes';
import { PageError, SECURITY_HEADERS, send, type ConsoleKit, type ConsoleOptions } from './consoleRouting';
import { LocalTime } from './localTime';
import { readRoutes } from './readRoutes';
import type { ConsoleRole } from './session';
import { signInRoutes } from './signInRoutes';
import { problemPage, signInPage, type PageContext, type Viewer } from './views/layout';

export type { ConsoleOptions, WorkLimit } from './consoleRouting';

/** The console, under /console on the admin port: server-rendered pages, forms, no script. */
export function createConsole(options: ConsoleOptions): Router {
  const { db, limited, logger } = options;
  const now = options.now ?? (() => new Date());
  const secret = Buffer.from(options.sessionSecret ?? randomBytes(32).toString('hex'));
  const closed = options.tokens.length === 0 && !options.loopbackOnly;
  const open = options.tokens.length === 0 && options.loopbackOnly;
  const router = express.Router();
  const clock = new LocalTime(options.timeZone, options.locale);

  const context = (req: Request, viewer: Viewer | null): PageContext => ({
    viewer,
    now: now(),
    clock,
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
    await recordAudit(db, { actor: viewer.name, role: viewer.role, action, target, orderId, result, detail });
  };

  const form = express.urlencoded({ extended: false, limit: 4096, parameterLimit: 20 });
  const kit: ConsoleKit = { router, options, db, limited, now, clock, secret, closed, open, form, context, audit };
  const signed = signInRoutes(kit);
  readRoutes(kit, signed);
  actionRoutes(kit, signed);

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
