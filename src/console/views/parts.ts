import { href, html, type Html } from '../html';
import { formatMoney } from '../money';
import {
  DELIVERY_OUTCOME_WORDS,
  FIELD_WORDS,
  LEARNT_WORD,
  RESTORED_WORD,
  orderStatusWords,
  refundStatusWords,
  SETTING_WORDS,
  type FieldName,
} from '../words';
import type { ObservedVia } from '../../database/schema';
import type { DeliveryOutcome } from '../../domain/outcomes';
import type { ContradictedStatus } from '../../orderStory/uncertainty';
import type { PageContext } from './layout';
import { setting, term } from './terms';

/** What pages are made of: times, amounts, values from notifications, statuses, and links to the glossary. */

/**
 * A time in the shop's zone, the zone named, with a relative label ("3 h ago"); the machine-readable instant in
 * `datetime`, and in UTC in the title.
 */
export function time(at: Date | null, ctx: Pick<PageContext, 'now' | 'clock'>): Html {
  if (at === null) return html`<span class="muted">—</span>`;
  const iso = at.toISOString();
  return html`<time datetime="${iso}" title="${iso.replace('T', ' ').slice(0, 19)} UTC">${ctx.clock.format(at)}</time>
    <span class="muted">(${relative(at, ctx.now)})</span>`;
}

/**
 * How long ago or until `at`, in the two largest units that matter, never rounded down across one: "in 2 days 23 h",
 * not "in 2 days"; "1 h 59 min ago", not "1 h ago". Below a minute, seconds; below an hour, minutes.
 */
export function relative(at: Date, now: Date): string {
  const seconds = Math.round((now.getTime() - at.getTime()) / 1000);
  const future = seconds < 0;
  const s = Math.abs(seconds);
  const both = (big: number, bigUnit: string, small: number, smallUnit: string): string =>
    small === 0 ? `${big} ${bigUnit}` : `${big} ${bigUnit} ${small} ${smallUnit}`;
  const days = Math.floor(s / 86_400);
  const span =
    s < 60
      ? `${s} s`
      : s < 3600
        ? `${Math.floor(s / 60)} min`
        : s < 86_400
          ? both(Math.floor(s / 3600), 'h', Math.floor((s % 3600) / 60), 'min')
          : both(days, days === 1 ? 'day' : 'days', Math.floor((s % 86_400) / 3600), 'h');
  return future ? `in ${span}` : `${span} ago`;
}

/** A duration in words: "1 h", "30 min", "7 days". */
export function duration(ms: number): string {
  if (ms < 1000) return `${ms} ms`;
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.round(s / 60)} min`;
  if (s < 172_800) return `${Math.round(s / 3600)} h`;
  return `${Math.round(s / 86_400)} days`;
}

/** A value from a notification: isolated, so that right-to-left or format characters in it stay inside it. */
export const value = (text: string | null | undefined): Html =>
  text === null || text === undefined || text === '' ? html`<span class="muted">—</span>` : html`<bdi>${text}</bdi>`;

/** An amount in major units, written for the locale; one that cannot be shown exactly, as received and marked. */
export function money(ctx: Pick<PageContext, 'clock'>, minor: string | null, currency: string | null): Html {
  const shown = formatMoney(minor, currency, ctx.clock.locale);
  if (shown === null) return html`<span class="muted">—</span>`;
  return shown.exact
    ? html`<span class="money">${shown.text}</span>`
    : html`<span class="money as-received"><bdi>${shown.text}</bdi></span>
        <span class="muted">(as received: ${shown.why})</span>`;
}

/** A field in a support agent's words, the name the payment service uses beside it: "shop reference (extOrderId)". */
export const fieldName = (name: FieldName): Html =>
  html`${term(FIELD_WORDS[name].id, FIELD_WORDS[name].label)} <span class="field">(${FIELD_WORDS[name].field})</span>`;

/** A status in words, its code beside: "Paid (COMPLETED)", linked to what it means. */
export function status(kind: 'order' | 'refund', code: string): Html {
  const words = kind === 'order' ? orderStatusWords(code) : refundStatusWords(code);
  return html`${term(`${kind}-${code}`, html`<strong>${words.label}</strong>`)}
    <span class="field">(${value(code)})</span>`;
}

/**
 * The mark of an order or refund both paid and canceled (or refunded and canceled): never shown as settled, in a
 * list or a search result, without it.
 */
export function contradictedMark(
  kind: 'order' | 'refund',
  [first, second]: readonly [ContradictedStatus, ContradictedStatus],
  ctx: PageContext,
): Html {
  return html`<span class="badge bad" data-testid="contradicted"
    >${term('contradiction', 'contradicted')}: ${status(kind, first.status)} ${time(first.at, ctx)}, then
    ${status(kind, second.status)} ${time(second.at, ctx)}; held until reconciled</span
  >`;
}

/** What the service answered a delivery, in words. */
export const outcome = (o: DeliveryOutcome): Html =>
  term(DELIVERY_OUTCOME_WORDS[o].id, DELIVERY_OUTCOME_WORDS[o].label);

/** The mark of a status learnt by asking the payment service. */
export const learnt = (): Html =>
  html` <span class="badge recon">${term(LEARNT_WORD.id, 'learnt from the payment service')}</span>`;

/** The mark of a status learnt otherwise than from its notification as it arrived: by a check, or restored. */
export const provenanceMark = (via: ObservedVia): Html | '' =>
  via === 'reconciliation'
    ? learnt()
    : via === 'restoration'
      ? html` <span class="badge recon">${term(RESTORED_WORD.id, RESTORED_WORD.label)}</span>`
      : '';

export const orderLink = (orderId: string): Html => html`<a href="${href(['orders', orderId])}">${value(orderId)}</a>`;

/** "1 event" / "3 events". */
export const plural = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`;

/** Format characters (zero-width, bidi controls) a text may hide, shown as what they are in a body's view. */
const INVISIBLE = /[\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]/g;

/**
 * A body's text with its invisible format characters written out ("⟨U+202E⟩"): shown raw, one would reorder the
 * rest of its line or hide a difference between two ids that look the same.
 */
export const shownAsText = (text: string): string =>
  text.replace(INVISIBLE, (c) => `⟨U+${(c.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}⟩`);

/** A sentence with the settings it names (PAYMENT_API_TIMEOUT, ...) each linked to what it does. */
export function withSettings(sentence: string): Html {
  return html`${sentence
    .split(/\b([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)\b/)
    .map((part, i) => (i % 2 === 1 && SETTING_WORDS[part] !== undefined ? setting(part) : part))}`;
}

/** A fact a notification stated (a disagreement's kept or received value): an amount as money, the rest as it is. */
export const factValue = (
  field: string,
  stated: string,
  currency: string | null,
  ctx: Pick<PageContext, 'clock'>,
): Html => (field === 'totalAmount' || field === 'amount' ? money(ctx, stated, currency) : value(stated));
