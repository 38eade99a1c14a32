import { html, type Html } from '../html';
import { CSV_HEADER } from '../financeCsv';
import { layout, type PageContext } from './layout';
import {} from './parts';
import { term } from './terms';

/** The finance export's page: what it holds, and the form that downloads it. */

export interface ExportForm {
  pos: string;
  from: string;
  to: string;
}

const COLUMNS: Record<(typeof CSV_HEADER)[number], string> = {
  type: '“payment” (an order paid) or “refund” (a refund made)',
  time: 'when it was paid or refunded, in the shop’s time zone with its offset (2026-11-27T16:40:47.123+01:00)',
  shop_reference: 'the shop’s own order number (extOrderId)',
  payment_id: 'the payment’s number at the payment service (PAYMENT_ID), as on the customer’s bank statement',
  order_id: 'the payment service’s order id (orderId)',
  refund_id: 'for a refund, the payment service’s refund id (refundId)',
  shop_refund_reference: 'for a refund, the shop’s own refund number (extRefundId)',
  amount: 'in major units with a dot as the decimal separator (2234.71); a refund’s amount is what went back',
  currency: 'the ISO code (PLN)',
  shop_account: 'the shop account (POS)',
  note: 'empty, or why an amount could not be given in major units (it is then given here, as received)',
};

export function exportPage(ctx: PageContext, form: ExportForm, knownPos: readonly string[], maxDays: number): Html {
  const { clock } = ctx;
  return layout(
    'Finance export',
    ctx,
    html`<h1>Finance export</h1>
      <p>
        A spreadsheet (CSV) of one ${term('shop-account', 'shop account')}’s payments and refunds: every order that
        became ${term('order-COMPLETED', 'Paid')} and every refund that became ${term('refund-FINALIZED', 'Refunded')}
        on the days chosen (in ${clock.timeZone}), in the order they did. At most ${maxDays} days at once.
      </p>
      <form class="filters" action="/console/export.csv" method="get" data-testid="export-form">
        <label
          >Shop account (POS)
          <input name="pos" value="${form.pos}" list="known-pos" required size="12" maxlength="64" />
          <datalist id="known-pos">${knownPos.map((p) => html`<option value="${p}"></option>`)}</datalist>
        </label>
        <label>First day <input name="from" type="date" value="${form.from}" required /></label>
        <label>Last day <input name="to" type="date" value="${form.to}" required /></label>
        <button class="primary" type="submit">Download the CSV</button>
      </form>
      <h2>What each column holds</h2>
      <dl class="glossary">
        ${CSV_HEADER.map(
          (c) =>
            html`<dt><code>${c}</code></dt>
              <dd>${COLUMNS[c]}</dd>`,
        )}
      </dl>
      <p class="muted">
        A cell that a spreadsheet would read as a formula (it starts with =, +, -, @) is written with an apostrophe in
        front, so it stays text.
      </p>`,
  );
}
