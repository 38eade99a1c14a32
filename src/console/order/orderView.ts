import { readableBody } from '../../domain/personalData';
import type { OrderStory, StoryNotification } from '../../orderStory/orderStoryQueries';
import { contradictionsOf } from '../../orderStory/uncertainty';
import { auditTable } from '../audit/auditView';
import { href, html, type Html } from '../frame/html';
import { layout, type PageContext } from '../frame/layout';
import { factValue, fieldName, money, provenanceMark, shownAsText, status, time, value } from '../frame/parts';
import { setting, term } from '../frame/terms';
import { orderStatusWords, PAY_METHOD_WORDS, TRANSITION_WORDS } from '../language/words';
import {
  atWords,
  checksBox,
  confirmationBox,
  moneyBox,
  movedAndHeard,
  NO_LISTENER,
  saidInstant,
  subject,
  timelineOf,
  uncertainBox,
  type OrderPageOptions,
} from './orderBoxes';

/** The order page: one order's whole story, in a support agent's words. */

/** The order page: the whole story, oldest first. */
export function orderPage(ctx: PageContext, story: OrderStory, options: OrderPageOptions): Html {
  const o = story.order;
  const orderIdPath = ['orders', story.orderId];
  const received = story.notifications.filter((n) => n.observedVia === 'notification');
  const read = story.notifications.filter((n) => n.observedVia === 'reconciliation');
  const contradictions = contradictionsOf(story, (at) => atWords(at, ctx));
  const orderContradiction = contradictions.find((c) => c.kind === 'order');
  const completedAt = story.notifications.find((n) => n.kind === 'order' && n.status === 'COMPLETED')?.receivedAt;
  return layout(
    `Order ${story.orderId}`,
    ctx,
    html`<h1>Order ${value(story.orderId)}</h1>
      ${uncertainBox(contradictions, options)} ${confirmationBox(story, ctx, options)}
      ${
        o
          ? html`<dl class="facts" data-testid="facts">
                <dt>Status</dt>
                <dd>
                  ${
                    orderContradiction
                      ? html`<span class="badge bad">not settled</span>
                          ${status('order', orderContradiction.first.status)}
                          ${atWords(orderContradiction.first.at, ctx)}, then
                          ${status('order', orderContradiction.second.status)}
                          ${atWords(orderContradiction.second.at, ctx)}`
                      : html`${status('order', o.status)} since ${time(o.updatedAt, ctx)}`
                  }
                </dd>
                <dt>For the customer</dt>
                <dd>
                  ${
                    orderContradiction
                      ? 'Not known yet: tell them the payment is being checked with the payment service, and promise nothing until it is.'
                      : orderStatusWords(o.status).customer
                  }
                </dd>
                ${
                  o.localReceiptDateTime !== null || completedAt !== undefined
                    ? movedAndHeard(o.localReceiptDateTime, completedAt ?? null, 'Paid at the payment service', ctx)
                    : ''
                }
                <dt>Amount</dt>
                <dd data-testid="amount">${money(ctx, o.totalAmount, o.currencyCode)}</dd>
                <dt>${fieldName('extOrderId')}</dt>
                <dd>${value(o.extOrderId)}</dd>
                <dt>${fieldName('paymentId')}</dt>
                <dd>${value(o.paymentId)}</dd>
                <dt>${fieldName('posId')}</dt>
                <dd>${value(o.merchantPosId)}</dd>
                <dt>Paid by</dt>
                <dd>
                  ${
                    o.payMethodType === null
                      ? html`<span class="muted">not known yet</span>`
                      : html`${PAY_METHOD_WORDS[o.payMethodType] ?? ''}
                          <span class="field">(${value(o.payMethodType)})</span>`
                  }
                </dd>
                <dt>First seen</dt>
                <dd>${time(o.createdAt, ctx)}</dd>
              </dl>
              ${moneyBox(story, ctx, orderContradiction !== undefined)}`
          : html`<p class="notice">No notification of this order itself has been recorded; only its refunds.</p>`
      }
      ${
        options.canAct
          ? html`<p class="actions">
              <a href="${href([...orderIdPath, 'reconcile'])}" data-testid="check"
                >Check this order with the payment service now…</a
              >
              ·
              <a href="${href([...orderIdPath, 'republish'])}">Send its events to other services again…</a>
            </p>`
          : ''
      }
      <h2>Timeline</h2>
      <ol data-testid="timeline">
        ${timelineOf(story, ctx).map((t) => html`<li>${time(t.at, ctx)}: ${t.what}</li>`)}
      </ol>
      ${checksBox(story, ctx, options)}
      <h2>${term('events', 'Events for other services')}</h2>
      ${
        story.events.length === 0
          ? html`<p>
              No event of this order is kept: none was written, or they were deleted after
              ${setting('OUTBOX_RETENTION')}.
            </p>`
          : html`<table data-testid="events">
              <thead>
                <tr>
                  <th scope="col">#</th>
                  <th scope="col">Event</th>
                  <th scope="col">Written</th>
                  <th scope="col">Passed on</th>
                  <th scope="col">Attempts</th>
                  <th scope="col">The broker’s last answer</th>
                </tr>
              </thead>
              <tbody>
                ${story.events.map(
                  (e) =>
                    html`<tr>
                      <td>${e.sequence}</td>
                      <td><code>${e.type}</code></td>
                      <td>${time(e.createdAt, ctx)}</td>
                      <td>${passedOn(e, story.events, ctx)}</td>
                      <td>${e.attempts}</td>
                      <td>${e.lastError ?? ''}</td>
                    </tr>`,
                )}
              </tbody>
            </table>`
      }
      ${disagreementsTable(story, ctx)}
      <h2>Refunds</h2>
      ${refundsTable(story, ctx)}
      <h2>What the payment service sent</h2>
      <p class="muted">
        Each ${term('notification', 'notification')} recorded for this order, exactly as it arrived. Repeats of one are
        not shown again.
      </p>
      ${bodiesNotice(options)}
      ${received.length === 0 ? html`<p>None recorded.</p>` : received.map((n) => rawBody(n, story.purgedDays, options, ctx))}
      <h2>What the payment service said when asked</h2>
      <p class="muted">
        The payment service’s answers to ${term('check', 'checks')} that taught the service a status whose notification
        never came. They are not notifications.
      </p>
      ${read.length === 0 ? html`<p>None.</p>` : read.map((n) => rawBody(n, story.purgedDays, options, ctx))}
      <h2>${term('audit', 'Who did what here')}</h2>
      ${auditTable(story.audit, ctx, false)}`,
  );
}

