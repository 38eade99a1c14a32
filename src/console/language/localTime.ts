/**
 * The console's clock (pure): every time shown in the shop's time zone (CONSOLE_TIME_ZONE) and locale
 * (CONSOLE_LOCALE), the zone named; and the times people type into filters, which are local times too, read back
 * into instants. Local times are ambiguous twice a year where the zone keeps daylight saving time, and each case is
 * decided on purpose (the rule is `readLocalTime`'s):
 * - a time the clocks skip (02:30 on the night they go forward in Europe/Warsaw) is read as the moment they jumped
 *   (03:00 local, the first time that exists after it);
 * - a time that happens twice (02:30 on the night they go back) is read as its first occurrence for the start of a
 *   range and as its second for its end, so a range always includes both.
 */

import { DAY_MS, instantsOfWall, utcMs, wallMs, zoneOffsetMs } from '../../domain/zoneOffsets';

/**
 * An IANA time zone's name as pages show it (`europe/warsaw` is `Europe/Warsaw`; an alias Intl knows under another
 * name, `Asia/Kolkata` for `Asia/Calcutta`, stays as the shop wrote it), or null when there is no such zone.
 */
export function canonicalTimeZone(name: string): string | null {
  // Offsets ("+01:00") and abbreviations ("CET" aside, which is a zone) are not zone names a shop means.
  if (!/^[A-Za-z][A-Za-z0-9_+-]*(\/[A-Za-z0-9_+-]+)*$/.test(name)) return null;
  try {
    const resolved = new Intl.DateTimeFormat('en', { timeZone: name }).resolvedOptions().timeZone;
    return resolved.toLowerCase() === name.toLowerCase() ? resolved : name;
  } catch {
    return null;
  }
}

/** The canonical form of a BCP 47 locale that Intl formats numbers and dates for (`pl-pl` is `pl-PL`), or null. */
export function canonicalLocale(name: string): string | null {
  let canonical: string | undefined;
  try {
    [canonical] = Intl.getCanonicalLocales(name);
  } catch {
    return null;
  }
  if (canonical === undefined) return null;
  const supported =
    Intl.NumberFormat.supportedLocalesOf([canonical]).length > 0 &&
    Intl.DateTimeFormat.supportedLocalesOf([canonical]).length > 0;
  return supported ? canonical : null;
}

/** A wall-clock time: what a clock on the shop's wall shows (month 1-12). */
export interface WallTime {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
}

/** How a typed local time was read: the instant, and whether the clocks skipped it or showed it twice. */
export interface ReadTime {
  at: Date;
  /** skipped: read as the moment the clocks jumped; repeated: the first or second occurrence, as said above. */
  note: 'skipped' | 'repeated' | null;
}

/** The first and the last year a filter may name. */
export const FIRST_YEAR = 2000;
export const LAST_YEAR = 2099;

const LOCAL_INPUT = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,6})?)?)?(Z|[+-]\d{2}:\d{2})?$/;

const pad = (n: number, width = 2): string => String(n).padStart(width, '0');

/** The console's time zone and locale, and everything shown or read in them. */
export class LocalTime {
  private readonly shownFormat: Intl.DateTimeFormat;
  private readonly dayFormat: Intl.DateTimeFormat;

  /** `timeZone` and `locale` as canonicalTimeZone and canonicalLocale answer them. */
  constructor(
    readonly timeZone: string,
    readonly locale: string,
  ) {
    this.shownFormat = new Intl.DateTimeFormat(locale, {
      timeZone,
      year: 'numeric',
      month: 'short',
      day: 'numeric',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      hourCycle: 'h23',
      timeZoneName: 'short',
    });
    this.dayFormat = new Intl.DateTimeFormat(locale, {
      timeZone,
      weekday: 'short',
      year: 'numeric',
      month: 'short',
      day: 'numeric',
    });
  }

  /** What a clock in the zone shows at `at` (to the second). */
  wall(at: Date): WallTime {
    const shown = new Date(wallMs(this.timeZone, at.getTime()));
    return {
      year: shown.getUTCFullYear(),
      month: shown.getUTCMonth() + 1,
      day: shown.getUTCDate(),
      hour: shown.getUTCHours(),
      minute: shown.getUTCMinutes(),
      second: shown.getUTCSeconds(),
    };
  }

  /** The zone's offset from UTC at `at`, in milliseconds (Warsaw in winter: 3,600,000). */
  offsetMs(at: Date): number {
    return zoneOffsetMs(this.timeZone, at.getTime());
  }

  /** "28 Nov 2026, 07:07:38 CET" (en-GB, Europe/Warsaw): the date, the time and the zone's short name. */
  format(at: Date): string {
    return this.shownFormat.format(at);
  }

  /** "Sat, 28 Nov 2026": a local day for headings. */
  formatDay(at: Date): string {
    return this.dayFormat.format(at);
  }

  /** The offset as ISO 8601 writes it: "+01:00", "-05:00", "+05:30", "+00:00". */
  offsetText(at: Date): string {
    const minutes = Math.round(this.offsetMs(at) / 60_000);
    const sign = minutes < 0 ? '-' : '+';
    return `${sign}${pad(Math.floor(Math.abs(minutes) / 60))}:${pad(Math.abs(minutes) % 60)}`;
  }

