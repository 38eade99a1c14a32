import { DELIVERY_OUTCOMES } from '../../domain/outcomes';
import { href, html, type Html } from '../html';
import type { OrderSummary, Overview, SearchMatch } from '../queries/overview';
import { DELIVERY_OUTCOME_WORDS, FIELD_WORDS } from '../words';
import { layout, type PageContext } from './layout';
import { contradictedMark, money, orderLink, plural, status, time, value } from './parts';
import { expectedSentence } from './attention';
import { term } from './terms';

/** The overview and the search results. */

const MATCHED_AS: Record<SearchMatch['field'], string> = {
  orderId: `${FIELD_WORDS.orderId.label} (${FIELD_WORDS.orderId.field})`,
  extOrderId: `${FIELD_WORDS.extOrderId.label} (${FIELD_WORDS.extOrderId.field})`,
  paymentId: `${FIELD_WORDS.paymentId.label} (${FIELD_WORDS.paymentId.field})`,
  refundId: `${FIELD_WORDS.refundId.label} (${FIELD_WORDS.refundId.field})`,
  extRefundId: `${FIELD_WORDS.extRefundId.label} (${FIELD_WORDS.extRefundId.field})`,
};

export function searchResultsPage(
  ctx: PageContext,
  q: string,
  matches: readonly SearchMatch[],
  orders: ReadonlyMap<string, OrderSummary>,
): Html {
  return layout(
    'Search',
    ctx,
    html`<h1>Several orders match “${value(q)}”</h1>
      <p>A shop reference is shared by every attempt to pay one order; pick the one the customer means.</p>
      <table>
        <thead>
          <tr>
            <th scope="col">Order</th>
            <th scope="col">Status</th>
            <th scope="col">Amount</th>
            <th scope="col">First seen</th>
            <th scope="col">Found by its</th>
            <th scope="col">Refund</th>
          </tr>
        </thead>
        <tbody>
          ${matches.map(
            (m) =>
              html`<tr>
                <td>${orderLink(m.orderId)}</td>
                ${((o) =>
                  o
                    ? html`<td>
                          ${o.contradicted ? contradictedMark('order', o.contradicted, ctx) : status('order', o.status)}
                        </td>
                        <td>${money(ctx, o.totalAmount, o.currencyCode)}</td>
                        <td>${time(o.createdAt, ctx)}</td>`
                    : html`<td colspan="3"><span class="muted">only its refunds are recorded</span></td>`)(
                  orders.get(m.orderId),
                )}
                <td>${MATCHED_AS[m.field]}</td>
                <td>
                  ${value(m.refundId ?? '')}
                  ${m.refundContradicted ? contradictedMark('refund', m.refundContradicted, ctx) : ''}
                </td>
              </tr>`,
          )}
        </tbody>
      </table>`,
  );
}

/** The smallest 1, 2 or 5 times a power of ten at or above `n` (at least 1): the top of a chart's scale. */
export function scaleTop(n: number): number {
  if (n <= 1) return 1;
  const power = 10 ** Math.floor(Math.log10(n));
  for (const step of [1, 2, 5, 10]) if (step * power >= n) return step * power;
  return 10 * power;
}

/**
 * An SVG bar chart of counts with its scale (0, half, top) and its labels, drawn on the server (no script);
 * labelled for screen readers, each bar with its count in a title.
 */
export function barChart(label: string, values: readonly number[], labels: readonly string[]): Html {
  const left = 34;
  const bar = 24;
  const width = left + bar * values.length;
  const height = 80;
  const top = scaleTop(Math.max(0, ...values));
  const y = (v: number) => height - Math.round((v / top) * height) + 4;
  return html`<svg
    class="chart"
    role="img"
    aria-label="${label}"
    viewBox="0 0 ${width} ${height + 20}"
    width="${width * 2}"
    height="${(height + 20) * 2}"
  >
    <title>${label}</title>
    ${[0, top / 2, top].map(
      (v) =>
        html`<line x1="${left - 3}" x2="${width}" y1="${y(v)}" y2="${y(v)}" stroke="#d0d7de" stroke-width="0.5" />
          <text x="${left - 5}" y="${y(v) + 3}" font-size="8" text-anchor="end" fill="#57606a"
            >${Number.isInteger(v) ? v : v.toFixed(1)}</text
          >`,
    )}
    ${values.map((v, i) => {
      const h = Math.round((v / top) * height);
      return html`<rect x="${left + i * bar + 3}" y="${height - h + 4}" width="18" height="${h}" fill="#0a58ca"
          ><title>${labels[i] ?? ''}: ${v}</title></rect
        >${
          i % 3 === 0
            ? html`<text x="${left + i * bar + 3}" y="${height + 16}" font-size="9" fill="#57606a"
                >${labels[i] ?? ''}</text
              >`
            : ''
        }`;
    })}
  </svg>`;
}

