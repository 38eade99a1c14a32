import { DELIVERY_OUTCOMES } from '../../domain/outcomes';
import { readableBody } from '../../domain/personalData';
import { AUDIT_ACTIONS, type AuditRow } from '../../audit/auditQueries';
import type { QuarantinedNotification } from '../../recording/quarantineQueries';
import { href, html, type Html } from '../html';
import type { ListedDelivery } from '../queries/lists';
import type { SignedInSession } from '../queries/sessions';
import { auditActionWords, checkResultWords, DELIVERY_OUTCOME_WORDS, quarantineReasonWords } from '../words';
import { layout, type PageContext } from './layout';
import { orderLink, outcome, provenanceMark, shownAsText, status, time, value } from './parts';
import { setting, term } from './terms';

/** The lists: the audit log, the deliveries, a notification set aside. */

/** How an audited action ended; a row that coalesces repeats says how many times, and when the last was. */
function auditResult(a: AuditRow, ctx: PageContext): Html {
  if (a.count <= 1) return html`${checkResultWords(a.result)}`;
  return html`${checkResultWords(a.result)}
    <span class="badge">×${a.count}</span>
    ${a.lastAt ? html`<br /><span class="muted">the last</span> ${time(a.lastAt, ctx)}` : ''}`;
}

/** Where an action came from: the console, the admin API or the command line, and from which address. */
const AUDIT_VIA_WORDS: Readonly<Record<AuditRow['via'], string>> = {
  console: 'the console',
  api: 'the admin API',
  'command line': 'the command line',
};

export function auditTable(rows: readonly AuditRow[], ctx: PageContext, withOrder: boolean): Html {
  if (rows.length === 0) return html`<p data-testid="audit">Nothing recorded.</p>`;
  return html`<table data-testid="audit">
    <thead>
      <tr>
        <th scope="col">When</th>
        <th scope="col">Who</th>
        <th scope="col">Role</th>
        <th scope="col">Through</th>
        <th scope="col">What</th>
        <th scope="col">On</th>
        <th scope="col">How it ended</th>
        <th scope="col">Detail</th>
      </tr>
    </thead>
    <tbody>
      ${rows.map(
        (a) =>
          html`<tr>
            <td>${time(a.at, ctx)}</td>
            <td>${value(a.actor)}</td>
            <td>${a.role ?? '—'}</td>
            <td>
              ${AUDIT_VIA_WORDS[a.via]}${a.sourceAddress ? html`<br /><span class="muted">${a.sourceAddress}</span>` : ''}
            </td>
            <td>${auditActionWords(a.action)} <span class="field">(${a.action})</span></td>
            <td>${withOrder && a.orderId !== null ? orderLink(a.orderId) : value(a.target ?? '')}</td>
            <td>${auditResult(a, ctx)}</td>
            <td>${value(a.detail)}</td>
          </tr>`,
      )}
    </tbody>
  </table>`;
}

/** The audit page's filters as given (echoed in the form and the next page's link). */
export interface AuditQuery {
  actor: string;
  action: string;
  order: string;
  from: string;
  to: string;
}

export function auditPage(ctx: PageContext, query: AuditQuery, rows: readonly AuditRow[], next: string | null): Html {
  const { clock } = ctx;
  return layout(
    'Audit',
    ctx,
    html`<h1>Audit trail</h1>
      <p class="muted">
        Every sign-in (failed ones too) and every action, through the console, the admin API or the command line, newest
        first. Repeated sign-ins are one row an hour per person, refused ones one a minute per address, with a count.
      </p>
      <form class="filters" action="/console/audit" method="get">
        <label>Person <input name="actor" value="${query.actor}" size="14" maxlength="200" /></label>
        <label
          >What
          <select name="action">
            <option value="">anything</option>
            ${AUDIT_ACTIONS.map(
              (a) =>
                html`<option value="${a}" ${query.action === a ? html` selected` : ''}>${auditActionWords(a)}</option>`,
            )}
          </select></label
        >
        <label>Order <input name="order" value="${query.order}" size="16" maxlength="128" /></label>
        <label
          >From (${clock.timeZone}) <input name="from" value="${query.from}" placeholder="2026-11-27" size="18"
        /></label>
        <label>To (${clock.timeZone}) <input name="to" value="${query.to}" placeholder="now" size="18" /></label>
        <button type="submit">Filter</button>
      </form>
      ${auditTable(rows, ctx, true)}
      ${next ? html`<p><a rel="next" href="${href(['audit'], { ...query, cursor: next })}">Older</a></p>` : ''}`,
  );
}

