import fc from 'fast-check';
import { readInstant } from '../../../src/parsing/instants';

describe('readInstant', () => {
  it.each([
    ['2026-11-28T10:00:00Z', '2026-11-28T10:00:00.000Z'],
    ['2026-11-28T10:00Z', '2026-11-28T10:00:00.000Z'],
    ['2026-11-28T11:00:00.5+01:00', '2026-11-28T10:00:00.500Z'],
    ['2026-11-28T04:30:00.123456789-05:30', '2026-11-28T10:00:00.123Z'],
    ['2024-02-29T23:59:59Z', '2024-02-29T23:59:59.000Z'],
  ])('When it is given %s, then it reads the instant %s', (text, iso) => {
    expect(readInstant(text)?.toISOString()).toBe(iso);
  });

  it.each([
    ['no offset (a local time of somewhere)', '2026-11-28T10:00:00'],
    ['a date alone', '2026-11-28'],
    ['a space for the T', '2026-11-28 10:00:00Z'],
    ['February 30', '2026-02-30T10:00:00Z'],
    ['February 29 of a common year', '2026-02-29T10:00:00Z'],
    ['month 13', '2026-13-01T10:00:00Z'],
    ['day 0', '2026-11-00T10:00:00Z'],
    ['hour 24', '2026-11-28T24:00:00Z'],
    ['minute 60', '2026-11-28T10:60:00Z'],
    ['second 60', '2026-11-28T10:00:60Z'],
    ['an offset of 24 hours', '2026-11-28T10:00:00+24:00'],
    ['an offset without a colon', '2026-11-28T10:00:00+0100'],
    ['epoch milliseconds', '1764324000000'],
    ['text around it', ' 2026-11-28T10:00:00Z'],
    ['ten digits of a fraction', '2026-11-28T10:00:00.1234567890Z'],
  ])('When it is given %s, then it is refused', (_, text) => {
    expect(readInstant(text)).toBeNull();
  });

  it('When any instant is written as ISO 8601 in UTC or with an offset, then it reads back the same', () => {
    fc.assert(
      fc.property(
        fc.date({ min: new Date('1970-01-01T00:00:00Z'), max: new Date('9000-01-01T00:00:00Z'), noInvalidDate: true }),
        fc.integer({ min: -14 * 60, max: 14 * 60 }),
        (date, offsetMinutes) => {
          const local = new Date(date.getTime() + offsetMinutes * 60_000).toISOString().slice(0, -1);
          const sign = offsetMinutes < 0 ? '-' : '+';
          const abs = Math.abs(offsetMinutes);
          const offset = `${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
          expect(readInstant(date.toISOString())?.getTime()).toBe(date.getTime());
          expect(readInstant(`${local}${offset}`)?.getTime()).toBe(date.getTime());
        },
      ),
    );
  });
});
