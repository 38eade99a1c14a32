import type { Failover } from '../../failover/failoverQueries';
import { href, html, type Html } from '../html';
import type { Attention, Bounded, LearntStatuses } from '../queries/attention';
import type { UnroutedType } from '../queries/unroutedTypes';
import type { QuarantineRow } from '../../recording/quarantineQueries';
import type { Reachability } from '../../reconciliation/reachabilityQueries';
import { checkResultWords, quarantineReasonWords } from '../words';
import type { Link } from './actions';
import { layout, type PageContext } from './layout';
import { duration, factValue, money, orderLink, plural, status, time, value } from './parts';
import { setting, term } from './terms';

/**
 * Needs attention, as a status board: one line per condition, worst first, each with its severity, since when,
 * what it means for the shop, what to do, and a link to the list behind it (below on the page, or another page).
 */

export type Severity = 'critical' | 'warning' | 'info' | 'ok';

export interface Condition {
  /** The anchor of its line, and of its list. */
  id: string;
  severity: Severity;
  title: Html;
  /** What is true now, in a sentence. */
  now: Html;
  since: Date | null;
  meaning: Html;
  todo: Html;
  link: Link | null;
}

export interface BoardOptions {
  quietAfterMs: number;
  /** CONSOLE_CONFIRM_WITHIN; null: not known. */
  confirmWithinMs: number | null;
  /** Checks with the payment service are on (PAYMENT_API_URL set). */
  checksOn: boolean;
}

const SEVERITY_ORDER: Record<Severity, number> = { critical: 0, warning: 1, info: 2, ok: 3 };
const SEVERITY_WORDS: Record<Severity, string> = {
  critical: 'Act now',
  warning: 'Look today',
  info: 'Good to know',
  ok: 'All well',
};

/** Events waiting this long are late; twice as long, a problem of their own. */
const EVENTS_LATE_MS = 60_000;
const EVENTS_STUCK_MS = 15 * 60_000;

const counted = (b: Bounded, one: string, many?: string): string =>
  b.more ? `more than ${b.count} ${many ?? `${one}s`}` : plural(b.count, one, many);

const earliest = (dates: ReadonlyArray<Date | null>): Date | null =>
  dates.reduce<Date | null>((a, b) => (b === null ? a : a === null || b < a ? b : a), null);

/** Why a POS's checks cannot reach the payment service, from the record's short code. */
function unreachableWords(detail: string): Html {
  if (detail === 'timeout') return html`it does not answer in time (${setting('PAYMENT_API_TIMEOUT')})`;
  if (detail === 'network') return html`there is no connection to it`;
  if (detail.startsWith('http_')) return html`it answers with an error (HTTP ${detail.slice(5)})`;
  return html`it does not answer`;
}

function apiLine(r: Reachability, ctx: PageContext): Condition {
  const refused = r.state === 'refused';
  const what = unreachableWords(r.detail);
  return {
    id: `payment-api-${r.posId}`,
    severity: 'critical',
    title: refused
      ? html`The payment service refuses the credentials of shop account ${value(r.posId)}`
      : html`The payment service cannot be reached for shop account ${value(r.posId)}`,
    now: refused
      ? html`Every ${term('check', 'check')} for this shop account fails: the payment service says its credentials
        (${setting('PAYMENT_API_CREDENTIALS')}) are wrong. Last seen so ${time(r.confirmedAt, ctx)}.`
      : html`Every ${term('check', 'check')} for this shop account fails: ${what}. Last seen so
        ${time(r.confirmedAt, ctx)}.`,
    since: r.since,
    meaning: html`Notifications still arrive and are recorded. But a payment whose notification went missing is not
    learnt, so its order may wrongly show as unpaid, and a person’s “check now” fails too.`,
    todo: refused
      ? html`Tell the engineers on duty: the shop account’s credentials must be renewed in the payment service’s panel
        and set up here again.`
      : html`Tell the engineers on duty, and look at the payment service’s status page. Nothing is lost: checks start
        again by themselves once it answers.`,
    link: { href: href(['attention']).at('payment-api'), label: 'Each shop account' },
  };
}

/** A failover noticed this long ago, its recovery done, is no longer on the board's mind. */
const FAILOVER_SHOWN_MS = 7 * 86_400_000;

