import { DELIVERY_OUTCOMES } from '../domain/outcomes';
import { readableBody } from './bodies';
import type {
  Attention,
  AuditRow,
  DeliveryRow,
  NotificationRow,
  OrderStory,
  Overview,
  QuarantineRow,
  SearchMatch,
} from './consoleQueries';
import { href, html, type Html } from './html';
import type { ConsoleRole } from './session';

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

const orderLink = (orderId: string): Html => html`<a href="${href(['orders', orderId])}">${orderId}</a>`;

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

const FIELD_NAMES: Record<SearchMatch['field'], string> = {
  orderId: 'orderId',
  extOrderId: 'extOrderId',
  paymentId: 'PAYMENT_ID',
  refundId: 'refundId',
  extRefundId: 'extRefundId',
};

export function searchResultsPage(ctx: PageContext, q: string, matches: readonly SearchMatch[]): Html {
  return layout(
    'Search',
    ctx,
    html`<h1>Several orders match “${q}”</h1>
      <table>
        <thead>
          <tr>
            <th>Order</th>
            <th>Matched as</th>
            <th>Refund</th>
          </tr>
        </thead>
        <tbody>
          ${matches.map(
            (m) =>
              html`<tr>
                <td>${orderLink(m.orderId)}</td>
                <td>${FIELD_NAMES[m.field]}</td>
                <td>${m.refundId ?? ''}</td>
              </tr>`,
          )}
        </tbody>
      </table>`,
  );
}

/** An SVG bar chart of counts, drawn on the server (no script); labelled for screen readers. */
export function barChart(label: string, values: readonly number[], labels: readonly string[]): Html {
  const width = 24 * values.length;
  const height = 80;
  const max = Math.max(1, ...values);
  return html`<svg
    class="chart"
    role="img"
    aria-label="${label}"
    viewBox="0 0 ${width} ${height + 14}"
    width="${width * 2}"
    height="${(height + 14) * 2}"
  >
    <title>${label}</title>
    ${values.map((v, i) => {
      const h = Math.round((v / max) * height);
      return html`<rect x="${i * 24 + 3}" y="${height - h}" width="18" height="${h}" fill="#0a58ca"
          ><title>${labels[i] ?? ''}: ${v}</title></rect
        >${
          i % 3 === 0
            ? html`<text x="${i * 24 + 3}" y="${height + 11}" font-size="9" fill="#57606a">${labels[i] ?? ''}</text>`
            : ''
        }`;
    })}
  </svg>`;
}

function pendingLine(pending: Overview['pending'], now: Date): Html {
  const count = pending.count > pending.countBound ? `more than ${pending.countBound}` : String(pending.count);
  return pending.oldest === null
    ? html`<p>No event is waiting for the broker.</p>`
    : html`<p>${count} event(s) waiting for the broker; the oldest since ${time(pending.oldest, now)}.</p>`;
}

export function overviewPage(ctx: PageContext, o: Overview): Html {
  const total = o.byOutcome.reduce((sum, r) => sum + r.count, 0);
  return layout(
    'Overview',
    ctx,
    html`<h1>Today (UTC)</h1>
      <h2>Deliveries by outcome</h2>
      <p class="muted">Deliveries of the notifications first received today.</p>
      <table>
        <thead>
          <tr>
            <th>Outcome</th>
            <th>Deliveries</th>
          </tr>
        </thead>
        <tbody>
          ${DELIVERY_OUTCOMES.map((outcome) => {
            const count = o.byOutcome.find((r) => r.outcome === outcome)?.count ?? 0;
            return html`<tr>
              <td><a href="${href(['deliveries'], { outcome })}">${outcome}</a></td>
              <td>${count}</td>
            </tr>`;
          })}
          <tr>
            <th>All</th>
            <th>${total}</th>
          </tr>
        </tbody>
      </table>
      ${barChart(
        'Deliveries today by hour (UTC)',
        o.byHour,
        o.byHour.map((_, h) => `${String(h).padStart(2, '0')}h`),
      )}
      <h2>Outbox</h2>
      ${pendingLine(o.pending, ctx.now)}
      <p><a href="/console/attention">What needs attention</a></p>`,
  );
}

const OUTCOME_MEANING: Record<NotificationRow['outcome'], string> = {
  applied: 'moved the projection',
  stale: 'stale: an earlier status than the one kept',
  conflict: 'conflicting with the status kept',
};

function viaBadge(via: NotificationRow['observedVia']): Html {
  return via === 'reconciliation'
    ? html` <span class="badge recon" title="read from the payment API; the sender never delivered it"
        >via reconciliation</span
      >`
    : html``;
}

