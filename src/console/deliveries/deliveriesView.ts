import { DELIVERY_OUTCOMES } from '../../domain/outcomes';
import { href, html, type Html } from '../frame/html';
import { layout, type PageContext } from '../frame/layout';
import { orderLink, outcome, provenanceMark, status, time, value } from '../frame/parts';
import { setting, term } from '../frame/terms';
import { DELIVERY_OUTCOME_WORDS } from '../language/words';
import type { ListedDelivery } from './deliveriesQueries';

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