/** The database's latest failover and what its recovery did or left (docs/OPERATIONS.md, "Failover"). */
function failoverLine(f: Failover | null, ctx: PageContext): Condition {
  const line = { id: 'failover', link: null } as const;
  if (f === null || (f.state === 'done' && ctx.now.getTime() - f.noticedAt.getTime() > FAILOVER_SHOWN_MS))
    return {
      ...line,
      severity: 'ok',
      title: html`The database has not failed over`,
      now: html`No switch to a standby copy of the database was noticed in the last 7 days.`,
      since: null,
      meaning: html`Every status the service answered for is in the database.`,
      todo: html`Nothing.`,
    };
  const when = html`at ${time(f.noticedAt, ctx)} (it held what arrived until ${time(f.lastPoint, ctx)})`;
  if (f.state !== 'done')
    return {
      ...line,
      severity: 'critical',
      title:
        f.state === 'restoring'
          ? html`The database failed over: what it lost is being restored`
          : html`The database failed over: orders of the minutes before are being checked`,
      now: html`It switched to a standby copy ${when}.
      ${
        f.state === 'restoring'
          ? html`The service is recording again, from its journal, the notifications the copy missed; new notifications
            are asked to wait a few seconds.`
          : html`${plural(f.restored, 'status', 'statuses')} came back from the service’s journal; the orders of the
            ${setting('FAILOVER_RECONCILE_WINDOW')} before are being ${term('check', 'checked')} with the payment
            service.`
      }`,
      since: f.noticedAt,
      meaning: html`For a few minutes some orders may show an older status than the true one. Nothing is lost: they are
      put right by themselves.`,
      todo: html`Tell the engineers on duty; wait before telling a customer their payment is missing.`,
    };
  const left = (f.uncovered ?? 0) > 0 || f.setAside > 0 || f.journalProblem !== null;
  return {
    ...line,
    severity: f.journalProblem !== null ? 'critical' : left ? 'warning' : 'info',
    title: left
      ? html`The database failed over, and some statuses may be missing`
      : html`The database failed over, and everything was restored`,
    now: html`It switched to a standby copy ${when}. ${plural(f.restored, 'status', 'statuses')} came back from the
    service’s
    journal${
      f.journalProblem !== null ? html` (but the journal could not be read: <strong>${f.journalProblem}</strong>)` : ''
    };
    ${plural(f.windowOrders ?? 0, 'order')} of the minutes before were checked with the payment
    service${
      (f.uncovered ?? 0) > 0 ? html`, <strong>${plural(f.uncovered ?? 0, 'order')} could not be</strong>` : ''
    }${f.setAside > 0 ? html`; ${plural(f.setAside, 'entry', 'entries')} of the journal failed its check and were left out` : ''}.`,
    since: f.noticedAt,
    meaning: left
      ? html`An order paid or refunded in the minutes before ${time(f.lastPoint, ctx)} may show an older status here
        than in the payment service’s panel.`
      : html`Every status the service had answered for is back in the database.`,
    todo: left
      ? html`Tell the engineers on duty (the service’s log says which orders); for a customer’s question about that
        time, look the order up in the payment service’s panel.`
      : html`Nothing.`,
  };
}

const typeList = (types: readonly UnroutedType[]): Html =>
  html`${types.map((t, i) => html`${i > 0 ? ', ' : ''}<code>${t.type}</code>`)}`;

