import type { Request, Router } from 'express';
import type { Access } from '../frame/access';
import { CLEAR_SESSION_COOKIE } from '../frame/access';
import { field, readForm, send, sourceOf, type ConsoleOptions } from '../frame/consoleRouting';
import { recordRepeat } from '../../audit/auditQueries';
import { endSession, openSession } from '../sessions/sessionQueries';
import type { TokenHolder } from '../../admin/tokens';
import {
  newSession,
  SESSION_COOKIE,
  SESSION_COOKIE_ATTRIBUTES,
  tokenFingerprint,
  type ConsoleToken,
} from '../sessions/session';
import type { SignInGuard } from './signInGuard';
import { signedOutPage, signInPage, type PageContext, type Viewer } from '../frame/layout';

/** What signing in and out uses of the console's options. */
export type SignInSettings = Pick<
  ConsoleOptions,
  'db' | 'mode' | 'tokens' | 'sessionTtlMs' | 'sessionIdleMs' | 'trustProxy'
> & {
  now: () => Date;
  guard: SignInGuard;
  context: (req: Request, viewer: Viewer | null) => PageContext;
};

/** The cookie a console before sessions were held in the database set: cleared at sign-in. */
const OLD_COOKIE = 'console_session=; Path=/console; HttpOnly; Secure; SameSite=Strict; Max-Age=0';

/** The console person a token's holder signs in as (ADMIN_TOKEN's: the operator `admin`); null: a team's. */
function personOf(holder: TokenHolder, people: readonly ConsoleToken[]): ConsoleToken | null {
  if (holder.kind === 'person') return holder.person;
  if (holder.kind === 'admin') return people.find((p) => p.name === 'admin') ?? null;
  return null;
}

/**
 * Signing in (a token through the form, throttled per source and in all before any token is checked), signing
 * out (the session deleted at once, for every replica) and the page that says so. In the open mode there is
 * nothing to sign in to or out of.
 */
export function signInRoutes(router: Router, access: Access, settings: SignInSettings): void {
  const { db, mode, tokens, now, guard, context } = settings;

  router.get('/sign-in', (req, res) => {
    if (mode === 'open') return res.redirect(303, '/console');
    send(res, 200, signInPage(context(req, null), null));
  });

  router.post('/sign-in', readForm, async (req, res) => {
    if (mode === 'open') return res.redirect(303, '/console');
    const source = sourceOf(req, settings.trustProxy);
    const checked = await guard.check(source, 'console', () => {
      // Doubled or too long: no token is checked, but the attempt counts against its source.
      const token = field(req, 'token');
      return token === '' ? { problem: 'no token given' } : { token };
    });
    if (checked.outcome === 'throttled') {
      const wait = checked.retryAfterSeconds;
      const page = signInPage(
        context(req, null),
        `Too many failed sign-ins: ${checked.reason}. Try again in ${wait} s.`,
      );
      return send(res, 429, page, { 'Retry-After': String(wait) });
    }
    if (checked.outcome === 'refused')
      return send(res, 401, signInPage(context(req, null), 'That token is not valid.'));
    const holder = personOf(checked.holder, tokens);
    if (holder === null)
      return send(
        res,
        403,
        signInPage(
          context(req, null),
          'That token is a team’s (EVENT_TEAM_TOKENS): it reads the event feed and replays events through the JSON API, and does not sign in to the console.',
        ),
      );
    const { id, key } = newSession();
    const at = now();
    await openSession(
      db,
      {
        key,
        name: holder.name,
        role: holder.role,
        tokenFingerprint: tokenFingerprint(holder.token),
        sourceAddress: source,
        expiresAt: new Date(at.getTime() + settings.sessionTtlMs),
      },
      at,
      settings.sessionIdleMs,
    );
    await guard.signedIn(holder, source);
    res.set('Set-Cookie', [
      `${SESSION_COOKIE}=${id}; ${SESSION_COOKIE_ATTRIBUTES}; Max-Age=${Math.floor(settings.sessionTtlMs / 1000)}`,
      OLD_COOKIE,
    ]);
    res.redirect(303, '/console');
  });

  router.post('/sign-out', async (req, res) => {
    const { viewer, key } = await access.sessionOf(req, res);
    if (key === null) return res.redirect(303, '/console');
    await endSession(db, key);
    const at = now();
    await recordRepeat(
      db,
      { actor: viewer.name, role: viewer.role, action: 'sign_out', result: 'signed_out' },
      `sign_out:${viewer.role}:${viewer.name}:${at.toISOString().slice(0, 13)}`,
      at,
    );
    res.set('Set-Cookie', CLEAR_SESSION_COOKIE);
    res.redirect(303, '/console/signed-out');
  });

  router.get('/signed-out', (req, res) => {
    if (mode === 'open') return res.redirect(303, '/console');
    send(res, 200, signedOutPage(context(req, null)));
  });
}
