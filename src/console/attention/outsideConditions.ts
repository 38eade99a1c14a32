import type { Failover } from '../../failover/failoverQueries';
import type { Reachability } from '../../reconciliation/reachabilityQueries';
import { href, html, type Html } from '../frame/html';
import type { PageContext } from '../frame/layout';
import { plural, time, value } from '../frame/parts';
import { setting, term } from '../frame/terms';
import type { LearntStatuses } from './attentionQueries';
import { counted, earliest, type Condition } from './boardCondition';
import type { UnroutedType } from './unroutedTypeQueries';

/** The board's conditions of what lies outside the service: the payment service, a failover, queues, learnt statuses. */

/** Why a POS's checks cannot reach the payment service, from the record's short code. */
export function unreachableWords(detail: string): Html {
  if (detail === 'timeout') return html`it does not answer in time (${setting('PAYMENT_API_TIMEOUT')})`;
  if (detail === 'network') return html`there is no connection to it`;
  if (detail.startsWith('http_')) return html`it answers with an error (HTTP ${detail.slice(5)})`;
  return html`it does not answer`;
}

export function apiLine(r: Reachability, ctx: PageContext): Condition {
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
export function failoverLine(f: Failover | null, ctx: PageContext): Condition {
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
export function learntCondition(learnt: readonly LearntStatuses[], ctx: PageContext, checksOn: boolean): Condition {
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
