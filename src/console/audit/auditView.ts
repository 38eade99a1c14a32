import { AUDIT_ACTIONS, type AuditRow } from '../../audit/auditQueries';
import { href, html, type Html } from '../frame/html';
import { layout, type PageContext } from '../frame/layout';
import { orderLink, time, value } from '../frame/parts';
import { auditActionWords, checkResultWords } from '../language/words';

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
