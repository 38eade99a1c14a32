import { html, type Html } from '../frame/html';
import {
  CHECK_RESULT_WORDS,
  DELIVERY_OUTCOME_WORDS,
  FIELD_WORDS,
  LEARNT_WORD,
  ORDER_STATUS_WORDS,
  RESTORED_WORD,
  QUARANTINE_REASON_WORDS,
  REFUND_STATUS_WORDS,
  SETTING_WORDS,
  TERMS,
  type StatusWords,
} from '../language/words';
import { layout, type PageContext } from '../frame/layout';

/** The glossary: every status, for the customer and for the shop, and every word and setting a page uses. */

function statusTable(kind: 'order' | 'refund', words: Readonly<Record<string, StatusWords>>): Html {
  return html`<table>
    <thead>
      <tr>
        <th scope="col">Status</th>
        <th scope="col">For the customer</th>
        <th scope="col">For the shop</th>
      </tr>
    </thead>
    <tbody>
      ${Object.entries(words).map(
        ([code, w]) =>
          html`<tr id="${kind}-${code}">
            <th scope="row">${w.label} <span class="field">(${code})</span></th>
            <td>${w.customer}</td>
            <td>${w.shop}</td>
          </tr>`,
      )}
    </tbody>
  </table>`;
}

const entry = (id: string, label: Html | string, meaning: string): Html =>
  html`<dt id="${id}">${label}</dt>
    <dd>${meaning}</dd>`;

export function glossaryPage(ctx: PageContext): Html {
  const outcomes = Object.values(DELIVERY_OUTCOME_WORDS);
  return layout(
    'Glossary',
    ctx,
    html`<h1>Glossary</h1>
      <p>
        What the console’s words and statuses mean, for a customer who asks and for the shop. The payment service’s own
        names are beside them in brackets, for when someone quotes them.
      </p>
      <nav aria-label="Glossary sections" class="toc">
        <a href="#order-statuses">Order statuses</a> · <a href="#refund-statuses">Refund statuses</a> ·
        <a href="#ids">Ids</a> · <a href="#answers">What happened to a notification</a> ·
        <a href="#words">Other words</a> · <a href="#checks">Checks with the payment service</a> ·
        <a href="#unreadable">Notifications set aside</a> · <a href="#settings">Settings</a>
      </nav>
      <h2 id="order-statuses">Order statuses</h2>
      <p>
        An order moves forward only: Created, Payment in progress, Waiting for the shop’s confirmation, then Paid or
        Canceled, which are final.
      </p>
      ${statusTable('order', ORDER_STATUS_WORDS)}
      <h2 id="refund-statuses">Refund statuses</h2>
      <p>A refund is in progress, then Refunded or Refund canceled, which are final.</p>
      ${statusTable('refund', REFUND_STATUS_WORDS)}
      <h2 id="ids">Ids a customer or the shop may hold</h2>
      <p>The search box finds an order by any of them.</p>
      <dl class="glossary">
        ${Object.values(FIELD_WORDS).map((f) =>
          entry(f.id, html`${f.label} <span class="field">(${f.field})</span>`, f.meaning),
        )}
      </dl>
      <h2 id="answers">What happened to a notification</h2>
      <dl class="glossary">
        ${outcomes.map((w) => entry(w.id, w.label, w.meaning))}
        ${entry(LEARNT_WORD.id, LEARNT_WORD.label, LEARNT_WORD.meaning)}
        ${entry(RESTORED_WORD.id, RESTORED_WORD.label, RESTORED_WORD.meaning)}
      </dl>
      <h2 id="words">Other words</h2>
      <dl class="glossary">${TERMS.map((w) => entry(w.id, w.label, w.meaning))}</dl>
      <h2 id="checks">How a check with the payment service can end</h2>
      <dl class="glossary">
        ${Object.entries(CHECK_RESULT_WORDS).map(([code, words]) =>
          entry(`check-${code}`, words, `Recorded as ${code}.`),
        )}
      </dl>
      <h2 id="unreadable">Why a notification was set aside</h2>
      <dl class="glossary">
        ${Object.entries(QUARANTINE_REASON_WORDS).map(([code, words]) =>
          entry(`reason-${code}`, words, `Recorded as ${code}.`),
        )}
      </dl>
      <h2 id="settings">Settings named on pages</h2>
      <p>The engineers set these when they install the service; ask them to change one.</p>
      <dl class="glossary">
        ${Object.entries(SETTING_WORDS).map(([name, words]) => entry(`setting-${name}`, html`<code>${name}</code>`, words))}
      </dl>`,
  );
}
