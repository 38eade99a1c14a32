import { html, type Html } from '../frame/html';
import { layout, type PageContext } from '../frame/layout';
import { contradictedMark, money, orderLink, status, time, value } from '../frame/parts';
import { FIELD_WORDS } from '../language/words';
import type { OrderSummary, SearchMatch } from './overviewQueries';

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
