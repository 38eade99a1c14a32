import { href, html, type Html } from '../html';
import { CSV_HEADER, type ExportTotal } from '../financeCsv';
import { layout, type PageContext } from './layout';
import { money, plural, value } from './parts';
import { term } from './terms';

/** The finance export's page: what it holds, and the form that downloads it. */

export interface ExportForm {
  pos: string;
  from: string;
  to: string;
}

/** The days offered in one click: today, yesterday and this month so far (local days). */
export interface ExportShortcuts {
  today: string;
  yesterday: string;
  monthStart: string;
}

const KIND_WORDS: Record<ExportTotal['kind'], string> = {
  payment: 'Payments (orders paid)',
  refund: 'Refunds made',
  held_payment: 'Payments held: both Paid and Canceled came',
  held_refund: 'Refunds held: both Refunded and Canceled came',
};

const COLUMNS: Record<(typeof CSV_HEADER)[number], string> = {
  type: '“payment” (an order paid) or “refund” (a refund made); “held_payment” or “held_refund” when both final statuses came (Paid and Canceled, Refunded and Canceled): book nothing for it until it is reconciled with the payment service',
  booking_time:
    'the booking time: when the payment service says the money moved (an order’s localReceiptDateTime; a refund’s refundDate, else its statusDateTime; read in PAYMENT_SERVICE_TIME_ZONE when written without an offset), as the events’ bookingTime; when it gave no time, when this service recorded it. In the console’s time zone with its offset (2026-11-27T16:40:47.123+01:00)',
  shop_reference: 'the shop’s own order number (extOrderId)',
  payment_id: 'the payment’s number at the payment service (PAYMENT_ID), as on the customer’s bank statement',
  order_id: 'the payment service’s order id (orderId)',
  refund_id: 'for a refund, the payment service’s refund id (refundId)',
  shop_refund_reference: 'for a refund, the shop’s own refund number (extRefundId)',
  amount: 'in major units with a dot as the decimal separator (2234.71); a refund’s amount is what went back',
  currency: 'the ISO code (PLN)',
  shop_account: 'the shop account (POS)',
  note: 'empty; or why the item is held, and what to do; or why an amount could not be given in major units (it is then given here, as received)',
};

/** What the chosen POS and days hold, per type and currency: what the CSV's rows add up to. */
function totalsTable(ctx: PageContext, form: ExportForm, totals: readonly ExportTotal[]): Html {
  return html`<h2>What the export holds</h2>
    <p>Shop account ${value(form.pos)}, ${form.from === form.to ? form.from : `${form.from} to ${form.to}`}:</p>
    ${
      totals.length === 0
        ? html`<p data-testid="export-totals">Nothing was paid or refunded on these days.</p>`
        : html`<table data-testid="export-totals">
            <thead>
              <tr>
                <th scope="col">What</th>
                <th scope="col">Currency</th>
                <th scope="col">How many</th>
                <th scope="col">Total</th>
              </tr>
            </thead>
            <tbody>
              ${totals.map(
                (t) =>
                  html`<tr data-kind="${t.kind}" data-currency="${t.currencyCode ?? ''}">
                    <td>${KIND_WORDS[t.kind]}</td>
                    <td>${value(t.currencyCode)}</td>
                    <td>${t.count}</td>
                    <td>
                      ${money(ctx, t.minorUnits.toString(), t.currencyCode)}${
                        t.withoutAmount > 0 ? html` (${plural(t.withoutAmount, 'item')} without an amount)` : ''
                      }
                    </td>
                  </tr>`,
              )}
            </tbody>
          </table>`
    }`;
}

export function exportPage(
  ctx: PageContext,
  form: ExportForm,
  knownPos: readonly string[],
  maxDays: number,
  shortcuts: ExportShortcuts,
  totals: readonly ExportTotal[] | null,
): Html {
  const days = (from: string, to: string) => href(['export'], { pos: form.pos, from, to });
  const { clock } = ctx;
  return layout(
    'Finance export',
    ctx,
    html`<h1>Finance export</h1>
      <p>
        A spreadsheet (CSV) of one ${term('shop-account', 'shop account')}’s payments and refunds: every order that
        became ${term('order-COMPLETED', 'Paid')} and every refund that became ${term('refund-FINALIZED', 'Refunded')}
        here on the days chosen (in ${clock.timeZone}), in the order they did. At most ${maxDays} days at once. Rows are
        chosen by when this service recorded them, so exports of consecutive days never miss or repeat one; each row’s
        booking time is the payment service’s own, which can fall just before the first day when its notification came
        late.
      </p>
      <form class="filters" action="/console/export.csv" method="get" data-testid="export-form">
        <label
          >Shop account (POS)
          <input name="pos" value="${form.pos}" list="known-pos" required size="12" maxlength="64" />
          <datalist id="known-pos">${knownPos.map((p) => html`<option value="${p}"></option>`)}</datalist>
        </label>
        <label>First day <input name="from" type="date" value="${form.from}" required /></label>
        <label>Last day <input name="to" type="date" value="${form.to}" required /></label>
        <button type="submit" formaction="/console/export">Show the totals</button>
        <button class="primary" type="submit">Download the CSV</button>
      </form>
      <p class="actions" data-testid="export-days">
        <a href="${days(shortcuts.today, shortcuts.today)}">Today</a> ·
        <a href="${days(shortcuts.yesterday, shortcuts.yesterday)}">Yesterday</a> ·
        <a href="${days(shortcuts.monthStart, shortcuts.today)}">This month</a>
      </p>
      ${totals === null ? '' : totalsTable(ctx, form, totals)}
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
