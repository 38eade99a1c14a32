import { canonicalLocale, canonicalTimeZone, LocalTime } from '../../../../src/console/language/localTime';

const warsaw = new LocalTime('Europe/Warsaw', 'en-GB');
const utc = new LocalTime('UTC', 'en-GB');
const iso = (read: { at: Date } | null): string | undefined => read?.at.toISOString();

describe('local time: the settings', () => {
  it('When a time zone is named, then an IANA name is taken in its canonical form and anything else refused', () => {
    expect(canonicalTimeZone('Europe/Warsaw')).toBe('Europe/Warsaw');
    expect(canonicalTimeZone('europe/warsaw')).toBe('Europe/Warsaw');
    expect(canonicalTimeZone('UTC')).toBe('UTC');
    expect(canonicalTimeZone('Asia/Kolkata')).toBe('Asia/Kolkata');
    for (const bad of ['Mars/Olympus_Mons', '+01:00', 'UTC+1', '', ' Europe/Warsaw', 'Europe/../etc', 'Europe/Warsaw;'])
      expect([bad, canonicalTimeZone(bad)]).toEqual([bad, null]);
  });

  it('When a locale is named, then one Intl formats for is taken in its canonical form and anything else refused', () => {
    expect(canonicalLocale('pl-PL')).toBe('pl-PL');
    expect(canonicalLocale('pl-pl')).toBe('pl-PL');
    expect(canonicalLocale('en-GB')).toBe('en-GB');
    for (const bad of ['xx-YY', 'qq', '', 'en_GB', 'not a locale', '--'])
      expect([bad, canonicalLocale(bad)]).toEqual([bad, null]);
  });
});

describe('local time: what a page shows', () => {
  const winter = new Date('2026-11-27T15:40:47.123Z');
  const summer = new Date('2026-07-01T10:00:00Z');

  it('When a time is shown, then it is the local time with the zone named', () => {
    expect(warsaw.format(winter)).toBe('27 Nov 2026, 16:40:47 CET');
    expect(warsaw.format(summer)).toBe('1 Jul 2026, 12:00:00 CEST');
    expect(utc.format(winter)).toBe('27 Nov 2026, 15:40:47 UTC');
    expect(new LocalTime('Europe/Warsaw', 'pl-PL').format(winter)).toBe('27 lis 2026, 16:40:47 CET');
  });

  it('When a time is written for the finance export, then it carries its offset', () => {
    expect(warsaw.isoWithOffset(winter)).toBe('2026-11-27T16:40:47.123+01:00');
    expect(warsaw.isoWithOffset(summer)).toBe('2026-07-01T12:00:00.000+02:00');
    expect(utc.isoWithOffset(winter)).toBe('2026-11-27T15:40:47.123+00:00');
    expect(new LocalTime('Asia/Kolkata', 'en-GB').isoWithOffset(winter)).toBe('2026-11-27T21:10:47.123+05:30');
    expect(new LocalTime('America/New_York', 'en-GB').isoWithOffset(winter)).toBe('2026-11-27T10:40:47.123-05:00');
    expect(warsaw.localDay(new Date('2026-11-27T23:30:00Z'))).toBe('2026-11-28');
    expect(warsaw.inputValue(winter)).toBe('2026-11-27T16:40:47');
  });
});

describe('local time: what a filter reads', () => {
  it('When a local date or time is typed, then it is read in the zone', () => {
    expect(iso(warsaw.readLocalTime('2026-11-27', false))).toBe('2026-11-26T23:00:00.000Z');
    expect(iso(warsaw.readLocalTime('2026-11-27', true))).toBe('2026-11-27T23:00:00.000Z');
    expect(iso(warsaw.readLocalTime('2026-11-27T09:00', false))).toBe('2026-11-27T08:00:00.000Z');
    expect(iso(warsaw.readLocalTime('2026-11-27 09:00:30', false))).toBe('2026-11-27T08:00:30.000Z');
    expect(iso(warsaw.readLocalTime('2026-07-01T09:00', false))).toBe('2026-07-01T07:00:00.000Z');
    expect(iso(utc.readLocalTime('2026-11-27T09:00', false))).toBe('2026-11-27T09:00:00.000Z');
  });

  it('When an exact time with its offset is given, then it is taken as it is', () => {
    expect(iso(warsaw.readLocalTime('2026-11-27T09:00Z', false))).toBe('2026-11-27T09:00:00.000Z');
    expect(iso(warsaw.readLocalTime('2026-11-27T09:00:00+05:30', false))).toBe('2026-11-27T03:30:00.000Z');
  });

  it('When a time the clocks skip is typed, then it is read as the moment they jumped, and said so', () => {
    // 2026-03-29: Warsaw goes from 02:00 CET to 03:00 CEST (01:00 UTC).
    for (const end of [false, true])
      expect(warsaw.readLocalTime('2026-03-29T02:30', end)).toEqual({
        at: new Date('2026-03-29T01:00:00Z'),
        note: 'skipped',
      });
    expect(warsaw.readLocalTime('2026-03-29T03:00', false)).toEqual({
      at: new Date('2026-03-29T01:00:00Z'),
      note: null,
    });
    expect(warsaw.readLocalTime('2026-03-29T01:59:59', false)).toEqual({
      at: new Date('2026-03-29T00:59:59Z'),
      note: null,
    });
  });

  it('When a time the clocks show twice is typed, then a range starts at its first and ends at its second', () => {
    // 2026-10-25: Warsaw goes from 03:00 CEST back to 02:00 CET (01:00 UTC); 02:30 happens at 00:30 and 01:30 UTC.
    expect(warsaw.readLocalTime('2026-10-25T02:30', false)).toEqual({
      at: new Date('2026-10-25T00:30:00Z'),
      note: 'repeated',
    });
    expect(warsaw.readLocalTime('2026-10-25T02:30', true)).toEqual({
      at: new Date('2026-10-25T01:30:00Z'),
      note: 'repeated',
    });
  });

  it('When a day starts in a skipped hour, then the day starts when the clocks jumped', () => {
    // America/Santiago moves its clocks at midnight: 2026-09-06 00:00 does not happen there.
    const santiago = new LocalTime('America/Santiago', 'en-GB');
    const start = santiago.startOfDay('2026-09-06');
    expect(santiago.inputValue(start)).toBe('2026-09-06T01:00:00');
    expect(santiago.localDay(new Date(start.getTime() - 1000))).toBe('2026-09-05');
  });

  it('When a day is typed, then it lasts 23, 24 or 25 hours as the clocks say', () => {
    const hours = (day: string) =>
      ((warsaw.readLocalTime(day, true)?.at.getTime() ?? 0) - (warsaw.readLocalTime(day, false)?.at.getTime() ?? 0)) /
      3_600_000;
    expect(hours('2026-03-29')).toBe(23);
    expect(hours('2026-10-25')).toBe(25);
    expect(hours('2026-11-27')).toBe(24);
  });

  it('When nonsense, an impossible date or a year out of range is typed, then it is refused', () => {
    for (const bad of [
      'yesterday',
      '27.11.2026',
      '2026-11-31',
      '2026-02-29',
      '2026-13-01',
      '2026-11-27T24:00',
      '2026-11-27T09:60',
      '1999-12-31',
      '2100-01-01',
      '2026-11-27Z',
      '2026-11-27T09:00+25:00',
      '',
    ])
      expect([bad, warsaw.readLocalTime(bad, false)]).toEqual([bad, null]);
    expect(iso(warsaw.readLocalTime('2028-02-29', false))).toBe('2028-02-28T23:00:00.000Z');
  });
});
