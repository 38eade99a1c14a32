/**
 * Times a caller gives as text (a query parameter, a body's field, a line of a file): pure. An instant is ISO 8601
 * with a date, a time and an offset (or Z), so that it means one moment wherever it is read; a date that does not
 * exist (February 30, hour 24) is refused rather than rolled over into another one.
 */

const INSTANT = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(?:Z|[+-](\d{2}):(\d{2}))$/;

/** What an instant looks like, for a message. */
export const INSTANT_EXAMPLE = '2026-11-28T10:00:00Z';

/** The instant `text` names, or null when it is not an ISO 8601 time with an offset on a real date. */
export function readInstant(text: string): Date | null {
  const match = INSTANT.exec(text);
  if (!match) return null;
  const [year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0, offsetHours = 0, offsetMinutes = 0] = match
    .slice(1)
    .map((part) => (part === undefined ? undefined : Number(part)));
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate();
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth) return null;
  if (hour > 23 || minute > 59 || second > 59 || offsetHours > 23 || offsetMinutes > 59) return null;
  const time = Date.parse(text);
  return Number.isNaN(time) ? null : new Date(time);
}