interface TimelineEntry {
  at: Date;
  order: number;
  what: Html;
}

/** The order page: the whole story, oldest first. */
export function orderPage(
  ctx: PageContext,
  story: OrderStory,
  options: { personalData: boolean; canAct: boolean },
): Html {
  const { now } = ctx;
  const statusOf = new Map(story.notifications.map((n) => [n.id, n]));
  const timeline: TimelineEntry[] = [
    ...story.deliveries.map((d) => {
      const n = d.notificationId === null ? undefined : statusOf.get(d.notificationId);
      return {
        at: d.receivedAt,
        order: 1,
        what: html`Delivery of
          ${n ? html`<strong>${n.kind} ${n.status}</strong>` : 'a notification'}${
            d.observedVia === 'reconciliation'
              ? html` <span class="badge recon">via reconciliation</span> (read from the payment API)`
              : html` from ${d.sourceAddress ?? 'an unknown address'}`
          },
          POS ${d.posId}, key ${d.keyFingerprint}; we answered <code>200 {"outcome":"${d.outcome}"}</code>`,
      };
    }),
    ...story.notifications.map((n) => ({
      at: n.receivedAt,
      order: 0,
      what: html`Recorded ${n.kind} ${n.kind === 'refund' ? n.subjectId : ''} status <strong>${n.status}</strong>:
        ${OUTCOME_MEANING[n.outcome]}${viaBadge(n.observedVia)}${
          n.disagreements.length > 0
            ? html` <span class="badge bad">${n.disagreements.length} disagreement(s)</span>`
            : ''
        }`,
    })),
    ...story.events.map((e) => ({
      at: e.createdAt,
      order: 2,
      what: html`Event <code>${e.type}</code> #${e.sequence}
        ${
          e.publishedAt
            ? html`published ${time(e.publishedAt, now)}`
            : html`<span class="badge bad">waiting for the broker</span>`
        }`,
    })),
    ...story.audit.map((a) => ({
      at: a.at,
      order: 3,
      what: html`Console: ${a.actor} ${a.action} → ${a.result}`,
    })),
  ].sort((a, b) => a.at.getTime() - b.at.getTime() || a.order - b.order);

  const o = story.order;
  const orderIdPath = ['orders', story.orderId];
  return layout(
    `Order ${story.orderId}`,
    ctx,
    html`<h1>Order ${story.orderId}</h1>
      ${
        o
          ? html`<dl class="facts">
              <dt>Status</dt>
              <dd><strong>${o.status}</strong></dd>
              <dt>extOrderId</dt>
              <dd>${o.extOrderId ?? '—'}</dd>
              <dt>PAYMENT_ID</dt>
              <dd>${o.paymentId ?? '—'}</dd>
              <dt>POS</dt>
              <dd>${o.posId ?? '—'}</dd>
              <dt>Amount</dt>
              <dd>${o.totalAmount ?? '—'} ${o.currencyCode ?? ''} <span class="muted">(minor units)</span></dd>
              <dt>Pay method</dt>
              <dd>${o.payMethodType ?? '—'}</dd>
              <dt>First seen</dt>
              <dd>${time(o.createdAt, now)}</dd>
              <dt>Last change</dt>
              <dd>${time(o.updatedAt, now)}</dd>
            </dl>`
          : html`<p class="notice">No notification of this order itself has been recorded; only its refunds.</p>`
      }
      ${
        options.canAct
          ? html`<p>
              <a href="${href([...orderIdPath, 'reconcile'])}">Reconcile this order now…</a> ·
              <a href="${href([...orderIdPath, 'republish'])}">Re-publish its events…</a>
            </p>`
          : ''
      }
      <h2>Timeline</h2>
      <ol data-testid="timeline">
        ${timeline.map((t) => html`<li>${time(t.at, now)}: ${t.what}</li>`)}
      </ol>
      <h2>Events</h2>
      ${
        story.events.length === 0
          ? html`<p>No event of this order is in the outbox (none written, or deleted after OUTBOX_RETENTION).</p>`
          : html`<table>
              <thead>
                <tr>
                  <th>#</th>
                  <th>Type</th>
                  <th>Written</th>
                  <th>Published</th>
                  <th>Attempts</th>
                  <th>Last error</th>
                </tr>
              </thead>
              <tbody>
                ${story.events.map(
                  (e) =>
                    html`<tr>
                      <td>${e.sequence}</td>
                      <td><code>${e.type}</code></td>
                      <td>${time(e.createdAt, now)}</td>
                      <td>
                        ${
                          e.publishedAt
                            ? time(e.publishedAt, now)
                            : html`waiting;
                              ${e.nextAttemptAt ? html`next attempt ${time(e.nextAttemptAt, now)}` : 'due now'}`
                        }
                      </td>
                      <td>${e.attempts}</td>
                      <td>${e.lastError ?? ''}</td>
                    </tr>`,
                )}
              </tbody>
            </table>`
      }
      <h2>Reconciliation</h2>
      ${
        story.reconciliation
          ? html`<dl class="facts">
              <dt>Observed</dt>
              <dd>${time(story.reconciliation.observedAt, now)}</dd>
              <dt>Checks</dt>
              <dd>${story.reconciliation.attempts}</dd>
              <dt>Last check</dt>
              <dd>${time(story.reconciliation.lastCheckedAt, now)} ${story.reconciliation.lastResult ?? ''}</dd>
              <dt>Next check</dt>
              <dd>${time(story.reconciliation.nextCheckAt, now)}</dd>
              <dt>Given up</dt>
              <dd>
                ${story.reconciliation.givenUpAt ? html`<span class="badge bad">gave up</span> ${time(story.reconciliation.givenUpAt, now)}` : 'no'}
              </dd>
            </dl>`
          : html`<p>Not in the reconciliation schedule (final, or not checked yet).</p>`
      }
      ${disagreementsTable(story.notifications)}
      <h2>Refunds</h2>
      ${
        story.refunds.length === 0
          ? html`<p>No refund recorded.</p>`
          : html`<table>
              <thead>
                <tr>
                  <th>Refund</th>
                  <th>extRefundId</th>
                  <th>Status</th>
                  <th>Amount</th>
                  <th>Its statuses</th>
                </tr>
              </thead>
              <tbody>
                ${story.refunds.map(
                  (r) =>
                    html`<tr>
                      <td>${r.refundId}</td>
                      <td>${r.extRefundId ?? '—'}</td>
                      <td>${r.status}</td>
                      <td>${r.amount ?? '—'} ${r.currencyCode ?? ''}</td>
                      <td>
                        <ol>
                          ${story.notifications
                            .filter((n) => n.kind === 'refund' && n.subjectId === r.refundId)
                            .map(
                              (n) =>
                                html`<li>
                                  ${n.status}: ${OUTCOME_MEANING[n.outcome]}${viaBadge(n.observedVia)},
                                  ${time(n.receivedAt, now)}
                                </li>`,
                            )}
                        </ol>
                      </td>
                    </tr>`,
                )}
              </tbody>
            </table>`
      }
      <h2>Raw bodies</h2>
      ${story.notifications.map((n) => rawBody(n, story.purgedDays, options.personalData, now))}
      <h2>Audit</h2>
      ${auditTable(story.audit, now, false)}`,
  );
}

