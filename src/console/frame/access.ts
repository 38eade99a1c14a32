import type { Request, Response } from 'express';
import type { Db } from '../../database/pool';
import { refusal, type ConsoleMode } from './consoleRouting';
import { endSession, findSession, touchSession } from '../sessions/sessionQueries';
import {
  holdersByName,
  judgeSession,
  sessionCookies,
  sessionKey,
  SESSION_COOKIE,
  SESSION_COOKIE_ATTRIBUTES,
  type ConsoleRole,
  type ConsoleToken,
  type SessionEnd,
} from '../sessions/session';
import type { Viewer } from './layout';

/** Who is asking, read from their session on every console request; operatorOf refuses a viewer. */
export interface Access {
  viewerOf(req: Request, res: Response): Promise<Viewer>;
  operatorOf(req: Request, res: Response): Promise<Viewer>;
  /** The viewer and their session's key (null in the open mode, which has no sessions): sign-out ends it. */
  sessionOf(req: Request, res: Response): Promise<{ viewer: Viewer; key: Buffer | null }>;
  /**
   * A page's data and who may see it: `read` runs beside the session check when this replica has seen the
   * session stand within the last minute (else after it), and neither its data nor its error leaves before the
   * session stands. `read` must only read: a session that turns out ended has it done for nothing.
   */
  readFor<T>(
    req: Request,
    res: Response,
    role: ConsoleRole,
    read: () => Promise<T>,
  ): Promise<{ viewer: Viewer; data: T }>;
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

/**
 * How long after a session last stood this replica reads a page's data ahead of its check, and for how many
 * sessions at most (past that it forgets them all, and each is checked first once more). The read-ahead only
 * hides the check's round trip: a stranger's cookie, or one unused for a minute, is checked before anything is read.
 */
const READ_AHEAD_MS = 60_000;
const READ_AHEAD_SESSIONS = 1_000;

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
  /** Sessions seen to stand, by key (hex): when, in this process's clock. */
  const stood = new Map<string, number>();

  const sessionOf = async (req: Request, res: Response): Promise<{ viewer: Viewer; key: Buffer | null }> => {
    if (mode === 'open') return { viewer: { name: 'local', role: 'operator' }, key: null };
    const values = sessionCookies(req.headers.cookie);
    if (values.length > 1) {
      res.set('Set-Cookie', CLEAR_SESSION_COOKIE);
      throw refusal(
        400,
        'bad_request',
        'Two session cookies',
        'Your browser sent two console session cookies, one of them not set by this console: clear this site’s ' +
          'cookies, then sign in again.',
      );
    }
    const [value] = values;
    if (value === undefined) {
      if (req.method === 'GET')
        throw refusal(303, 'unauthorized', 'Sign in', 'Sign in first.', { Location: '/console/sign-in' });
      throw refusal(401, 'unauthorized', 'Sign in', 'Sign in first.');
    }
    const key = sessionKey(value);
    const stored = key === null ? null : await findSession(db, key);
    if (key !== null) stood.delete(key.toString('hex'));
    if (key === null || stored === null) {
      res.set('Set-Cookie', CLEAR_SESSION_COOKIE);
      throw refusal(
        401,
        'unauthorized',
        'Sign in again',
        key === null ? 'Your session is not valid: sign in again.' : ENDED.unknown,
      );
    }
    const at = now();
    const judged = judgeSession(stored, holders, at.getTime(), sessionIdleMs);
    if (!judged.stands) {
      await endSession(db, key);
      res.set('Set-Cookie', CLEAR_SESSION_COOKIE);
      throw refusal(401, 'unauthorized', 'Sign in again', ENDED[judged.end]);
    }
    if (judged.touch) await touchSession(db, key, at);
    if (stood.size >= READ_AHEAD_SESSIONS) stood.clear();
    stood.set(key.toString('hex'), performance.now());
    return { viewer: { name: stored.name, role: stored.role }, key };
  };

  /** Whether the request's one session cookie names a session this replica saw stand within READ_AHEAD_MS. */
  const recentlyStood = (req: Request): boolean => {
    if (mode !== 'tokens') return false;
    const values = sessionCookies(req.headers.cookie);
    const key = values.length === 1 && values[0] !== undefined ? sessionKey(values[0]) : null;
    const at = key === null ? undefined : stood.get(key.toString('hex'));
    return at !== undefined && performance.now() - at < READ_AHEAD_MS;
  };

  const viewerOf = async (req: Request, res: Response): Promise<Viewer> => (await sessionOf(req, res)).viewer;

  const operatorOf = async (req: Request, res: Response): Promise<Viewer> => {
    const viewer = await viewerOf(req, res);
    if (viewer.role !== 'operator')
      throw refusal(
        403,
        'token_not_allowed',
        'Operators only',
        'Only an operator may do this; you are signed in as a viewer.',
      );
    return viewer;
  };

  const readFor = async <T>(
    req: Request,
    res: Response,
    role: ConsoleRole,
    read: () => Promise<T>,
  ): Promise<{ viewer: Viewer; data: T }> => {
    const check = role === 'operator' ? operatorOf : viewerOf;
    if (!recentlyStood(req)) {
      const viewer = await check(req, res);
      return { viewer, data: await read() };
    }
    const checking = check(req, res);
    const reading = Promise.resolve().then(read);
    // Handled here so that a failed read of an ended session is no unhandled rejection; awaited below.
    reading.catch(() => undefined);
    const viewer = await checking;
    return { viewer, data: await reading };
  };

  return { viewerOf, operatorOf, sessionOf, readFor };
}
