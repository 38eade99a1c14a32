import type { Request, RequestHandler, Response, Router } from 'express';
import type { Db } from '../database/pool';
import type { PooledTransactions } from '../database/transaction';
import type { Logger } from '../observability/logger';
import { idProblem } from '../parsing/identifiers';
import type { Reconciliation } from '../reconciliation/reconciliation';
import type { QuarantineFilter } from '../recording/quarantineQueries';
import type { Html } from './html';
import { FIRST_YEAR, LAST_YEAR, type LocalTime, type ReadTime } from './localTime';
import type { ConsoleRole, ConsoleToken } from './session';
import type { PageContext, Viewer } from './views/layout';

/** What every console route uses: its options, the page error, the headers, the reading of a request. */

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
  /** CONSOLE_TIME_ZONE and CONSOLE_LOCALE, as the configuration checked them: every time and amount shown in them. */
  timeZone: string;
  locale: string;
  /** CONSOLE_CONFIRM_WITHIN: how long the shop has to confirm a payment waiting for it; null: not known. */
  confirmWithinMs: number | null;
  /** The POS ids the service knows (its keys'): offered by the finance export's form. */
  knownPos: readonly string[];
  reconciliation: Reconciliation | null;
  /** When reconciliation checks an order, and how long one question may take; null when it is off. */
  checkSchedule: { afterMs: number; giveUpMs: number; timeoutMs: number } | null;
  eventSource: string;
  limited: WorkLimit;
  logger: Logger;
  now?: () => Date;
}

/** A page answered with its status (a 4xx or 5xx the person can read), raised anywhere in a console route. */
export class PageError extends Error {
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

/**
 * No script at all; styles from our own file only; nothing may frame the console; forms post only to it.
 * The SVG charts are inline markup, which needs no script or style exception.
 */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
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

export function cookieValue(req: Request, name: string): string | null {
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
export const cookieAttributes = 'Path=/console; HttpOnly; Secure; SameSite=Strict';

export function send(res: Response, status: number, page: Html, headers: Readonly<Record<string, string>> = {}): void {
  res
    .status(status)
    .set({ ...SECURITY_HEADERS, ...headers, 'Content-Type': 'text/html; charset=utf-8' })
    .send(page.text);
}

export const ID = /^\d{1,18}$/;
export const POS = /^[A-Za-z0-9_-]{1,64}$/;
export const REASON = /^[a-z_]{1,64}$/;

/** A query parameter as one string ('' when absent); a repeated one is nonsense. */
export function param(req: Request, name: string): string {
  const value = req.query[name];
  if (value === undefined) return '';
  if (typeof value !== 'string') throw new PageError(400, 'Bad request', `${name} is given more than once.`);
  return value.trim();
}

export function field(req: Request, name: string): string {
  const body: unknown = req.body;
  const value =
    body !== null && typeof body === 'object' && name in body ? (body as Record<string, unknown>)[name] : '';
  return typeof value === 'string' ? value.trim() : '';
}

/**
 * A time typed into a filter, read in the console's zone (localTime.ts: a day, a local date and time, or an exact
 * time with its offset); a 400 page with the expected format otherwise.
 */
export function parseLocalTime(clock: LocalTime, name: string, value: string, end: boolean): ReadTime {
  const read = clock.readLocalTime(value, end);
  if (read === null)
    throw new PageError(
      400,
      'Bad filter',
      `${name} must be a date such as 2026-11-27 or a local time such as 2026-11-27T09:00 (${clock.timeZone}), ` +
        `between the years ${FIRST_YEAR} and ${LAST_YEAR}.`,
    );
  return read;
}

/** What a filter's time was read as, when the clocks skip it or show it twice that night. */
export function readingNote(name: string, value: string, read: ReadTime): string | null {
  if (read.note === 'skipped')
    return `${name} ${value} does not exist in this time zone (the clocks skip it): read as the moment they jumped.`;
  if (read.note === 'repeated')
    return `${name} ${value} happens twice in this time zone (the clocks go back): read as its ${
      name === 'from' ? 'first' : 'second'
    } occurrence, so both are included.`;
  return null;
}

export function orderIdOf(req: Request): string {
  const id = typeof req.params.orderId === 'string' ? req.params.orderId : '';
  const problem = idProblem(id);
  if (problem !== null) throw new PageError(400, 'Bad order id', `That is not an order id: ${problem}.`);
  return id;
}

export function quarantineFilterOf(reason: string, pos: string): QuarantineFilter {
  if (reason !== '' && !REASON.test(reason))
    throw new PageError(400, 'Bad filter', 'reason must be a quarantine reason such as invalid_json.');
  if (pos !== '' && !POS.test(pos))
    throw new PageError(400, 'Bad filter', 'pos must be a POS id: letters, digits, _ and -.');
  return { reason: reason === '' ? null : reason, posId: pos === '' ? null : pos };
}

/** What createConsole sets up once and every group of routes uses. */
export interface ConsoleKit {
  router: Router;
  options: ConsoleOptions;
  db: Db;
  limited: WorkLimit;
  now: () => Date;
  /** The shop's time zone and locale. */
  clock: LocalTime;
  /** Signs session cookies. */
  secret: Buffer;
  /** No tokens and not on loopback: every page but the stylesheet is refused. */
  closed: boolean;
  /** No tokens, on loopback: everyone is operator `local`. */
  open: boolean;
  /** Reads a posted form. */
  form: RequestHandler;
  context: (req: Request, viewer: Viewer | null) => PageContext;
  audit: (
    viewer: { name: string; role: ConsoleRole | null },
    action: string,
    target: string | null,
    orderId: string | null,
    result: string,
    detail?: string,
  ) => Promise<void>;
}

/** Who is asking, from their session; operatorOf refuses a viewer. */
export interface Signed {
  viewerOf: (req: Request, res: Response) => Viewer;
  operatorOf: (req: Request, res: Response) => Viewer;
}
