import { readableBody } from '../../domain/personalData';
import type { OrderStory, StoryNotification, StoryRefund } from '../../orderStory/orderStoryQueries';
import { contradictionsOf, type Contradiction } from '../../orderStory/uncertainty';
import { paymentServiceInstant } from '../../domain/paymentServiceTime';
import { href, html, type Html } from '../html';
import { subtractMinor, sumMinor } from '../money';
import {
  auditActionWords,
  checkResultWords,
  orderStatusWords,
  PAY_METHOD_WORDS,
  RESTORED_WORD,
  TRANSITION_WORDS,
} from '../words';
import { nextCheck, type CheckSchedule } from './checks';
import { layout, type PageContext } from './layout';
import { auditTable } from './lists';
import {
  factValue,
  fieldName,
  money,
  outcome,
  plural,
  relative,
  provenanceMark,
  shownAsText,
  status,
  time,
  value,
} from './parts';
import { setting, term } from './terms';

/** The order page: one order's whole story, in a support agent's words. */

export interface OrderPageOptions {
  /** The person may see the buyer's personal data in what was received. */
  personalData: boolean;
  canAct: boolean;
  /** Null: checks with the payment service are off (PAYMENT_API_URL unset). */
  checks: CheckSchedule | null;
  /** How long the shop has to confirm a payment waiting for it (CONSOLE_CONFIRM_WITHIN); null: not set. */
  confirmWithinMs: number | null;
}

const FINAL_ORDER = new Set(['COMPLETED', 'CANCELED']);

interface TimelineEntry {
  at: Date;
  order: number;
  what: Html;
}

const subject = (n: Pick<StoryNotification, 'kind' | 'subjectId'>): Html =>
  n.kind === 'order' ? html`Order` : html`Refund ${value(n.subjectId)}`;

function timelineOf(story: OrderStory, ctx: PageContext): TimelineEntry[] {
  const statusOf = new Map(story.notifications.map((n) => [n.id, n]));
  return [
    ...story.deliveries.map((d) => {
      const n = d.notificationId === null ? undefined : statusOf.get(d.notificationId);
      const what = n
        ? html`${n.kind === 'refund' ? html`refund ${value(n.subjectId)} ` : ''}${status(n.kind, n.status)}`
        : html`a notification`;
      return {
        at: d.receivedAt,
        order: 1,
        what:
          d.observedVia === 'reconciliation'
            ? html`${term('check', 'Check with the payment service')}: it said ${what}; ${outcome(d.outcome)}`
            : d.observedVia === 'restoration'
              ? html`${term(RESTORED_WORD.id, 'Restored after a database failover')}: the
                ${term('delivery', 'notification')} of ${what} that had arrived from
                ${value(d.sourceAddress ?? 'an unknown address')} was recorded again from the journal;
                ${outcome(d.outcome)}`
              : html`${term('delivery', 'Notification')} of ${what} arrived from
                  ${value(d.sourceAddress ?? 'an unknown address')} (${term('shop-account', 'shop account')}
                  ${value(d.posId)}, ${term('signing-key', 'signing key')} <code>${d.keyFingerprint}</code>);
                  ${outcome(d.outcome)}`,
      };
    }),
    ...story.notifications.map((n) => ({
      at: n.receivedAt,
      order: 0,
      what: html`${subject(n)} status ${status(n.kind, n.status)}:
      ${term(TRANSITION_WORDS[n.outcome].id, TRANSITION_WORDS[n.outcome].label)}${provenanceMark(n.observedVia)}${
        n.disagreements.length > 0
          ? html` <span class="badge bad"
              >${term('disagreement', plural(n.disagreements.length, 'disagreement'))}</span
            >`
          : ''
      }`,
    })),
    ...story.events.map((e) => ({
      at: e.createdAt,
      order: 2,
      what: html`${term('events', 'Event')} <code>${e.type}</code> #${e.sequence}
        ${
          e.publishedAt
            ? html`passed on to other services
              ${time(e.publishedAt, ctx)}${e.unroutedAt ? html` <span class="badge">${NO_LISTENER}</span>` : ''}`
            : html`<span class="badge bad">waiting for the broker</span>`
        }`,
    })),
    ...story.audit.map((a) => ({
      at: a.at,
      order: 3,
      what: html`${a.actor} (${a.role ?? 'unknown'}) ${auditActionWords(a.action)}: ${checkResultWords(a.result)}`,
    })),
  ].sort((a, b) => a.at.getTime() - b.at.getTime() || a.order - b.order);
}

