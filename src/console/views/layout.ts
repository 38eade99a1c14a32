import { href, html, type Html } from '../html';
import type { ConsoleRole } from '../session';

/**
 * The console's pages: each a function of a typed model (a misspelled field fails tsc), built with `html`,
 * which escapes every value. Links are built by `href` from our own routes only.
 */

/** Who is looking: null on the sign-in page. */
export interface Viewer {
  name: string;
  role: ConsoleRole;
}

export interface PageContext {
  viewer: Viewer | null;
  now: Date;
  /** The search box's value, echoed. */
  q?: string;
}

/** `<time>` in UTC with a relative label ("3 h ago"). */
export function time(at: Date | null, now: Date): Html {
  if (at === null) return html`<span class="muted">—</span>`;
  const iso = at.toISOString();
  return html`<time datetime="${iso}" title="${iso}">${iso.replace('T', ' ').slice(0, 19)} UTC</time>
    <span class="muted">(${relative(at, now)})</span>`;
}

export function relative(at: Date, now: Date): string {
  const seconds = Math.round((now.getTime() - at.getTime()) / 1000);
  const future = seconds < 0;
  const s = Math.abs(seconds);
  const span =
    s < 60
      ? `${s} s`
      : s < 3600
        ? `${Math.floor(s / 60)} min`
        : s < 172_800
          ? `${Math.floor(s / 3600)} h`
          : `${Math.floor(s / 86_400)} d`;
  return future ? `in ${span}` : `${span} ago`;
}

export const orderLink = (orderId: string): Html => html`<a href="${href(['orders', orderId])}">${orderId}</a>`;

export function layout(title: string, ctx: PageContext, body: Html): Html {
  const { viewer } = ctx;
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="referrer" content="no-referrer" />
        <title>${title} · Payment notifications console</title>
        <link rel="stylesheet" href="/console/assets/console.css" />
      </head>
      <body>
        <header>
          <strong><a href="/console">Payment notifications</a></strong>
          ${
            viewer
              ? html`<nav aria-label="Main">
                    <a href="/console/attention">Needs attention</a>
                    <a href="/console/deliveries">Recent deliveries</a>
                    <a href="/console/audit">Audit</a>
                  </nav>
                  <form role="search" data-testid="search" action="/console/search" method="get">
                    <label for="q">Find an order</label>
                    <input
                      id="q"
                      name="q"
                      type="search"
                      value="${ctx.q ?? ''}"
                      placeholder="orderId, extOrderId, refundId, extRefundId or PAYMENT_ID"
                      size="40"
                      required
                      maxlength="200"
                    />
                    <button type="submit">Search</button>
                  </form>
                  <div class="who">
                    <span>${viewer.name} (${viewer.role})</span>
                    <form class="inline" action="/console/sign-out" method="post">
                      <button type="submit">Sign out</button>
                    </form>
                  </div>`
              : ''
          }
        </header>
        <main id="main">${body}</main>
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