/** Who is signed in now (operators only), each name with the way to end all its sessions. */
export function sessionsPage(ctx: PageContext, sessions: readonly SignedInSession[]): Html {
  const names = [...new Set(sessions.map((s) => s.name))];
  return layout(
    'Signed in',
    ctx,
    html`<h1>Who is signed in now</h1>
      <p class="muted">
        Sessions neither expired nor idle, on every replica. Ending a person's sessions signs them out everywhere at
        their next request; their token still signs in until it is removed from the console's tokens.
      </p>
      ${
        sessions.length === 0
          ? html`<p data-testid="sessions">No one.</p>`
          : html`<table data-testid="sessions">
                <thead>
                  <tr>
                    <th scope="col">Who</th>
                    <th scope="col">Role</th>
                    <th scope="col">Signed in</th>
                    <th scope="col">Last seen</th>
                    <th scope="col">Ends</th>
                    <th scope="col">From</th>
                  </tr>
                </thead>
                <tbody>
                  ${sessions.map(
                    (s) =>
                      html`<tr>
                        <td>${value(s.name)}</td>
                        <td>${s.role}</td>
                        <td>${time(s.createdAt, ctx)}</td>
                        <td>${time(s.lastSeenAt, ctx)}</td>
                        <td>${time(s.expiresAt, ctx)}</td>
                        <td>${s.sourceAddress ?? '—'}</td>
                      </tr>`,
                  )}
                </tbody>
              </table>
              <ul>
                ${names.map(
                  (name) =>
                    html`<li><a href="${href(['sessions', name, 'end'])}">End all sessions of ${value(name)}…</a></li>`,
                )}
              </ul>`
      }`,
  );
}

export interface DeliveriesQuery {
  outcome: string;
  pos: string;
  /** As typed (echoed into the form). */
  from: string;
  to: string;
}

/** How the filter's times were read, for the sentence above the list. */
export interface DeliveriesWindow {
  from: Date;
  to: Date;
  notes: string[];
}

function deliveryOrder(d: ListedDelivery): Html {
  if (d.delivered !== null) return orderLink(d.delivered.orderId);
  if (d.quarantineId !== null)
    return html`<a href="${href(['quarantine', d.quarantineId])}">set aside #${d.quarantineId}</a>`;
  return html`<span class="muted">gone: its day was removed (${setting('HISTORY_RETENTION')})</span>`;
}

