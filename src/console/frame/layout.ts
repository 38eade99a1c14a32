import { html, type Html } from './html';
import type { LocalTime } from '../language/localTime';
import { setting } from './terms';
import type { ConsoleRole } from '../sessions/session';

/**
 * The console's pages: each a function of a typed model (a misspelled field fails tsc), built with `html`,
 * which escapes every value. Links are built by `href` from our own routes only. Every value that came in a
 * notification is shown inside `<bdi>` (parts.ts `value`), so that one holding right-to-left or format characters
 * never reorders the words around it.
 */

/** Who is looking: null on the sign-in page. */
export interface Viewer {
  name: string;
  role: ConsoleRole;
}

export interface PageContext {
  viewer: Viewer | null;
  now: Date;
  /** The shop's time zone and locale: every time and amount is shown in them. */
  clock: LocalTime;
  /** PAYMENT_SERVICE_TIME_ZONE: the payment service's times without an offset are in it. */
  paymentServiceTimeZone: string;
  /** The search box's value, echoed. */
  q?: string;
}

/** Format characters (zero-width, bidi controls): kept out of the page's title, which no `<bdi>` can isolate. */
const FORMAT_CHARACTERS = /[\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]/g;

const NAV: ReadonlyArray<[string, string]> = [
  ['/console', 'Overview'],
  ['/console/attention', 'Needs attention'],
  ['/console/deliveries', 'Recent deliveries'],
  ['/console/export', 'Finance export'],
  ['/console/audit', 'Audit'],
  ['/console/glossary', 'Glossary'],
];

export function layout(title: string, ctx: PageContext, body: Html): Html {
  const { viewer, clock } = ctx;
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="referrer" content="no-referrer" />
        <title>${title.replace(FORMAT_CHARACTERS, '')} · Payment notifications console</title>
        <link rel="stylesheet" href="/console/assets/console.css" />
      </head>
      <body>
        <header>
          <strong><a href="/console">Payment notifications</a></strong>
          ${
            viewer
              ? html`<nav aria-label="Main">
                    ${NAV.slice(1).map(([path, label]) => html`<a href="${path}">${label}</a>`)}
                    ${viewer.role === 'operator' ? html`<a href="/console/sessions">Signed in</a>` : ''}
                  </nav>
                  <form role="search" data-testid="search" action="/console/search" method="get">
                    <label for="q">Find an order</label>
                    <input
                      id="q"
                      name="q"
                      type="search"
                      value="${ctx.q ?? ''}"
                      aria-describedby="q-hint"
                      size="30"
                      required
                      maxlength="200"
                    />
                    <button type="submit">Search</button>
                    <small id="q-hint" class="hint"
                      >By order id, shop reference (extOrderId), payment id (PAYMENT_ID), refund id or the shop’s refund
                      reference (extRefundId).</small
                    >
                  </form>
                  <div class="who">
                    <span>${viewer.name} (${viewer.role})</span>
                    <form class="inline" action="/console/sign-out" method="post">
                      <button type="submit">Sign out</button>
                    </form>
                  </div>`
              : html`<nav aria-label="Main"><a href="/console/glossary">Glossary</a></nav>`
          }
        </header>
        <main id="main">${body}</main>
        <footer>
          Times are in <strong>${clock.timeZone}</strong> (${setting('CONSOLE_TIME_ZONE')}); amounts and dates are
          written for <strong>${clock.locale}</strong> (${setting('CONSOLE_LOCALE')}). Words and statuses are explained
          in the <a href="/console/glossary">glossary</a>.
        </footer>
      </body>
    </html>`;
}

export function signInPage(ctx: PageContext, problem: string | null): Html {
  return layout(
    'Sign in',
    ctx,
    html`<h1>Sign in</h1>
      ${problem ? html`<p class="problem" role="alert">${problem}</p>` : ''}
      <form action="/console/sign-in" method="post">
        <p>
          <label for="token">Your console token</label><br />
          <input
            id="token"
            name="token"
            type="password"
            autocomplete="current-password"
            required
            maxlength="512"
            size="40"
          />
        </p>
        <p><button class="primary" type="submit">Sign in</button></p>
      </form>`,
  );
}

/** After signing out: the session is gone on every replica; back and reload lead to the sign-in form. */
export function signedOutPage(ctx: PageContext): Html {
  return layout(
    'Signed out',
    ctx,
    html`<h1>You are signed out</h1>
      <p data-testid="signed-out">
        Your session has ended on every replica of the service: this browser, or anyone holding its cookie, can no
        longer use it.
      </p>
      <p><a href="/console/sign-in">Sign in again</a></p>`,
  );
}

/** A page saying what went wrong, with the status the route answers. */
export function problemPage(ctx: PageContext, title: string, message: string): Html {
  return layout(
    title,
    ctx,
    html`<h1>${title}</h1>
      <p class="problem" role="alert">${message}</p>
      <p><a href="/console">Back to the overview</a></p>`,
  );
}
