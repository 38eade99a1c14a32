import type { Request, Response } from 'express';
import { CONSOLE_CSS } from './assets';
import {
  cookieAttributes,
  cookieValue,
  field,
  PageError,
  sameOrigin,
  SECURITY_HEADERS,
  send,
  SESSION_COOKIE,
  type ConsoleKit,
  type Signed,
} from './consoleRouting';
import { openSession, sealSession, tokenHolder } from './session';
import { signInPage, type Viewer } from './views/layout';

/**
 * Failed sign-ins recorded in a minute, in this process. Past it, a failed one is answered 429 with Retry-After and
 * not recorded (one audit row says the rest of the minute is not): a flood of wrong tokens, which anyone who reaches
 * the admin port can send, cannot grow the audit trail by millions of rows a day. A valid token always signs in.
 */
export const FAILED_SIGN_INS_PER_MINUTE = 30;

/** The security headers and same-origin check on every request, the stylesheet, signing in and out. */
export function signInRoutes(kit: ConsoleKit): Signed {
  const { router, options, now, secret, closed, open, form, context, audit } = kit;
  let failures = { since: 0, count: 0 };

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

  router.get('/sign-in', (req, res) => {
    if (open) return res.redirect(303, '/console');
    send(res, 200, signInPage(context(req, null), null));
  });

  router.post('/sign-in', form, async (req, res) => {
    if (open) return res.redirect(303, '/console');
    const holder = tokenHolder(options.tokens, field(req, 'token'));
    if (holder === null) {
      const at = now().getTime();
      if (at - failures.since >= 60_000) failures = { since: at, count: 0 };
      failures.count += 1;
      const unknown = { name: '(unknown)', role: null };
      if (failures.count <= FAILED_SIGN_INS_PER_MINUTE) {
        await audit(unknown, 'sign_in', null, null, 'refused', 'no token matches');
        return send(res, 401, signInPage(context(req, null), 'That token is not valid.'));
      }
      if (failures.count === FAILED_SIGN_INS_PER_MINUTE + 1)
        await audit(
          unknown,
          'sign_in',
          null,
          null,
          'throttled',
          `over ${FAILED_SIGN_INS_PER_MINUTE} failed sign-ins in a minute: the rest of it not recorded`,
        );
      const waitSeconds = Math.max(1, Math.ceil((failures.since + 60_000 - at) / 1000));
      res.set('Retry-After', String(waitSeconds));
      return send(res, 429, signInPage(context(req, null), `Too many failed sign-ins: try again in ${waitSeconds} s.`));
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

  return { viewerOf, operatorOf };
}
