import type { EventType } from '../../outbox/cloudEvents';
import express, { type Request, type Response } from 'express';
import type { Db } from '../../database/pool';
import { RequestError, type ErrorCode } from '../../errors';
import type { PooledTransactions } from '../../database/transaction';
import { clientAddress, type TrustProxy } from '../../intake/sourceAddress';
import type { Logger } from '../../observability/logger';
import { hasControlCharacter, idProblem } from '../../parsing/identifiers';
import type { Reconciliation } from '../../reconciliation/reconciliation';
import type { QuarantineFilter } from '../../recording/quarantineQueries';
import type { Html } from './html';
import { FIRST_YEAR, LAST_YEAR, type LocalTime, type ReadTime } from '../language/localTime';
import type { ConsoleToken } from '../sessions/session';
import type { PageContext, Viewer } from './layout';

/** What every console route uses: its options, its refusals, the headers, the reading of a request. */

/** The admin port's cap on work at once (adminApp.ts), which every console page goes through. */
export type WorkLimit = <T>(res: Response, work: (clientLeft: AbortSignal) => Promise<T>) => Promise<T>;

/**
 * How the console lets people in: `tokens` (sign in with a token), `open` (no token set and the admin port on
 * loopback: everyone is the operator `local`), `closed` (no token set, the port beyond loopback: every page 403).
 */
export type ConsoleMode = 'tokens' | 'open' | 'closed';

export interface ConsoleOptions {
  /** The admin port's own pool. */
  db: Db;
  /** Transactions on that pool, for the recorder (quarantine retry). */
  transactions: PooledTransactions;
  mode: ConsoleMode;
  /** Everyone who may sign in (CONSOLE_OPERATOR_TOKENS, CONSOLE_VIEWER_TOKENS, ADMIN_TOKEN as the operator admin). */
  tokens: readonly ConsoleToken[];
  sessionTtlMs: number;
  /** A session unused this long ends (CONSOLE_SESSION_IDLE). */
  sessionIdleMs: number;
  /** ADMIN_ORIGINS: the origins besides loopback that a form may be posted from (src/http/origins.ts). */
  adminOrigins: readonly string[];
  /** Whose X-Forwarded-For tells who is signing in (TRUST_PROXY). */
  trustProxy: TrustProxy;
  viewersSeePersonalData: boolean;
  quietAfterMs: number;
  /** CONSOLE_TIME_ZONE and CONSOLE_LOCALE, as the configuration checked them: every time and amount shown in them. */
  timeZone: string;
  locale: string;
  /** PAYMENT_SERVICE_TIME_ZONE: the zone the payment service's times without an offset are read in. */
  paymentServiceTimeZone: string;
  /** CONSOLE_CONFIRM_WITHIN: how long the shop has to confirm a payment waiting for it; null: not known. */
  confirmWithinMs: number | null;
  /** The POS ids the service knows (its keys'): offered by the finance export's form. */
  knownPos: readonly string[];
  /** EXPECTED_UNROUTED_EVENT_TYPES: types no team is meant to bind; counted, not raised. */
  expectedUnroutedTypes: readonly EventType[];
  reconciliation: Reconciliation | null;
  /** When reconciliation checks an order, and how long one question may take; null when it is off. */
  checkSchedule: { afterMs: number; giveUpMs: number; timeoutMs: number } | null;
  eventSource: string;
  limited: WorkLimit;
  logger: Logger;
  now?: () => Date;
}

/** What each page's routes are given beside the options they use: the time now, the local clock, a page's frame. */
export interface PageFrame {
  now: () => Date;
  clock: LocalTime;
  context: (req: Request, viewer: Viewer | null) => PageContext;
}

/** Whether this person sees the buyer's personal data in what was received: operators, and viewers if allowed. */
export const seesPersonalData = (viewer: Viewer, viewersSeePersonalData: boolean): boolean =>
  viewer.role === 'operator' || viewersSeePersonalData;

/**
 * A request the console refuses, as the one error type: its status and code, the heading and the sentence of the
 * page a person reads (consoleApp.ts draws it: 401 the sign-in page, 303 a redirect to `headers.Location`).
 */
export const refusal = (
  status: number,
  code: ErrorCode,
  title: string,
  message: string,
  headers: Readonly<Record<string, string>> = {},
): RequestError => new RequestError(status, code, message, null, headers, title);

