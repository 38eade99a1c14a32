import { instantsOfWall, utcMs, wallMs, zoneOffsetMs } from '../../../src/domain/zoneOffsets';

const WARSAW = 'Europe/Warsaw';
const at = (iso: string): number => Date.parse(iso);

describe('zoneOffsetMs', () => {
  it('When the zone is Warsaw in winter or summer, or UTC, then the offset is one hour, two, or none', () => {
    expect(zoneOffsetMs(WARSAW, at('2026-11-28T06:07:38.123Z'))).toBe(3_600_000);
    expect(zoneOffsetMs(WARSAW, at('2026-07-01T12:00:00Z'))).toBe(7_200_000);
    expect(zoneOffsetMs('UTC', at('2026-07-01T12:00:00Z'))).toBe(0);
  });

  it('When the zone is west of UTC, off by half an hour, or the instant before 1970, then the offset is still exact', () => {
    expect(zoneOffsetMs('Asia/Kolkata', at('2026-01-15T00:00:00Z'))).toBe(19_800_000);
    expect(zoneOffsetMs('America/New_York', at('2026-01-15T00:00:00Z'))).toBe(-18_000_000);
    expect(zoneOffsetMs('America/New_York', at('1960-01-15T00:00:00.250Z'))).toBe(-18_000_000);
  });

  it('When the clocks go forward, then the offset changes at the transition and not a second before', () => {
    expect(zoneOffsetMs(WARSAW, at('2026-03-29T00:59:59Z'))).toBe(3_600_000);
    expect(zoneOffsetMs(WARSAW, at('2026-03-29T01:00:00Z'))).toBe(7_200_000);
  });
});

describe('wallMs', () => {
  it('When a clock is read, then it shows the local time to the second', () => {
    expect(new Date(wallMs(WARSAW, at('2026-11-28T06:07:38.123Z'))).toISOString()).toBe('2026-11-28T07:07:38.000Z');
  });
});

describe('instantsOfWall', () => {
  it('When a local time happens once, then it has one instant', () => {
    expect(instantsOfWall(WARSAW, at('2026-11-28T07:07:38Z'))).toEqual([at('2026-11-28T06:07:38Z')]);
  });

  it('When the clocks skip a local time, then it has none', () => {
    expect(instantsOfWall(WARSAW, at('2026-03-29T02:30:00Z'))).toEqual([]);
  });

  it('When the clocks show a local time twice, then it has both instants, earliest first', () => {
    expect(instantsOfWall(WARSAW, at('2026-10-25T02:30:00Z'))).toEqual([
      at('2026-10-25T00:30:00Z'),
      at('2026-10-25T01:30:00Z'),
    ]);
  });

  it('When a date of the years 0 to 99 is read as UTC, then it stays in its year (Date.UTC would add 1900)', () => {
    expect(new Date(utcMs(50, 0, 2, 3, 4, 5)).toISOString()).toBe('0050-01-02T03:04:05.000Z');
    expect(new Date(utcMs(2026, 11, 3, 10, 0, 0, 120)).toISOString()).toBe('2026-12-03T10:00:00.120Z');
    expect(new Date(wallMs('UTC', utcMs(99, 11, 31, 23, 59, 59))).toISOString()).toBe('0099-12-31T23:59:59.000Z');
  });
});