/** When an event was passed on, or why it waits: its turn (an order's events go out in order), or the broker. */

function passedOn(e: OrderStory['events'][number], events: OrderStory['events'], ctx: PageContext): Html {
  if (e.publishedAt) return e.unroutedAt ? html`${time(e.publishedAt, ctx)}; ${NO_LISTENER}` : time(e.publishedAt, ctx);
  const first = events.find((other) => other.publishedAt === null);
  if (first !== undefined && first.id !== e.id) return html`waiting for #${first.sequence} to go first`;
  return html`waiting; ${e.nextAttemptAt ? html`next attempt ${time(e.nextAttemptAt, ctx)}` : 'due now'}`;
}

/** When the service first heard of a refund's current news: its first notification. */
const firstOf = (story: OrderStory, refundId: string): Date | null =>
  story.notifications.find((n) => n.kind === 'refund' && n.subjectId === refundId)?.receivedAt ?? null;

/** A time the payment service gave, read (in its zone when it has no offset), or as received. */
function saidTime(said: string, ctx: PageContext): Html {
  const at = saidInstant(said, ctx);
  return at === null ? value(said) : time(at, ctx);
}

function refundsTable(story: OrderStory, ctx: PageContext): Html {
  if (story.refunds.length === 0) return html`<p>No refund recorded.</p>`;
  return html`<p class="muted" data-testid="reason-note">
      A refund’s reason and its description are the payment service’s words (why it was made, or why the bank rejected
      it), not the customer’s personal data: every role sees them, and they may be told to the customer.
    </p>
    <table data-testid="refunds">
      <thead>
        <tr>
          <th scope="col">${term('refund-id', 'Refund id')}</th>
          <th scope="col">
            ${term('shop-refund-reference', 'Shop’s refund reference')} <span class="field">(extRefundId)</span>
          </th>
          <th scope="col">Status</th>
          <th scope="col">Amount</th>
          <th scope="col">When the payment service says</th>
          <th scope="col">${fieldName('reason')}</th>
          <th scope="col">Its statuses</th>
        </tr>
      </thead>
      <tbody>
        ${story.refunds.map(
          (r) =>
            html`<tr>
              <td>${value(r.refundId)}</td>
              <td>${value(r.extRefundId)}</td>
              <td>${status('refund', r.status)}</td>
              <td>${money(ctx, r.amount, r.currencyCode)}</td>
              <td>
                <dl class="facts">
                  ${movedAndHeard(r.refundDate, firstOf(story, r.refundId), 'Refunded at the payment service', ctx)}
                  ${
                    r.statusDateTime === null
                      ? ''
                      : html`<dt>Status changed there</dt>
                          <dd>${saidTime(r.statusDateTime, ctx)}</dd>`
                  }
                </dl>
              </td>
              <td data-testid="refund-reason">
                ${value(r.reason)}${r.reasonDescription ? html`: ${value(r.reasonDescription)}` : ''}
              </td>
              <td>
                <ol>
                  ${story.notifications
                    .filter((n) => n.kind === 'refund' && n.subjectId === r.refundId)
                    .map(
                      (n) =>
                        html`<li>
                          ${status('refund', n.status)}:
                          ${term(TRANSITION_WORDS[n.outcome].id, TRANSITION_WORDS[n.outcome].label)}${provenanceMark(
                            n.observedVia,
                          )},
                          ${time(n.receivedAt, ctx)}
                        </li>`,
                    )}
                </ol>
              </td>
            </tr>`,
        )}
      </tbody>
    </table>`;
}