/** A refusal a console route made, with its page's heading (not the admin port's own, such as its work cap). */
export const isRefusal = (error: unknown): error is RequestError & { title: string } =>
  error instanceof RequestError && error.title !== null;

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

export function send(res: Response, status: number, page: Html, headers: Readonly<Record<string, string>> = {}): void {
  res
    .status(status)
    .set({ ...SECURITY_HEADERS, ...headers, 'Content-Type': 'text/html; charset=utf-8' })
    .send(page.text);
}

export const ID = /^\d{1,18}$/;
export const POS = /^[A-Za-z0-9_-]{1,64}$/;
export const REASON = /^[a-z_]{1,64}$/;

/**
 * A query parameter as one string ('' when absent); a repeated one is nonsense, and one holding a control
 * character inside it (NUL, a line break: nothing anyone types into a filter or the search box; around it they are
 * trimmed like spaces) is refused before anything is looked up with it.
 */
export function param(req: Pick<Request, 'query'>, name: string): string {
  const value = req.query[name];
  if (value === undefined) return '';
  if (typeof value !== 'string') throw refusal(400, 'bad_request', 'Bad request', `${name} is given more than once.`);
  const text = value.trim();
  if (hasControlCharacter(text)) throw refusal(400, 'bad_request', 'Bad request', `${name} holds a control character.`);
  return text;
}

/** A posted form (urlencoded, small), read by the routes that take one. */
export const readForm: express.RequestHandler = express.urlencoded({
  extended: false,
  limit: 4096,
  parameterLimit: 20,
});

/**
 * A posted form's field ('' when absent), at most `maxLength` characters: one given twice or longer than that
 * is refused (400), never read as something else.
 */
export function field(req: Request, name: string, maxLength = 512): string {
  const body: unknown = req.body;
  const value =
    body !== null && typeof body === 'object' && name in body ? (body as Record<string, unknown>)[name] : '';
  if (typeof value !== 'string') throw refusal(400, 'bad_request', 'Bad request', `${name} is given more than once.`);
  if (value.length > maxLength)
    throw refusal(400, 'bad_request', 'Bad request', `${name} is longer than ${maxLength} characters.`);
  return value.trim();
}

/**
 * A time typed into a filter, read in the console's zone (localTime.ts: a day, a local date and time, or an exact
 * time with its offset); a 400 page with the expected format otherwise.
 */
export function parseLocalTime(clock: LocalTime, name: string, value: string, end: boolean): ReadTime {
  const read = clock.readLocalTime(value, end);
  if (read === null)
    throw refusal(
      400,
      'invalid_query',
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

export function orderIdOf(req: Pick<Request, 'params'>): string {
  const id = typeof req.params.orderId === 'string' ? req.params.orderId : '';
  const problem = idProblem(id);
  if (problem !== null) throw refusal(400, 'invalid_order_id', 'Bad order id', `That is not an order id: ${problem}.`);
  return id;
}

export function quarantineFilterOf(reason: string, pos: string): QuarantineFilter {
  if (reason !== '' && !REASON.test(reason))
    throw refusal(400, 'invalid_query', 'Bad filter', 'reason must be a quarantine reason such as invalid_json.');
  if (pos !== '' && !POS.test(pos))
    throw refusal(400, 'invalid_query', 'Bad filter', 'pos must be a POS id: letters, digits, _ and -.');
  return { reason: reason === '' ? null : reason, posId: pos === '' ? null : pos };
}

/** What a page's frame is drawn with: who is looking, when, in which zone and locale, the search box's value. */
export function pageContext(
  req: Request,
  viewer: Viewer | null,
  now: Date,
  clock: LocalTime,
  paymentServiceTimeZone: string,
): PageContext {
  return { viewer, now, clock, paymentServiceTimeZone, q: typeof req.query.q === 'string' ? req.query.q : '' };
}

/** Where a request came from (TRUST_PROXY's rule), or 400: the throttle and the audit trail need it. */
export function sourceOf(req: Request, trust: TrustProxy): string {
  const forwarded = req.headers['x-forwarded-for'];
  const address = clientAddress(req.socket.remoteAddress, typeof forwarded === 'string' ? forwarded : undefined, trust);
  if (address === null)
    throw refusal(400, 'bad_request', 'Bad request', 'The request’s source address cannot be read.');
  return address;
}