function disagreementsTable(notifications: readonly NotificationRow[]): Html {
  const rows = notifications.flatMap((n) => n.disagreements.map((d) => ({ n, d })));
  if (rows.length === 0) return html`<p>No disagreement with the facts kept.</p>`;
  return html`<h3>Disagreements</h3>
    <table>
      <thead>
        <tr>
          <th>Status</th>
          <th>Field</th>
          <th>Kept</th>
          <th>Received</th>
        </tr>
      </thead>
      <tbody>
        ${rows.map(
          ({ n, d }) =>
            html`<tr>
              <td>${n.kind} ${n.status}</td>
              <td>${d.field}</td>
              <td>${d.kept}</td>
              <td>${d.received}</td>
            </tr>`,
        )}
      </tbody>
    </table>`;
}

function rawBody(n: NotificationRow, purgedDays: ReadonlyMap<string, Date>, personalData: boolean, now: Date): Html {
  const head = html`<h3>${n.kind} ${n.kind === 'refund' ? n.subjectId : ''} ${n.status}${viaBadge(n.observedVia)}</h3>
    <p>SHA-256 <code>${n.bodySha256}</code>, received ${time(n.receivedAt, now)}</p>`;
  if (n.body === null) {
    const purgedAt = purgedDays.get(n.receivedAt.toISOString().slice(0, 10));
    return html`${head}
      <p class="notice">Purged${purgedAt ? html` ${time(purgedAt, now)}` : ''} (BODY_RETENTION).</p>`;
  }
  const { readable, raw } = readableBody(n.body, personalData);
  return html`${head}
    <details>
      <summary>Readable${personalData ? '' : ' (the buyer’s personal data redacted)'}</summary>
      <pre>${readable}</pre>
    </details>
    ${
      raw === null
        ? ''
        : html`<details>
            <summary>As received (${n.body.length} bytes)</summary>
            <pre>${raw}</pre>
          </details>`
    }`;
}

