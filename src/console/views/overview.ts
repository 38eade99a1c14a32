import { DELIVERY_OUTCOMES } from '../../domain/outcomes';
import type { Overview, SearchMatch } from '../queries/overview';
import { href, html, type Html } from '../html';
import { layout, orderLink, time, type PageContext } from './layout';

/** The overview and the search results. */

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

export function pendingLine(pending: Overview['pending'], now: Date): Html {
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
