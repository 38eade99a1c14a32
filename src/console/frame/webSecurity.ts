import type { Request, Router } from 'express';
import { originsForHost } from '../../http/origins';
import { refusal, SECURITY_HEADERS, type ConsoleMode } from './consoleRouting';

/**
 * The console's web security, set up first on its router so that it runs before every route (after hmpps'
 * setUpWebSecurity): the security headers on every answer, the whole console shut while it is `closed`, and
 * forms accepted only from the console's own pages. The Host was admitted before the console saw the request
 * (src/admin/adminApp.ts); the session is checked by each route (access.ts).
 */
export function setUpWebSecurity(
  router: Router,
  options: { mode: ConsoleMode; adminOrigins: readonly string[] },
): void {
  router.use((req, res, next) => {
    res.set(SECURITY_HEADERS);
    if (options.mode === 'closed' && req.path !== '/assets/console.css')
      throw refusal(
        403,
        'unauthorized',
        'The console is closed',
        'No console token is set and the admin port is not bound to loopback: set CONSOLE_OPERATOR_TOKENS (or ' +
          'CONSOLE_VIEWER_TOKENS, or ADMIN_TOKEN), or bind HOST to 127.0.0.1.',
      );
    if (req.method === 'POST' && !sameOrigin(req, options.adminOrigins))
      throw refusal(
        403,
        'cross_site_request',
        'Refused',
        'A form posted from another site is refused; use the console’s own pages.',
      );
    next();
  });
}

/**
 * A POST from another site is refused: the browser says where it comes from in `Sec-Fetch-Site` (every current
 * browser sends it); without it (an older browser, a script), `Origin` must be the origin the admitted Host
 * belongs to (a loopback Host's own, or its ADMIN_ORIGINS entry), never merely whatever Host the request names.
 * With neither it is refused: a form post from a page always carries one of them.
 */
export function sameOrigin(req: Pick<Request, 'headers'>, adminOrigins: readonly string[]): boolean {
  const site = req.headers['sec-fetch-site'];
  if (typeof site === 'string') return site === 'same-origin';
  const origin = req.headers.origin;
  if (typeof origin !== 'string') return false;
  return (originsForHost(req.headers.host, adminOrigins) ?? []).includes(origin.toLowerCase());
}