/** What reached no queue, by type: counted whether declared expected or not, raised only when not. */
export function unroutedCondition(types: readonly UnroutedType[], ctx: PageContext): Condition {
  const unexpected = types.filter((t) => !t.expected);
  const expected = types.filter((t) => t.expected);
  const declared = expected.length === 0 ? html`` : html` ${expectedSentence(expected)}`;
  const line = { id: 'events-unrouted' } as const;
  if (unexpected.length === 0)
    return {
      ...line,
      severity: 'ok',
      title: html`Every event a service is meant to take was taken`,
      now:
        expected.length === 0
          ? html`Every ${term('events', 'event')} sent was taken by at least one service’s queue.`
          : html`Every ${term('events', 'event')} of the other types was taken by at least one service’s
            queue.${declared}`,
      since: null,
      meaning:
        expected.length === 0
          ? html`The shop’s other services receive every kind of event sent.`
          : html`That is normal: a service binds only the kinds of events it needs (docs/EVENTS.md, “What to bind and
            what to act on”), and no service is meant to take these.`,
      todo: html`Nothing.`,
      link: null,
    };
  const latest = unexpected.reduce((a, b) => (b.latest > a.latest ? b : a));
  return {
    ...line,
    severity: 'warning',
    title: html`Events no service listened for`,
    now: html`${unexpected.map(
      (t, i) =>
        html`${i > 0 ? '; ' : ''}<code>${t.type}</code>: ${unroutedCount(t)} about ${plural(t.orders, 'order')} reached
        no queue, the first ${time(t.since, ctx)}, the latest ${time(t.latest, ctx)}`,
    )}.${declared}`,
    since: earliest(unexpected.map((t) => t.since)),
    meaning: html`Nothing waits for them, and later events of the same orders went out. But a service that should have
    heard of these payments (shipping, accounting) may not know about them. They are kept for
    ${setting('OUTBOX_RETENTION')} and can be sent again to a service’s own queue.`,
    todo: html`If a service should receive ${typeList(unexpected)}, tell the engineers on duty: its queue is not bound
    to them. Once it is, they can replay what it missed (docs/EVENTS.md, “The feed and replays”). If no service is meant
    to, declare ${unexpected.length === 1 ? 'it' : 'them'} in ${setting('EXPECTED_UNROUTED_EVENT_TYPES')}.`,
    link: { href: href(['orders', latest.latestOrderId]), label: 'The latest order' },
  };
}

const unroutedCount = (t: UnroutedType): string =>
  t.events > t.countBound ? `more than ${t.countBound} events` : plural(t.events, 'event');

/** "N events of expected types reached no queue, as declared": counted, never hidden. */
export function expectedSentence(expected: readonly UnroutedType[]): Html {
  const n = expected.reduce((sum, t) => sum + Math.min(t.events, t.countBound), 0);
  const more = expected.some((t) => t.events > t.countBound);
  return html`${more ? 'More than ' : ''}${plural(n, 'event')} of expected types (${typeList(expected)}) reached no
  queue, as declared in ${setting('EXPECTED_UNROUTED_EVENT_TYPES')}.`;
}

/** Statuses learnt by asking the payment service in the last 24 h: notifications that never came, by POS. */
function learntCondition(learnt: readonly LearntStatuses[], ctx: PageContext, checksOn: boolean): Condition {
  const line = { id: 'learnt' } as const;
  if (learnt.length === 0)
    return {
      ...line,
      severity: 'ok',
      title: html`Every status of the last 24 hours came by notification`,
      now: checksOn
        ? html`No status had to be learnt by asking the payment service.`
        : html`None was learnt by asking the payment service (checks are off, so a missing one would not be found).`,
      since: null,
      meaning: html`The payment service’s notifications reach the service.`,
      todo: html`Nothing.`,
      link: null,
    };
  return {
    ...line,
    severity: 'warning',
    title: html`Notifications that never came`,
    now: html`In the last 24 hours
    ${learnt.map(
      (l, i) =>
        html`${i > 0 ? '; ' : ''}${counted(l.statuses, 'status', 'statuses')} of ${plural(l.orders, 'order')} of shop
        account ${value(l.posId)}`,
    )}
    had to be learnt by ${term('check', 'asking the payment service')}: their notifications never came.`,
    since: earliest(learnt.map((l) => l.first)),
    meaning: html`Those orders show the right status now, but later than they could have, and the next missing
    notification is learnt only at the next check.`,
    todo: html`Tell the engineers on duty. The likely causes, most likely first: the notifyUrl is not set, or wrong, in
    the payment service’s configuration of that shop account; the payment service does not deliver (its status page);
    the service refuses the sender’s address (${setting('ALLOWED_SOURCE_IPS')}). See docs/OPERATIONS.md,
    “Reconciliation”.`,
    link: { href: href(['attention']).at('learnt'), label: 'Each shop account' },
  };
}

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

