import { paymentServiceInstant } from '../../domain/paymentServiceTime';
import type { OrderStory, StoryNotification, StoryRefund } from '../../orderStory/orderStoryQueries';
import { type Contradiction } from '../../orderStory/uncertainty';
import { html, type Html } from '../frame/html';
import { type PageContext } from '../frame/layout';
import { money, outcome, plural, provenanceMark, relative, status, time, value } from '../frame/parts';
import { setting, term } from '../frame/terms';
import { subtractMinor, sumMinor } from '../language/money';
import { auditActionWords, checkResultWords, RESTORED_WORD, TRANSITION_WORDS } from '../language/words';
import { nextCheck, type CheckSchedule } from './checksView';

/** The order page's parts above its tables: the timeline, and the boxes of money, checks, doubts and confirmation. */

export interface OrderPageOptions {
  /** The person may see the buyer's personal data in what was received. */
  personalData: boolean;
  canAct: boolean;
  /** Null: checks with the payment service are off (PAYMENT_API_URL unset). */
  checks: CheckSchedule | null;
  /** How long the shop has to confirm a payment waiting for it (CONSOLE_CONFIRM_WITHIN); null: not set. */
  confirmWithinMs: number | null;
}

/** An event the broker took but no queue was bound for (docs/decisions/0014). */
export const NO_LISTENER = 'no queue took it: no service listened for this kind of event';

const FINAL_ORDER = new Set(['COMPLETED', 'CANCELED']);

interface TimelineEntry {
  at: Date;
  order: number;
  what: Html;
}

export const subject = (n: Pick<StoryNotification, 'kind' | 'subjectId'>): Html =>
  n.kind === 'order' ? html`Order` : html`Refund ${value(n.subjectId)}`;

export function timelineOf(story: OrderStory, ctx: PageContext): TimelineEntry[] {
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
export function moneyBox(story: OrderStory, ctx: PageContext, contradicted: boolean): Html {
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
export function checksBox(story: OrderStory, ctx: PageContext, options: OrderPageOptions): Html {
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
export const atWords = (at: Date, ctx: PageContext): string => `at ${ctx.clock.format(at)} (${relative(at, ctx.now)})`;

/** What is uncertain, first on the page: each contradiction, what the money may have done, and what to do. */
export function uncertainBox(contradictions: readonly Contradiction[], options: OrderPageOptions): Html {
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
export function confirmationBox(story: OrderStory, ctx: PageContext, options: OrderPageOptions): Html {
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
export function saidInstant(said: string | null, ctx: PageContext): Date | null {
  const at = paymentServiceInstant(said, ctx.paymentServiceTimeZone);
  return at === null ? null : new Date(at);
}

/** A time the payment service gave (its words) beside when the service heard of it. */
export function movedAndHeard(said: string | null, heard: Date | null, saidLabel: string, ctx: PageContext): Html {
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