export function auditTable(rows: readonly AuditRow[], now: Date, withOrder: boolean): Html {
  if (rows.length === 0) return html`<p data-testid="audit">Nothing recorded.</p>`;
  return html`<table data-testid="audit">
    <thead>
      <tr>
        <th>When</th>
        <th>Who</th>
        <th>Role</th>
        <th>Action</th>
        <th>Target</th>
        <th>Result</th>
        <th>Detail</th>
      </tr>
    </thead>
    <tbody>
      ${rows.map(
        (a) =>
          html`<tr>
            <td>${time(a.at, now)}</td>
            <td>${a.actor}</td>
            <td>${a.role ?? '—'}</td>
            <td>${a.action}</td>
            <td>${withOrder && a.orderId !== null ? orderLink(a.orderId) : (a.target ?? '')}</td>
            <td>${a.result}</td>
            <td>${a.detail}</td>
          </tr>`,
      )}
    </tbody>
  </table>`;
}

export function auditPage(ctx: PageContext, rows: readonly AuditRow[], next: string | null): Html {
  return layout(
    'Audit',
    ctx,
    html`<h1>Audit trail</h1>
      <p class="muted">Every sign-in (failed ones too) and every action, newest first.</p>
      ${auditTable(rows, ctx.now, true)}
      ${next ? html`<p><a rel="next" href="${href(['audit'], { cursor: next })}">Older</a></p>` : ''}`,
  );
}

function quarantineTable(rows: readonly QuarantineRow[], now: Date, canAct: boolean): Html {
  return html`<table>
    <thead>
      <tr>
        <th>#</th>
        <th>Received</th>
        <th>Reason</th>
        <th>POS</th>
        <th>Detail</th>
        ${canAct ? html`<th></th>` : ''}
      </tr>
    </thead>
    <tbody>
      ${rows.map(
        (q) =>
          html`<tr>
            <td>${q.id}</td>
            <td>${time(q.receivedAt, now)}</td>
            <td>${q.reason}</td>
            <td>${q.posId}</td>
            <td>${q.detail}</td>
            ${canAct ? html`<td><a href="${href(['quarantine', q.id, 'retry'])}">Retry…</a></td>` : ''}
          </tr>`,
      )}
    </tbody>
  </table>`;
}

export function attentionPage(
  ctx: PageContext,
  a: Attention,
  options: { canAct: boolean; quietAfterMs: number },
): Html {
  const { now } = ctx;
  const quiet = a.lastDeliveryAt === null || now.getTime() - a.lastDeliveryAt.getTime() > options.quietAfterMs;
  return layout(
    'Needs attention',
    ctx,
    html`<h1>Needs attention</h1>
      <div data-testid="attention">
        <h2>Notifications from the sender</h2>
        ${
          quiet
            ? html`<p class="problem">
                No notification received
                ${a.lastDeliveryAt ? html`since ${time(a.lastDeliveryAt, now)}` : 'in the last days'}: longer than
                ${relative(new Date(now.getTime() - options.quietAfterMs), now).replace(' ago', '')}
                (CONSOLE_QUIET_AFTER).
              </p>`
            : html`<p>The last arrived ${time(a.lastDeliveryAt, now)}.</p>`
        }
        <h2>
          Quarantined notifications not yet retried
          (${a.quarantined.length === 50 ? '50 or more' : a.quarantined.length})
        </h2>
        ${
          a.quarantined.length === 0
            ? html`<p>None.</p>`
            : html`${quarantineTable(a.quarantined, now, options.canAct)}${
                options.canAct ? html`<p><a href="/console/quarantine/retry">Retry all open ones…</a></p>` : ''
              }`
        }
        <h2>Orders whose reconciliation gave up (${a.givenUp.length})</h2>
        ${
          a.givenUp.length === 0
            ? html`<p>None.</p>`
            : html`<table>
                <thead>
                  <tr>
                    <th>Order</th>
                    <th>Gave up</th>
                    <th>Checks</th>
                    <th>Last result</th>
                  </tr>
                </thead>
                <tbody>
                  ${a.givenUp.map(
                    (g) =>
                      html`<tr>
                        <td>${orderLink(g.orderId)}</td>
                        <td>${time(g.givenUpAt, now)}</td>
                        <td>${g.attempts}</td>
                        <td>${g.lastResult ?? ''}</td>
                      </tr>`,
                  )}
                </tbody>
              </table>`
        }
        <h2>Conflicts and disagreements, last 7 days (${a.troubled.length})</h2>
        ${
          a.troubled.length === 0
            ? html`<p>None.</p>`
            : html`<table>
                <thead>
                  <tr>
                    <th>Order</th>
                    <th>Notification</th>
                    <th>Outcome</th>
                    <th>Disagreements</th>
                    <th>Received</th>
                  </tr>
                </thead>
                <tbody>
                  ${a.troubled.map(
                    (t) =>
                      html`<tr>
                        <td>${orderLink(t.orderId)}</td>
                        <td>${t.kind} ${t.kind === 'refund' ? t.subjectId : ''} ${t.status}</td>
                        <td>${t.outcome}</td>
                        <td>
                          ${t.disagreements.map((d) => html`${d.field}: kept ${d.kept}, received ${d.received}<br />`)}
                        </td>
                        <td>${time(t.receivedAt, now)}</td>
                      </tr>`,
                  )}
                </tbody>
              </table>`
        }
        <h2>Events waiting for the broker</h2>
        ${pendingLine(a.pending, now)}
      </div>`,
  );
}