function board(lines: readonly Condition[], ctx: PageContext): Html {
  return html`<table class="board" data-testid="board">
    <caption>
      Each condition the service watches, the worst first.
    </caption>
    <thead>
      <tr>
        <th scope="col">State</th>
        <th scope="col">What</th>
        <th scope="col">Since</th>
        <th scope="col">For the shop</th>
        <th scope="col">What to do</th>
      </tr>
    </thead>
    <tbody>
      ${lines.map(
        (c) =>
          html`<tr id="line-${c.id}" class="line ${c.severity}" data-severity="${c.severity}">
            <td><span class="severity ${c.severity}">${SEVERITY_WORDS[c.severity]}</span></td>
            <td>
              <strong>${c.title}</strong><br />${c.now}
              ${c.link ? html`<br /><a href="${c.link.href}">${c.link.label}</a>` : ''}
            </td>
            <td>${c.since ? time(c.since, ctx) : html`<span class="muted">—</span>`}</td>
            <td>${c.meaning}</td>
            <td>${c.todo}</td>
          </tr>`,
      )}
    </tbody>
  </table>`;
}

function quarantineTable(rows: readonly QuarantineRow[], ctx: PageContext, canAct: boolean): Html {
  return html`<table>
    <thead>
      <tr>
        <th scope="col">#</th>
        <th scope="col">Received</th>
        <th scope="col">Why</th>
        <th scope="col">Shop account</th>
        ${canAct ? html`<th scope="col">Act</th>` : ''}
      </tr>
    </thead>
    <tbody>
      ${rows.map(
        (q) =>
          html`<tr>
            <td><a href="${href(['quarantine', q.id])}">#${q.id}</a></td>
            <td>${time(q.receivedAt, ctx)}</td>
            <td>${quarantineReasonWords(q.reason)}: ${value(q.detail)}</td>
            <td>${value(q.posId)}</td>
            ${canAct ? html`<td><a href="${href(['quarantine', q.id, 'retry'])}">Retry…</a></td>` : ''}
          </tr>`,
      )}
    </tbody>
  </table>`;
}

const none = html`<p>None.</p>`;