export function deliveriesPage(
  ctx: PageContext,
  query: DeliveriesQuery,
  window: DeliveriesWindow,
  rows: readonly ListedDelivery[],
  next: string | null,
): Html {
  const { clock } = ctx;
  return layout(
    'Recent deliveries',
    ctx,
    html`<h1>Recent deliveries</h1>
      <p class="muted">
        Each arrival of a ${term('notification', 'notification')} from the payment service, newest first, with what the
        service made of it. Times are in ${clock.timeZone}.
      </p>
      <form class="filters" action="/console/deliveries" method="get">
        <label
          >What happened
          <select name="outcome">
            <option value="">anything</option>
            ${DELIVERY_OUTCOMES.map(
              (o) =>
                html`<option value="${o}" ${query.outcome === o ? html` selected` : ''}>
                  ${DELIVERY_OUTCOME_WORDS[o].label}
                </option>`,
            )}
          </select></label
        >
        <label>Shop account (POS) <input name="pos" value="${query.pos}" size="10" maxlength="64" /></label>
        <label
          >From (${clock.timeZone})
          <input name="from" type="datetime-local" step="1" value="${query.from}" />
        </label>
        <label>To (${clock.timeZone}) <input name="to" type="datetime-local" step="1" value="${query.to}" /></label>
        <button type="submit">Show</button>
      </form>
      <p data-testid="window">
        From ${time(window.from, ctx)} to ${time(window.to, ctx)}.
        ${window.notes.map((n) => html`<span class="notice-inline">${n}</span> `)}
      </p>
      ${
        rows.length === 0
          ? html`<p>No delivery matches.</p>`
          : html`<table data-testid="deliveries">
              <thead>
                <tr>
                  <th scope="col">When</th>
                  <th scope="col">Order</th>
                  <th scope="col">Status it brought</th>
                  <th scope="col">What happened</th>
                  <th scope="col">From</th>
                  <th scope="col">Shop account</th>
                </tr>
              </thead>
              <tbody>
                ${rows.map(
                  (d) =>
                    html`<tr>
                      <td>${time(d.receivedAt, ctx)}</td>
                      <td>${deliveryOrder(d)}</td>
                      <td>
                        ${
                          d.delivered === null
                            ? html`<span class="muted">—</span>`
                            : html`${d.delivered.kind === 'refund' ? html`refund ${value(d.delivered.subjectId)} ` : ''}${status(
                                d.delivered.kind,
                                d.delivered.status,
                              )}`
                        }
                      </td>
                      <td>${outcome(d.outcome)}</td>
                      <td>
                        ${d.observedVia === 'notification' ? value(d.sourceAddress ?? '—') : provenanceMark(d.observedVia)}
                      </td>
                      <td>${value(d.posId)}</td>
                    </tr>`,
                )}
              </tbody>
            </table>`
      }
      ${next ? html`<p><a rel="next" href="${href(['deliveries'], { ...query, cursor: next })}">Older</a></p>` : ''}`,
  );
}

/** One notification set aside: why, when, whether it was retried, and what it held (redacted for viewers). */
export function quarantinePage(
  ctx: PageContext,
  q: QuarantinedNotification,
  options: { personalData: boolean; canAct: boolean },
): Html {
  const readable = q.body === null ? null : readableBody(q.body, { personalData: options.personalData });
  return layout(
    `Notification set aside #${q.id}`,
    ctx,
    html`<h1>Notification set aside #${q.id}</h1>
      <p>
        A genuine notification the service ${term('set-aside', 'could not read')}: it was kept apart and answered, so
        the payment service does not send it again.
      </p>
      <dl class="facts">
        <dt>Why</dt>
        <dd>${quarantineReasonWords(q.reason)} <span class="field">(${q.reason})</span>: ${value(q.detail)}</dd>
        <dt>Received</dt>
        <dd>${time(q.receivedAt, ctx)}</dd>
        <dt>Shop account (POS)</dt>
        <dd>${value(q.posId)}</dd>
        <dt>Now</dt>
        <dd>
          ${
            q.resolvedAt
              ? html`resolved ${time(q.resolvedAt, ctx)}: ${value(q.resolution ?? '')}`
              : html`<strong>still set aside</strong>`
          }
        </dd>
      </dl>
      ${
        options.canAct && !q.resolvedAt
          ? html`<p class="actions"><a href="${href(['quarantine', q.id, 'retry'])}">Retry it…</a></p>`
          : ''
      }
      <h2>What was received</h2>
      ${
        readable === null
          ? html`<p class="notice">Deleted, as ${setting('BODY_RETENTION')} says.</p>`
          : html`${
                options.personalData
                  ? ''
                  : html`<p class="notice" data-testid="redacted-notice">
                      The customer’s personal data is hidden for you, a viewer; an <strong>operator</strong> can open
                      the original, exactly as received.
                    </p>`
              }
              <pre class="body" tabindex="0">${shownAsText(readable.readable)}</pre>`
      }
      <p><a href="/console/attention#set-aside">Back to what needs attention</a></p>`,
  );
}