export interface DeliveriesQuery {
  outcome: string;
  pos: string;
  from: string;
  to: string;
}

export function deliveriesPage(
  ctx: PageContext,
  query: DeliveriesQuery,
  rows: readonly DeliveryRow[],
  orders: ReadonlyMap<string, string>,
  next: string | null,
): Html {
  const { now } = ctx;
  return layout(
    'Recent deliveries',
    ctx,
    html`<h1>Recent deliveries</h1>
      <form class="filters" action="/console/deliveries" method="get">
        <label
          >Outcome
          <select name="outcome">
            <option value="">any</option>
            ${DELIVERY_OUTCOMES.map(
              (o) => html`<option value="${o}" ${query.outcome === o ? html` selected` : ''}>${o}</option>`,
            )}
          </select></label
        >
        <label>POS <input name="pos" value="${query.pos}" size="10" maxlength="64" /></label>
        <label>From (UTC) <input name="from" value="${query.from}" placeholder="2026-11-27T00:00Z" size="22" /></label>
        <label>To (UTC) <input name="to" value="${query.to}" placeholder="now" size="22" /></label>
        <button type="submit">Filter</button>
      </form>
      ${
        rows.length === 0
          ? html`<p>No delivery matches.</p>`
          : html`<table>
              <thead>
                <tr>
                  <th>When</th>
                  <th>Order</th>
                  <th>From</th>
                  <th>POS</th>
                  <th>Key</th>
                  <th>We answered</th>
                </tr>
              </thead>
              <tbody>
                ${rows.map((d) => {
                  const orderId = d.notificationId === null ? undefined : orders.get(d.notificationId);
                  return html`<tr>
                    <td>${time(d.receivedAt, now)}</td>
                    <td>${orderId ? orderLink(orderId) : d.quarantineId ? `quarantined #${d.quarantineId}` : '—'}</td>
                    <td>
                      ${
                        d.observedVia === 'reconciliation'
                          ? html`<span class="badge recon">via reconciliation</span>`
                          : (d.sourceAddress ?? '—')
                      }
                    </td>
                    <td>${d.posId}</td>
                    <td>${d.keyFingerprint}</td>
                    <td>${d.outcome}</td>
                  </tr>`;
                })}
              </tbody>
            </table>`
      }
      ${next ? html`<p><a rel="next" href="${href(['deliveries'], { ...query, cursor: next })}">Older</a></p>` : ''}`,
  );
}

/** A confirmation step: what will happen, and a form that posts it with confirm=yes. */
export interface Confirmation {
  title: string;
  /** Sentences saying what the action does. */
  explanation: Html;
  action: string;
  fields: Readonly<Record<string, string>>;
  button: string;
}

export function confirmPage(ctx: PageContext, c: Confirmation): Html {
  return layout(
    c.title,
    ctx,
    html`<h1>${c.title}</h1>
      ${c.explanation}
      <form action="${c.action}" method="post">
        ${Object.entries(c.fields).map(([name, value]) => html`<input type="hidden" name="${name}" value="${value}" />`)}
        <input type="hidden" name="confirm" value="yes" />
        <p>
          <button class="primary" type="submit">Confirm: ${c.button}</button> <a href="/console/attention">Cancel</a>
        </p>
      </form>`,
  );
}

export function resultPage(
  ctx: PageContext,
  title: string,
  lines: readonly Html[],
  back: { label: string; href: string },
): Html {
  return layout(
    title,
    ctx,
    html`<h1>${title}</h1>
      <div data-testid="result" role="status">${lines.map((l) => html`<p>${l}</p>`)}</div>
      <p><a href="${back.href}">${back.label}</a></p>`,
  );
}
