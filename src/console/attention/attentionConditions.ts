import { href, html } from '../frame/html';
import type { PageContext } from '../frame/layout';
import { duration, plural, time } from '../frame/parts';
import { setting, term } from '../frame/terms';
import type { Attention } from './attentionQueries';
import { counted, earliest, SEVERITY_ORDER, type BoardOptions, type Condition } from './boardCondition';
import { apiLine, failoverLine, learntCondition, unroutedCondition } from './outsideConditions';

/** Events waiting this long are late; twice as long, a problem of their own. */
const EVENTS_LATE_MS = 60_000;
const EVENTS_STUCK_MS = 15 * 60_000;

/** Every condition of the board, worst first. */
export function conditions(a: Attention, ctx: PageContext, options: BoardOptions): Condition[] {
  const { now } = ctx;
  const lines: Condition[] = [failoverLine(a.failover, ctx)];

  // The payment service, per shop account.
  const failing = a.reachability.filter((r) => r.state !== 'answering');
  if (!options.checksOn)
    lines.push({
      id: 'payment-api',
      severity: 'info',
      title: html`Checks with the payment service are off`,
      now: html`${setting('PAYMENT_API_URL')} is not set: the service never asks the payment service about an order.`,
      since: null,
      meaning: html`A payment whose notification never arrives stays unpaid here until the payment service sends it
      again (it tries for 72 hours).`,
      todo: html`Nothing, unless the engineers meant to turn checks on.`,
      link: null,
    });
  else if (failing.length === 0)
    lines.push({
      id: 'payment-api',
      severity: 'ok',
      title: html`The payment service answers checks`,
      now:
        a.reachability.length === 0
          ? html`No check has been needed yet.`
          : html`It answered the latest check of each of ${plural(a.reachability.length, 'shop account')}.`,
      since: earliest(a.reachability.map((r) => r.since)),
      meaning: html`Payments whose notification goes missing are learnt by asking it.`,
      todo: html`Nothing.`,
      link:
        a.reachability.length === 0
          ? null
          : { href: href(['attention']).at('payment-api'), label: 'Each shop account' },
    });
  else lines.push(...failing.map((r) => apiLine(r, ctx)));

  // Events for other services.
  const p = a.pending;
  const oldestAge = p.oldest === null ? 0 : now.getTime() - p.oldest.getTime();
  const reasons = p.reasons.filter((r) => r.reason !== null);
  const noQueue = reasons.some((r) => /no queue bound/.test(r.reason ?? ''));
  const eventsCount = p.count > p.countBound ? `more than ${p.countBound} events` : plural(p.count, 'event');
  lines.push({
    id: 'events-waiting',
    severity:
      p.count === 0 ? 'ok' : oldestAge >= EVENTS_STUCK_MS ? 'critical' : oldestAge >= EVENTS_LATE_MS ? 'warning' : 'ok',
    title: p.count === 0 ? html`Events reach the broker` : html`Events waiting for the broker`,
    now:
      p.count === 0
        ? html`No ${term('events', 'event')} is waiting.`
        : html`${eventsCount} about ${plural(p.orders, 'order')} ${p.count === 1 ? 'is' : 'are'} waiting, the oldest
          since ${time(p.oldest, ctx)}.
          ${
            reasons.length > 0
              ? html`The broker’s last answer:
                ${reasons.map(
                  (r, i) => html`${i > 0 ? '; ' : ''}<strong>${r.reason}</strong> (${plural(r.events, 'event')})`,
                )}${
                  reasons.reduce((n, r) => n + r.events, 0) < Math.min(p.count, p.countBound)
                    ? '; the others wait their turn behind them (an order’s events go out in order)'
                    : ''
                }.`
              : 'The broker has not answered yet.'
          }`,
    since: p.oldest,
    meaning:
      p.count === 0
        ? html`The shop’s other services (stock, shipping, accounting) learn of each payment as it is recorded.`
        : html`The shop’s other services (stock, shipping, accounting) do not know yet about these
          ${plural(p.orders, 'order')}: a paid order may not be shipped. Nothing is lost; each is sent as soon as the
          broker takes it.`,
    todo:
      p.count === 0
        ? html`Nothing.`
        : noQueue
          ? html`No service listens for these events (“no queue bound”): tell the engineers on duty that the other
            services’ queues are not bound to the exchange.`
          : html`Tell the engineers on duty that the message broker does not take events.`,
    link: p.count === 0 ? null : { href: href(['attention']).at('events-waiting'), label: 'The orders' },
  });

  // Events no service listened for: sent, held up nothing, but a service may be missing them.
  lines.push(unroutedCondition(a.unroutedTypes, ctx));

  // Notifications that never came: statuses learnt by asking the payment service.
  lines.push(learntCondition(a.learnt, ctx, options.checksOn));

  // Silence from the payment service.
  const quiet = a.lastDeliveryAt === null || now.getTime() - a.lastDeliveryAt.getTime() > options.quietAfterMs;
  lines.push({
    id: 'silence',
    severity: quiet || a.learnt.length > 0 ? 'warning' : 'ok',
    title: quiet
      ? html`No notification for a while`
      : a.learnt.length > 0
        ? html`Notifications arrive, but not all of them`
        : html`Notifications arrive`,
    now: quiet
      ? html`None has arrived ${a.lastDeliveryAt ? html`since ${time(a.lastDeliveryAt, ctx)}` : 'in the last 4 days'}:
        longer than ${duration(options.quietAfterMs)} (${setting('CONSOLE_QUIET_AFTER')}).`
      : html`The last arrived
        ${time(a.lastDeliveryAt, ctx)}.${
          a.learnt.length > 0 ? html` But some did not: see “Notifications that never came”.` : ''
        }`,
    since: a.lastDeliveryAt,
    meaning: quiet
      ? html`Either no one is paying (a quiet night), or notifications do not reach the service: then payments made now
        show as unpaid here.`
      : a.learnt.length > 0
        ? html`The payment service tells the shop about most payments; for some it had to be asked.`
        : html`The payment service is telling the shop about payments.`,
    todo: quiet
      ? html`If customers are paying now, tell the engineers on duty: notifications do not arrive.`
      : html`Nothing.`,
    link: { href: href(['deliveries']), label: 'Recent deliveries' },
  });

  // Notifications set aside.
  lines.push({
    id: 'set-aside',
    severity: a.quarantinedCount.count === 0 ? 'ok' : 'warning',
    title: html`Notifications ${term('set-aside', 'set aside')}`,
    now:
      a.quarantinedCount.count === 0
        ? html`None is waiting.`
        : html`${counted(a.quarantinedCount, 'notification')} could not be read and
          ${a.quarantinedCount.count === 1 && !a.quarantinedCount.more ? 'waits' : 'wait'} to be retried.`,
    since: a.quarantinedSince,
    meaning:
      a.quarantinedCount.count === 0
        ? html`Every notification that arrived could be read.`
        : html`The status each one brought is not recorded: its order may show an older status here.`,
    todo:
      a.quarantinedCount.count === 0
        ? html`Nothing.`
        : html`Tell the engineers; once they have fixed the cause, an operator retries them.`,
    link:
      a.quarantinedCount.count === 0 ? null : { href: href(['attention']).at('set-aside'), label: 'The notifications' },
  });

  // Conflicts and disagreements.
  lines.push({
    id: 'contradictions',
    severity: a.troubled.length === 0 ? 'ok' : 'warning',
    title: html`${term('contradiction', 'Contradictions')} and ${term('disagreement', 'disagreements')}, last 7 days`,
    now:
      a.troubled.length === 0
        ? html`None.`
        : a.troubled.length >= 50
          ? html`50 or more notifications contradict a final status or state a fact otherwise than the first.`
          : html`${plural(a.troubled.length, 'notification')} ${a.troubled.length === 1 ? 'contradicts' : 'contradict'}
            a final status or ${a.troubled.length === 1 ? 'states' : 'state'} a fact otherwise than the first.`,
    since: earliest(a.troubled.map((t) => t.receivedAt)),
    meaning:
      a.troubled.length === 0
        ? html`Every order’s story is consistent.`
        : html`The first status or fact is kept; for these orders it may not be the true one (Canceled after Paid, say).`,
    todo:
      a.troubled.length === 0
        ? html`Nothing.`
        : html`Look each order up in the payment service’s panel, and tell the engineers which is true.`,
    link: a.troubled.length === 0 ? null : { href: href(['attention']).at('contradictions'), label: 'The orders' },
  });

  // Checks given up.
  lines.push({
    id: 'given-up',
    severity: a.givenUpCount.count === 0 ? 'ok' : 'warning',
    title: html`Orders whose ${term('given-up', 'checks were given up')}`,
    now:
      a.givenUpCount.count === 0
        ? html`None.`
        : html`${counted(a.givenUpCount, 'order')} stayed unfinished after a week of checks
          (${setting('RECONCILE_GIVE_UP')}).`,
    since: earliest(a.givenUp.map((g) => g.givenUpAt)),
    meaning:
      a.givenUpCount.count === 0
        ? html`Every unfinished order is still being checked.`
        : html`Most are abandoned payments; one may be a payment the service never learnt of.`,
    todo:
      a.givenUpCount.count === 0
        ? html`Nothing.`
        : html`Look each one up in the payment service’s panel; an operator can check it again.`,
    link: a.givenUpCount.count === 0 ? null : { href: href(['attention']).at('given-up'), label: 'The orders' },
  });

  // Payments waiting for the shop's confirmation.
  const oldestWaiting = earliest(a.confirmations.map((c) => c.since));
  const deadline =
    oldestWaiting === null || options.confirmWithinMs === null
      ? null
      : new Date(oldestWaiting.getTime() + options.confirmWithinMs);
  lines.push({
    id: 'confirmation',
    severity:
      a.confirmationsCount.count === 0
        ? 'ok'
        : deadline !== null && deadline.getTime() - now.getTime() < 86_400_000
          ? 'critical'
          : 'warning',
    title: html`Payments ${term('order-WAITING_FOR_CONFIRMATION', 'waiting for the shop’s confirmation')}`,
    now:
      a.confirmationsCount.count === 0
        ? html`None.`
        : html`${counted(a.confirmationsCount, 'payment')} ${a.confirmationsCount.count === 1 ? 'waits' : 'wait'}, the
          oldest since ${time(oldestWaiting, ctx)}.
          ${
            deadline
              ? html`The first deadline: <strong>${time(deadline, ctx)}</strong>.`
              : html`Their deadline is set per pay method in the payment service’s panel
                (${setting('CONSOLE_CONFIRM_WITHIN')} is not set, so it is not shown here).`
          }`,
    since: oldestWaiting,
    meaning:
      a.confirmationsCount.count === 0
        ? html`Nothing waits for the shop.`
        : html`The customers’ money is reserved but not taken. If nobody confirms before the deadline, the payment
          service cancels the payment and the shop does not get the money.`,
    todo:
      a.confirmationsCount.count === 0
        ? html`Nothing.`
        : html`Confirm (capture) or cancel each one in the payment service’s panel before its deadline.`,
    link:
      a.confirmationsCount.count === 0 ? null : { href: href(['attention']).at('confirmation'), label: 'The payments' },
  });

  // The days of history.
  lines.push({
    id: 'history-days',
    severity: a.historyDaysAhead < 0 ? 'critical' : a.historyDaysAhead === 0 ? 'warning' : 'ok',
    title: a.historyDaysAhead < 1 ? html`A day of history is missing` : html`The days of history are ready`,
    now:
      a.historyDaysAhead < 0
        ? html`Today has no place in the database to record notifications in.`
        : a.historyDaysAhead === 0
          ? html`Tomorrow (UTC) has no place in the database yet.`
          : html`Today and tomorrow (UTC) have their place in the database.`,
    since: null,
    meaning:
      a.historyDaysAhead < 0
        ? html`Every notification is refused until it is made; the payment service sends them again later, so none is
          lost yet.`
        : a.historyDaysAhead === 0
          ? html`From midnight UTC every notification would be refused until it is made.`
          : html`Notifications can be recorded.`,
    todo:
      a.historyDaysAhead < 1
        ? html`The service makes the days by itself within a minute; if this stays, tell the engineers on duty.`
        : html`Nothing.`,
    link: null,
  });

  return lines.sort((x, y) => SEVERITY_ORDER[x.severity] - SEVERITY_ORDER[y.severity]);
}