/** What the customer paid, what went back, what is still going back, and what the shop keeps. */
function moneyBox(story: OrderStory, ctx: PageContext, contradicted: boolean): Html {
  const o = story.order;
  if (!o) return html``;
  if (contradicted)
    return html`<h2>Money</h2>
      <p class="notice bad" data-testid="money">
        Not known: the order was both paid and canceled, so the money (${money(ctx, o.totalAmount, o.currencyCode)}) may
        have been taken, or not. Held until it is reconciled.
      </p>`;
  const currency = o.currencyCode;
  const same = (r: StoryRefund) => r.currencyCode === currency && r.amount !== null;
  const finalized = story.refunds.filter((r) => r.status === 'FINALIZED' && same(r));
  const pending = story.refunds.filter((r) => r.status === 'PENDING' && same(r));
  const other = story.refunds.filter((r) => !same(r));
  const refunded = sumMinor(finalized.map((r) => r.amount ?? '0'));
  const inProgress = sumMinor(pending.map((r) => r.amount ?? '0'));
  const paid = o.status === 'COMPLETED';
  const net = paid && o.totalAmount !== null && refunded !== null ? subtractMinor(o.totalAmount, refunded) : null;
  return html`<h2>Money</h2>
    <dl class="facts" data-testid="money">
      <dt>Paid by the customer</dt>
      <dd>
        ${
          paid
            ? money(ctx, o.totalAmount, currency)
            : html`nothing yet: the order is ${status('order', o.status)} (the amount is
              ${money(ctx, o.totalAmount, currency)})`
        }
      </dd>
      <dt>${term('refund-FINALIZED', 'Refunded')}</dt>
      <dd data-testid="refunded">
        ${money(ctx, refunded, currency)} <span class="muted">in ${plural(finalized.length, 'refund')}</span>
      </dd>
      <dt>${term('refund-PENDING', 'Refunds in progress')}</dt>
      <dd>${money(ctx, inProgress, currency)} <span class="muted">in ${plural(pending.length, 'refund')}</span></dd>
      ${
        paid
          ? html`<dt>Net paid</dt>
              <dd data-testid="net-paid">
                <strong>${money(ctx, net, currency)}</strong> <span class="muted">paid, less what was refunded</span>
              </dd>`
          : ''
      }
    </dl>
    ${
      other.length > 0
        ? html`<p class="notice">
            ${plural(other.length, 'refund')} in another currency or without an amount
            ${other.length === 1 ? 'is' : 'are'} not in these totals: see the refunds below.
          </p>`
        : ''
    }`;
}

/** The checks with the payment service: automatic ones, ones people asked for, and what comes next. */
function checksBox(story: OrderStory, ctx: PageContext, options: OrderPageOptions): Html {
  const { checks } = options;
  const byHand = story.checksByHand;
  const r = story.reconciliation;
  const o = story.order;
  const changes = [o?.updatedAt, ...story.refunds.map((refund) => refund.updatedAt)].filter(
    (at): at is Date => at !== undefined,
  );
  const next = nextCheck(
    {
      open: (o !== null && !FINAL_ORDER.has(o.status)) || story.refunds.some((refund) => refund.status === 'PENDING'),
      lastChange: changes.length === 0 ? null : new Date(Math.max(...changes.map((d) => d.getTime()))),
      nextCheckAt: r?.nextCheckAt ?? null,
      givenUpAt: r?.givenUpAt ?? null,
    },
    ctx,
    checks,
  );
  return html`<h2>${term('check', 'Checks with the payment service')}</h2>
    <dl class="facts" data-testid="checks">
      <dt>Automatic checks</dt>
      <dd>
        ${
          r && r.attempts > 0
            ? html`${r.attempts} since its last news; the last ${time(r.lastCheckedAt, ctx)}:
              ${checkResultWords(r.lastResult ?? '')}`
            : 'none since its last news'
        }
      </dd>
      <dt>Checks asked for by people</dt>
      <dd data-testid="checks-by-hand">
        ${
          byHand.last
            ? html`${byHand.count}; the last ${time(byHand.last.at, ctx)} by ${byHand.last.actor}:
              ${checkResultWords(byHand.last.result)}`
            : 'none'
        }
      </dd>
      <dt>Next automatic check</dt>
      <dd data-testid="next-check">${next}</dd>
    </dl>`;
}