/** What happened to the events: waiting for the broker or not, and which types reached no queue, since when. */
export function eventsLines(o: Pick<Overview, 'pending' | 'unrouted'>, ctx: PageContext): Html {
  const { pending } = o;
  const count = pending.count > pending.countBound ? `more than ${pending.countBound}` : String(pending.count);
  const unexpected = o.unrouted.filter((t) => !t.expected);
  const expected = o.unrouted.filter((t) => t.expected);
  const waiting =
    pending.oldest === null
      ? html`<p>No ${term('events', 'event')} waits for the broker: every one recorded has been sent.</p>`
      : html`<p>
          ${count} ${term('events', pending.count === 1 ? 'event' : 'events')} about ${plural(pending.orders, 'order')}
          wait for the broker, the oldest since ${time(pending.oldest, ctx)}.
          <a href="/console/attention#events-waiting">Which, and why</a>
        </p>`;
  const taken =
    unexpected.length === 0
      ? html`<p data-testid="events-unrouted">
          Every event a service is meant to take was taken by a
          queue${
            pending.oldest === null ? html`: the shop’s other services know of every status` : ''
          }.${expected.length === 0 ? '' : html` ${expectedSentence(expected)} That is normal.`}
        </p>`
      : html`<p data-testid="events-unrouted">
          <strong>Some events reached no queue</strong>, so a service meant to hear of them may not have:
          ${unexpected.map(
            (t, i) =>
              html`${i > 0 ? '; ' : ''}<code>${t.type}</code>
                (${t.events > t.countBound ? `more than ${t.countBound}` : t.events} since ${time(t.since, ctx)}, the
                latest ${time(t.latest, ctx)})`,
          )}.${expected.length === 0 ? '' : html` ${expectedSentence(expected)}`}
          <a href="/console/attention#line-events-unrouted">What to do</a>
        </p>`;
  return html`${waiting}${taken}`;
}

/** An hour's bars: the local day's hours (23, 24 or 25 of them), each its four quarters added. */
function byLocalHour(
  quarters: readonly number[],
  start: Date,
  ctx: PageContext,
): { values: number[]; labels: string[] } {
  const values: number[] = [];
  const labels: string[] = [];
  for (let q = 0; q < quarters.length; q += 4) {
    values.push(quarters.slice(q, q + 4).reduce((a, b) => a + b, 0));
    labels.push(`${String(ctx.clock.wall(new Date(start.getTime() + q * 900_000)).hour).padStart(2, '0')}h`);
  }
  return { values, labels };
}

export function overviewPage(ctx: PageContext, o: Overview, day: { start: Date; text: string }): Html {
  const total = o.byOutcome.reduce((sum, r) => sum + r.count, 0);
  const hours = byLocalHour(o.byQuarter, day.start, ctx);
  const from = ctx.clock.inputValue(day.start);
  return layout(
    'Overview',
    ctx,
    html`<h1>Today, ${ctx.clock.formatDay(day.start)}</h1>
      <p class="actions">
        <a href="/console/attention">What needs attention</a> ·
        <a href="/console/export">Finance export (CSV)</a>
      </p>
      <h2>What happened to today’s notifications</h2>
      <p class="muted">
        Each ${term('delivery', 'delivery')} of a notification first received today (${ctx.clock.timeZone}), by what the
        service made of it.
      </p>
      <table data-testid="outcomes">
        <thead>
          <tr>
            <th scope="col">What happened</th>
            <th scope="col">Deliveries</th>
          </tr>
        </thead>
        <tbody>
          ${DELIVERY_OUTCOMES.map((outcome) => {
            const count = o.byOutcome.find((r) => r.outcome === outcome)?.count ?? 0;
            return html`<tr>
              <td>
                <a href="${href(['deliveries'], { outcome, from })}">${DELIVERY_OUTCOME_WORDS[outcome].label}</a>
              </td>
              <td>${count}</td>
            </tr>`;
          })}
          <tr>
            <th scope="row">All</th>
            <th>${total}</th>
          </tr>
        </tbody>
      </table>
      <h2>Deliveries by hour</h2>
      ${barChart(
        `Deliveries today by hour (${ctx.clock.timeZone}); the most in one hour: ${Math.max(0, ...hours.values)}`,
        hours.values,
        hours.labels,
      )}
      <h2>${term('events', 'Events for other services')}</h2>
      ${eventsLines(o, ctx)}`,
  );
}
