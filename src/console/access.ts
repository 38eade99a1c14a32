import type { Request, Response } from 'express';
import type { Db } from '../database/pool';
import { PageError, type ConsoleMode } from './consoleRouting';
import { endSession, findSession, touchSession } from './queries/sessions';
import {
  holdersByName,
  judgeSession,
  sessionCookies,
  sessionKey,
  SESSION_COOKIE,
  SESSION_COOKIE_ATTRIBUTES,
  type ConsoleToken,
  type SessionEnd,
} from './session';
import type { Viewer } from './views/layout';

/** Who is asking, read from their session on every console request; operatorOf refuses a viewer. */
export interface Access {
  viewerOf(req: Request, res: Response): Promise<Viewer>;
  operatorOf(req: Request, res: Response): Promise<Viewer>;
  /** The viewer and their session's key (null in the open mode, which has no sessions): sign-out ends it. */
  sessionOf(req: Request, res: Response): Promise<{ viewer: Viewer; key: Buffer | null }>;
}

export interface AccessOptions {
  db: Db;
  mode: ConsoleMode;
  tokens: readonly ConsoleToken[];
  sessionIdleMs: number;
  now: () => Date;
}

/** What the cookie is answered with when a session has ended: the browser forgets it. */
export const CLEAR_SESSION_COOKIE = `${SESSION_COOKIE}=; ${SESSION_COOKIE_ATTRIBUTES}; Max-Age=0`;

const ENDED: Record<SessionEnd | 'unknown', string> = {
  expired: 'Your session has expired: sign in again.',
  idle: 'Your session ended after a time without use: sign in again.',
  access_changed: 'Your access has changed since you signed in: sign in again.',
  unknown: 'Your session has ended: sign in again.',
};

/**
 * Every request's session check, one lookup by primary key: the cookie's id, hashed, must name a session in
 * the database (sign-out and "end all sessions" delete it, for every replica at once) that has neither expired
 * nor idled, and whose name still holds a token of its role, the very one that signed in (a token removed or a
 * name moved to another role ends it at the next request). Its last use is written at most once a minute.
 */
export function createAccess({ db, mode, tokens, sessionIdleMs, now }: AccessOptions): Access {
  const holders = holdersByName(tokens);

  const sessionOf = async (req: Request, res: Response): Promise<{ viewer: Viewer; key: Buffer | null }> => {
    if (mode === 'open') return { viewer: { name: 'local', role: 'operator' }, key: null };
    const values = sessionCookies(req.headers.cookie);
    if (values.length > 1) {
      res.set('Set-Cookie', CLEAR_SESSION_COOKIE);
      throw new PageError(
        400,
        'Two session cookies',
        'Your browser sent two console session cookies, one of them not set by this console: clear this site’s ' +
          'cookies, then sign in again.',
      );
    }
    const [value] = values;
    if (value === undefined) {
      if (req.method === 'GET') throw new PageError(303, 'Sign in', 'Sign in first.', { Location: '/console/sign-in' });
      throw new PageError(401, 'Sign in', 'Sign in first.');
    }
    const key = sessionKey(value);
    const stored = key === null ? null : await findSession(db, key);
    if (key === null || stored === null) {
      res.set('Set-Cookie', CLEAR_SESSION_COOKIE);
      throw new PageError(
        401,
        'Sign in again',
        key === null ? 'Your session is not valid: sign in again.' : ENDED.unknown,
      );
    }
    const at = now();
    const judged = judgeSession(stored, holders, at.getTime(), sessionIdleMs);
    if (!judged.stands) {
      await endSession(db, key);
      res.set('Set-Cookie', CLEAR_SESSION_COOKIE);
      throw new PageError(401, 'Sign in again', ENDED[judged.end]);
    }
    if (judged.touch) await touchSession(db, key, at);
    return { viewer: { name: stored.name, role: stored.role }, key };
  };

  const viewerOf = async (req: Request, res: Response): Promise<Viewer> => (await sessionOf(req, res)).viewer;

  const operatorOf = async (req: Request, res: Response): Promise<Viewer> => {
    const viewer = await viewerOf(req, res);
    if (viewer.role !== 'operator')
      throw new PageError(403, 'Operators only', 'Only an operator may do this; you are signed in as a viewer.');
    return viewer;
  };

  return { viewerOf, operatorOf, sessionOf };
}