  /** The local time with its offset, to the millisecond: "2026-11-28T07:07:38.123+01:00" (the finance export). */
  isoWithOffset(at: Date): string {
    const w = this.wall(at);
    return `${this.localDay(at)}T${pad(w.hour)}:${pad(w.minute)}:${pad(w.second)}.${pad(at.getUTCMilliseconds(), 3)}${this.offsetText(at)}`;
  }

  /** The local date, "2026-11-28". */
  localDay(at: Date): string {
    const w = this.wall(at);
    return `${pad(w.year, 4)}-${pad(w.month)}-${pad(w.day)}`;
  }

  /** The local time as a form's datetime-local input holds it: "2026-11-28T07:07:38". */
  inputValue(at: Date): string {
    const w = this.wall(at);
    return `${this.localDay(at)}T${pad(w.hour)}:${pad(w.minute)}:${pad(w.second)}`;
  }

  /**
   * The instants a wall time happens at, earliest first: one, none (the clocks skip it) or two (they show it
   * twice), as src/domain/zoneOffsets.ts finds them (offsets a day, 86,400,000 ms, on either side of it).
   */
  instantsOf(w: WallTime): Date[] {
    const asUtc = utcMs(w.year, w.month - 1, w.day, w.hour, w.minute, w.second);
    return instantsOfWall(this.timeZone, asUtc).map((t) => new Date(t));
  }

  /**
   * A wall time as an instant, by the rules at the top of this file: skipped, the moment the clocks jumped over
   * it; repeated, the first occurrence (`first`) or the second (`last`).
   */
  instantOf(w: WallTime, which: 'first' | 'last'): ReadTime {
    const found = this.instantsOf(w);
    if (found.length === 1) return { at: found[0] as Date, note: null };
    if (found.length > 1)
      return { at: (which === 'first' ? found[0] : found[found.length - 1]) as Date, note: 'repeated' };
    // Skipped: the clocks jumped over it within a day on either side of it; the jump is the moment to take.
    const asUtc = utcMs(w.year, w.month - 1, w.day, w.hour, w.minute, w.second);
    return { at: new Date(this.transitionBetween(asUtc - DAY_MS, asUtc + DAY_MS)), note: 'skipped' };
  }

  /** The first instant (to the second) in [lo, hi] whose offset differs from lo's: a transition, by bisection. */
  private transitionBetween(lo: number, hi: number): number {
    const first = this.offsetMs(new Date(lo));
    let low = lo;
    let high = hi;
    while (high - low > 1000) {
      const mid = low + Math.floor((high - low) / 2000) * 1000;
      if (this.offsetMs(new Date(mid)) === first) low = mid;
      else high = mid;
    }
    return high;
  }

  /** Where the local day `YYYY-MM-DD` starts (its first instant: midnight, or the jump when midnight is skipped). */
  startOfDay(day: string): Date {
    const [year, month, date] = day.split('-').map(Number);
    return this.instantOf(
      { year: year ?? 0, month: month ?? 0, day: date ?? 0, hour: 0, minute: 0, second: 0 },
      'first',
    ).at;
  }

  /** The local day after `YYYY-MM-DD`. */
  static nextDay(day: string): string {
    const next = new Date(`${day}T00:00:00Z`);
    next.setUTCDate(next.getUTCDate() + 1);
    return next.toISOString().slice(0, 10);
  }

  /**
   * A time typed into a filter: a local date (`2026-11-27`: the start of that day, or with `end` the start of the
   * next, so that a day given as the end of a range is included), a local date and time (`2026-11-27T09:00`, a
   * space for the T, seconds optional), or an exact instant with its offset (`2026-11-27T09:00Z`, `...+01:00`,
   * as links carry them). Null when it is none of those, or outside the years FIRST_YEAR to LAST_YEAR.
   */
  readLocalTime(text: string, end: boolean): ReadTime | null {
    const m = LOCAL_INPUT.exec(text);
    if (!m) return null;
    const [, y, mo, d, h, mi, s, zone] = m;
    const w: WallTime = {
      year: Number(y),
      month: Number(mo),
      day: Number(d),
      hour: Number(h ?? 0),
      minute: Number(mi ?? 0),
      second: Number(s ?? 0),
    };
    if (
      w.year < FIRST_YEAR ||
      w.year > LAST_YEAR ||
      w.month < 1 ||
      w.month > 12 ||
      w.hour > 23 ||
      w.minute > 59 ||
      w.second > 59
    )
      return null;
    const calendar = new Date(utcMs(w.year, w.month - 1, w.day));
    if (calendar.getUTCDate() !== w.day || w.day < 1) return null;
    if (zone !== undefined) {
      if (h === undefined) return null;
      const at = Date.parse(`${y}-${mo}-${d}T${h}:${mi}:${s ?? '00'}${zone}`);
      return Number.isNaN(at) ? null : { at: new Date(at), note: null };
    }
    if (h === undefined) {
      const day = `${y}-${mo}-${d}`;
      return { at: this.startOfDay(end ? LocalTime.nextDay(day) : day), note: null };
    }
    return this.instantOf(w, end ? 'last' : 'first');
  }
}