/** A time as words for a sentence: "at 28 Nov 2026, 11:00:00 CET (3 h ago)". */
const atWords = (at: Date, ctx: PageContext): string => `at ${ctx.clock.format(at)} (${relative(at, ctx.now)})`;

/** What is uncertain, first on the page: each contradiction, what the money may have done, and what to do. */
function uncertainBox(contradictions: readonly Contradiction[], options: OrderPageOptions): Html {
  if (contradictions.length === 0) return html``;
  return html`<section class="notice bad" data-testid="uncertain" role="alert">
    <h2>Not settled: the payment service said two final things</h2>
    ${contradictions.map(
      (c) =>
        html`<p>
          <strong>${c.kind === 'order' ? 'The order' : html`Refund ${value(c.subjectId)}`}</strong> was
          ${status(c.kind, c.first.status)} and then ${status(c.kind, c.second.status)}
          (${term('contradiction', 'a contradiction')}). ${c.money}
        </p>`,
    )}
    <p>
      <strong>Hold it</strong>: book nothing and reverse nothing, ship nothing and promise the customer nothing, until
      it is reconciled with the payment service:
      ${options.canAct ? html`the Check button below` : html`an operator’s Check on this page`}, or
      <code>POST /orders/{id}/reconcile</code> on the admin port. If the payment service still says both, ask its
      support which is true.
    </p>
  </section>`;
}

/** A payment waiting for the shop: by when to confirm or cancel it, and what happens either way. */
function confirmationBox(story: OrderStory, ctx: PageContext, options: OrderPageOptions): Html {
  const o = story.order;
  if (o === null || o.status !== 'WAITING_FOR_CONFIRMATION') return html``;
  const since =
    story.notifications.find((n) => n.kind === 'order' && n.status === 'WAITING_FOR_CONFIRMATION')?.receivedAt ??
    o.updatedAt;
  const deadline = options.confirmWithinMs === null ? null : new Date(since.getTime() + options.confirmWithinMs);
  return html`<section class="notice" data-testid="confirm-by">
    <h2>${term('order-WAITING_FOR_CONFIRMATION', 'Waiting for the shop’s confirmation')}</h2>
    <p>
      ${
        deadline
          ? html`Confirm or cancel it by <strong>${time(deadline, ctx)}</strong>: it has waited since
              ${time(since, ctx)}, and the shop has ${setting('CONSOLE_CONFIRM_WITHIN')} to answer.`
          : html`It has waited since ${time(since, ctx)}. Its deadline is set per pay method in the payment service’s
            panel; ${setting('CONSOLE_CONFIRM_WITHIN')} is not set, so it is not shown here.`
      }
    </p>
    <ul>
      <li>
        <strong>To take the money</strong> (the goods can go): confirm (capture) it in the payment service’s panel. The
        order becomes ${status('order', 'COMPLETED')}.
      </li>
      <li>
        <strong>Not to take it</strong>: cancel it in the panel; the reserved money goes back to the customer and the
        order becomes ${status('order', 'CANCELED')}.
      </li>
      <li>
        <strong>If nobody answers in time</strong>, the payment service cancels it by itself: the customer gets the
        reserved money back and the shop does not get it.
      </li>
    </ul>
  </section>`;
}

/** The instant a time the payment service gave names (in its zone when it has no offset), or null. */
function saidInstant(said: string | null, ctx: PageContext): Date | null {
  const at = paymentServiceInstant(said, ctx.paymentServiceTimeZone);
  return at === null ? null : new Date(at);
}

/** A time the payment service gave (its words) beside when the service heard of it. */
function movedAndHeard(said: string | null, heard: Date | null, saidLabel: string, ctx: PageContext): Html {
  const at = saidInstant(said, ctx);
  return html`<dt>${saidLabel}</dt>
    <dd data-testid="said-at">
      ${
        said === null
          ? html`<span class="muted">not said</span>`
          : at === null
            ? html`${value(said)} <span class="muted">(as received: not a time the console can read)</span>`
            : html`${time(at, ctx)}
                <span class="muted"
                  >(sent as <bdi>${said}</bdi>${
                    /(?:Z|[+-]\d{2}:\d{2})$/.test(said) ? '' : html`, read in ${ctx.paymentServiceTimeZone}`
                  })</span
                >`
      }
    </dd>
    <dt>Heard by us</dt>
    <dd>${time(heard, ctx)}</dd>`;
}

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
/** An event the broker took but no queue was bound for (docs/decisions/0014). */
const NO_LISTENER = 'no queue took it: no service listened for this kind of event';

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
