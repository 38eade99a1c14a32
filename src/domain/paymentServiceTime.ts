/**
 * The payment service's times as instants (docs/EVENTS.md, "Finance's booking rules"). Its notifications write
 * some times with an offset (`2026-11-28T07:07:38.123+01:00`) and some without (`2026-11-28T07:07:38`), the latter
 * in its own local time: PAYMENT_SERVICE_TIME_ZONE names that zone (Europe/Warsaw by default).
 */

import { DAY_MS, instantsOfWall, utcMs, zoneOffsetMs } from './zoneOffsets';

/** The payment service's own zone: PAYMENT_SERVICE_TIME_ZONE's default. */
export const DEFAULT_PAYMENT_SERVICE_TIME_ZONE = 'Europe/Warsaw';

const TIME =
  /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?\s*(Z|[+-]\d{2}(?::?\d{2})?)?$/i;

/** Epoch milliseconds: 12 or 13 digits (from 1973 to 2286). */
const EPOCH_MS = /^\d{12,13}$/;

/**
 * The instant a payment-service time stands for, as ISO 8601 in UTC (`2026-11-28T06:07:38.123Z`): with its own
 * offset when it has one, else read in `timeZone` (an IANA name); epoch milliseconds in a string (as one of the
 * spec's refund samples writes them) as such. Null for null or a text that is not a time. A
 * local time the zone skips (the spring gap) is read with the offset before it; one it repeats (autumn), with the
 * earlier of the two.
 */
export function paymentServiceInstant(text: string | null, timeZone: string): string | null {
  if (text === null) return null;
  if (EPOCH_MS.test(text.trim())) return new Date(Number(text.trim())).toISOString();
  const m = TIME.exec(text.trim());
  if (!m) return null;
  const [, y, mo, d, h, mi, s, frac, offset] = m;
  const ms = Number((frac ?? '').padEnd(3, '0').slice(0, 3));
  const wall = utcMs(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s ?? 0), ms);
  const check = new Date(wall);
  if (check.getUTCMonth() !== Number(mo) - 1 || check.getUTCDate() !== Number(d) || Number(h) > 23) return null;
  if (offset !== undefined) {
    if (offset.toUpperCase() === 'Z') return check.toISOString();
    const digits = offset.replace(':', '');
    const minutes = Number(digits.slice(1, 3)) * 60 + Number(digits.slice(3, 5) || 0);
    return new Date(wall - (digits[0] === '-' ? -1 : 1) * minutes * 60_000).toISOString();
  }
  // Earlier of the two readings when the wall time repeats; the offset a day (DAY_MS) before when it is skipped.
  const [earliest] = instantsOfWall(timeZone, wall);
  return new Date(earliest ?? wall - zoneOffsetMs(timeZone, wall - DAY_MS)).toISOString();
}

/**
 * The booking time (docs/EVENTS.md, "Finance's booking rules"), as ISO 8601 in UTC: the first of the payment
 * service's own times of a status that reads as one (an order's localReceiptDateTime; a refund's refundDate, then
 * its statusDateTime), else when this service recorded the status. The events' `bookingTime` and the finance CSV's
 * `booking_time` are both this.
 */
export function bookingInstant(said: ReadonlyArray<string | null>, recordedAt: Date, timeZone: string): string {
  for (const text of said) {
    const at = paymentServiceInstant(text, timeZone);
    if (at !== null) return at;
  }
  return recordedAt.toISOString();
}