function bodiesNotice(options: OrderPageOptions): Html {
  if (options.personalData) return html``;
  return html`<p class="notice" data-testid="redacted-notice">
    The customer’s personal data (name, e-mail, phone, address, card) is hidden for you, a viewer. The original, exactly
    as received, is kept: an <strong>operator</strong> can open it (${term('roles', 'who may')}).
  </p>`;
}

function disagreementsTable(story: OrderStory, ctx: PageContext): Html {
  const notifications = story.notifications;
  const rows = notifications.flatMap((n) => n.disagreements.map((d) => ({ n, d })));
  if (rows.length === 0) return html``;
  return html`<h2>${term('disagreement', 'Disagreements')}</h2>
    <p>Notifications that stated a fact otherwise than the first one did. The first is kept.</p>
    <table>
      <thead>
        <tr>
          <th scope="col">Notification</th>
          <th scope="col">Field</th>
          <th scope="col">Kept (the first)</th>
          <th scope="col">Received later</th>
        </tr>
      </thead>
      <tbody>
        ${rows.map(
          ({ n, d }) =>
            html`<tr>
              <td>${subject(n)} ${status(n.kind, n.status)}</td>
              <td><code>${d.field}</code></td>
              <td>${factValue(d.field, d.kept, currencyOf(story, n), ctx)}</td>
              <td>${factValue(d.field, d.received, currencyOf(story, n), ctx)}</td>
            </tr>`,
        )}
      </tbody>
    </table>`;
}

/** The currency an amount of a notification is in: its order's, or its refund's. */
const currencyOf = (story: OrderStory, n: StoryNotification): string | null =>
  n.kind === 'order'
    ? (story.order?.currencyCode ?? null)
    : (story.refunds.find((r) => r.refundId === n.subjectId)?.currencyCode ?? null);

function rawBody(
  n: StoryNotification,
  purgedDays: ReadonlyMap<string, Date>,
  options: OrderPageOptions,
  ctx: PageContext,
): Html {
  const head = html`<h3>${subject(n)} ${status(n.kind, n.status)}</h3>
    <p class="muted">Received ${time(n.receivedAt, ctx)}; SHA-256 <code>${n.bodySha256}</code></p>`;
  if (n.body === null) {
    const purgedAt = purgedDays.get(n.receivedAt.toISOString().slice(0, 10));
    return html`${head}
      <p class="notice">
        Deleted${purgedAt ? html` ${time(purgedAt, ctx)}` : ''}, as ${setting('BODY_RETENTION')} says.
      </p>`;
  }
  const { readable, raw } = readableBody(n.body, { personalData: options.personalData });
  return html`${head}
    <pre
      class="body"
      data-testid="body"
      tabindex="0"
      aria-label="${n.kind} ${n.kind === 'refund' ? n.subjectId : ''} ${n.status}, readable"
    >
${shownAsText(readable)}</pre>
    ${
      raw === null
        ? ''
        : html`<details>
            <summary>Exactly as received (${n.body.length} bytes)</summary>
            <pre class="body" tabindex="0">${shownAsText(raw)}</pre>
          </details>`
    }`;
}
