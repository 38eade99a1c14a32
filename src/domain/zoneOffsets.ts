/**
 * Time-zone arithmetic (pure), the one place it is done: a zone's offset from UTC at an instant, and the instants
 * a local (wall-clock) time happens at. The payment service's local times (paymentServiceTime.ts) and the
 * console's clock (src/console/language/localTime.ts) both read zones through these.
 */

/** One day in milliseconds: offsets change at most once within a day on either side of a time, in every zone in use. */
export const DAY_MS = 86_400_000;

const wallFormats = new Map<string, Intl.DateTimeFormat>();

/** The `en-US` 24-hour numeric format of `timeZone` that wall clocks are read with (one per zone, kept). */
function wallFormat(timeZone: string): Intl.DateTimeFormat {
  let format = wallFormats.get(timeZone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    wallFormats.set(timeZone, format);
  }
  return format;
}

/** What a clock in `timeZone` shows at the instant `ms` (to the second), as UTC epoch milliseconds of that wall time. */
export function wallMs(timeZone: string, ms: number): number {
  const parts = Object.fromEntries(
    wallFormat(timeZone)
      .formatToParts(new Date(ms))
      .map((p) => [p.type, p.value]),
  );
  return utcMs(
    Number(parts.year),
    Number(parts.month) - 1,
    Number(parts.day),
    Number(parts.hour),
    Number(parts.minute),
    Number(parts.second),
  );
}

/**
 * A date and time read as UTC, in epoch milliseconds (month 0-11): Date.UTC, but for every year, where Date.UTC reads
 * the years 0 to 99 as 1900 to 1999.
 */
export function utcMs(year: number, month: number, day = 1, hour = 0, minute = 0, second = 0, ms = 0): number {
  const at = new Date(Date.UTC(2000, month, day, hour, minute, second, ms));
  at.setUTCFullYear(year + at.getUTCFullYear() - 2000);
  return at.getTime();
}

/** The zone's offset from UTC at the instant `ms`, in milliseconds (Europe/Warsaw in winter: 3,600,000). */
export function zoneOffsetMs(timeZone: string, ms: number): number {
  return wallMs(timeZone, ms) - Math.floor(ms / 1000) * 1000;
}

/**
 * The instants (epoch milliseconds) the wall time `wall` (a local time written as UTC epoch milliseconds) happens
 * at in `timeZone`, earliest first: one, none (the clocks skip it) or two (they show it twice). The offsets tried
 * are those a day (DAY_MS) before, at and after it.
 */
export function instantsOfWall(timeZone: string, wall: number): number[] {
  const offsets = new Set([
    zoneOffsetMs(timeZone, wall - DAY_MS),
    zoneOffsetMs(timeZone, wall),
    zoneOffsetMs(timeZone, wall + DAY_MS),
  ]);
  const found = [...offsets]
    .map((offset) => wall - offset)
    .filter((t) => zoneOffsetMs(timeZone, t) === wall - t)
    .sort((a, b) => a - b);
  return [...new Set(found)];
}