export function attentionPage(ctx: PageContext, a: Attention, options: BoardOptions & { canAct: boolean }): Html {
  const lines = conditions(a, ctx, options);
  const worst = lines[0]?.severity ?? 'ok';
  const act = lines.filter((l) => l.severity === 'critical' || l.severity === 'warning').length;
  return layout(
    'Needs attention',
    ctx,
    html`<h1>Needs attention</h1>
      <p class="summary ${worst}" data-testid="summary">
        ${act === 0 ? 'Nothing needs attention now.' : `${plural(act, 'condition')} need${act === 1 ? 's' : ''} attention.`}
        Checked ${time(ctx.now, ctx)}; reload the page to check again.
      </p>
      <div data-testid="attention">
        ${board(lines, ctx)}
        <h2 id="payment-api">The payment service, per shop account</h2>
        ${
          a.reachability.length === 0
            ? html`<p>No check has asked it anything yet.</p>`
            : html`<table>
                <thead>
                  <tr>
                    <th scope="col">Shop account</th>
                    <th scope="col">Its checks</th>
                    <th scope="col">Since</th>
                    <th scope="col">Last seen so</th>
                  </tr>
                </thead>
                <tbody>
                  ${a.reachability.map(
                    (r) =>
                      html`<tr>
                        <td>${value(r.posId)}</td>
                        <td>
                          ${
                            r.state === 'answering'
                              ? 'answered'
                              : r.state === 'refused'
                                ? html`<span class="badge bad">credentials refused</span>`
                                : html`<span class="badge bad">cannot reach it</span>: ${unreachableWords(r.detail)}`
                          }
                        </td>
                        <td>${time(r.since, ctx)}</td>
                        <td>${time(r.confirmedAt, ctx)}</td>
                      </tr>`,
                  )}
                </tbody>
              </table>`
        }
        <h2 id="learnt">Statuses learnt by asking the payment service, last 24 hours</h2>
        ${
          a.learnt.length === 0
            ? none
            : html`<table data-testid="learnt">
                <thead>
                  <tr>
                    <th scope="col">Shop account</th>
                    <th scope="col">Statuses</th>
                    <th scope="col">Orders</th>
                    <th scope="col">The first</th>
                    <th scope="col">The latest</th>
                  </tr>
                </thead>
                <tbody>
                  ${a.learnt.map(
                    (l) =>
                      html`<tr>
                        <td>${value(l.posId)}</td>
                        <td>${counted(l.statuses, 'status', 'statuses')}</td>
                        <td>${l.orders}</td>
                        <td>${time(l.first, ctx)}</td>
                        <td>${time(l.latest, ctx)}: ${orderLink(l.latestOrderId)}</td>
                      </tr>`,
                  )}
                </tbody>
              </table>`
        }
        <h2 id="events-waiting">Orders whose events wait for the broker</h2>
        ${
          a.waitingOrders.length === 0
            ? none
            : html`<table>
                <thead>
                  <tr>
                    <th scope="col">Order</th>
                    <th scope="col">Events waiting</th>
                    <th scope="col">Since</th>
                    <th scope="col">The broker’s last answer</th>
                  </tr>
                </thead>
                <tbody>
                  ${a.waitingOrders.map(
                    (w) =>
                      html`<tr>
                        <td>${orderLink(w.orderId)}</td>
                        <td>${w.events}</td>
                        <td>${time(w.oldest, ctx)}</td>
                        <td>${w.lastError ?? html`<span class="muted">none yet</span>`}</td>
                      </tr>`,
                  )}
                </tbody>
              </table>`
        }
        <h2 id="set-aside">Notifications set aside, not retried yet</h2>
        ${
          a.quarantined.length === 0
            ? none
            : html`${quarantineTable(a.quarantined, ctx, options.canAct)}${
                options.canAct ? html`<p><a href="/console/quarantine/retry">Retry all of them…</a></p>` : ''
              }`
        }
        <h2 id="contradictions">Contradictions and disagreements, last 7 days</h2>
        ${
          a.troubled.length === 0
            ? none
            : html`<table>
                <thead>
                  <tr>
                    <th scope="col">Order</th>
                    <th scope="col">Notification</th>
                    <th scope="col">What it did</th>
                    <th scope="col">Stated otherwise</th>
                    <th scope="col">Received</th>
                  </tr>
                </thead>
                <tbody>
                  ${a.troubled.map(
                    (t) =>
                      html`<tr>
                        <td>${orderLink(t.orderId)}</td>
                        <td>
                          ${t.kind === 'refund' ? html`refund ${value(t.subjectId)} ` : ''}${status(t.kind, t.status)}
                        </td>
                        <td>${t.outcome === 'conflict' ? 'contradicts a final status' : 'recorded'}</td>
                        <td>
                          ${t.disagreements.map(
                            (d) =>
                              html`<code>${d.field}</code>: kept ${factValue(d.field, d.kept, t.currencyCode, ctx)},
                                received ${factValue(d.field, d.received, t.currencyCode, ctx)}<br />`,
                          )}
                        </td>
                        <td>${time(t.receivedAt, ctx)}</td>
                      </tr>`,
                  )}
                </tbody>
              </table>`
        }
        <h2 id="given-up">Orders whose checks were given up</h2>
        ${
          a.givenUp.length === 0
            ? none
            : html`<table>
                <thead>
                  <tr>
                    <th scope="col">Order</th>
                    <th scope="col">Given up</th>
                    <th scope="col">Checks</th>
                    <th scope="col">The last one</th>
                  </tr>
                </thead>
                <tbody>
                  ${a.givenUp.map(
                    (g) =>
                      html`<tr>
                        <td>${orderLink(g.orderId)}</td>
                        <td>${time(g.givenUpAt, ctx)}</td>
                        <td>${g.attempts}</td>
                        <td>${checkResultWords(g.lastResult ?? '')}</td>
                      </tr>`,
                  )}
                </tbody>
              </table>`
        }
        <h2 id="confirmation">Payments waiting for the shop’s confirmation</h2>
        ${
          a.confirmations.length === 0
            ? none
            : html`<table>
                <thead>
                  <tr>
                    <th scope="col">Order</th>
                    <th scope="col">Shop reference <span class="field">(extOrderId)</span></th>
                    <th scope="col">Amount</th>
                    <th scope="col">Waiting since</th>
                    <th scope="col">Deadline</th>
                  </tr>
                </thead>
                <tbody>
                  ${a.confirmations.map(
                    (c) =>
                      html`<tr>
                        <td>${orderLink(c.orderId)}</td>
                        <td>${value(c.extOrderId)}</td>
                        <td>${money(ctx, c.totalAmount, c.currencyCode)}</td>
                        <td>${time(c.since, ctx)}</td>
                        <td>
                          ${
                            options.confirmWithinMs === null
                              ? html`<span class="muted">set in the payment service’s panel</span>`
                              : time(new Date(c.since.getTime() + options.confirmWithinMs), ctx)
                          }
                        </td>
                      </tr>`,
                  )}
                </tbody>
              </table>`
        }
      </div>`,
  );
}
