import {
  addDays,
  dayOf,
  daysAhead,
  daysPast,
  daysToMake,
  missingDays,
  parsePartitionName,
  partitionName,
  HISTORY_TABLES,
  type HistoryTable,
  type PartitionBounds,
} from '../../../src/partitions/partitionDays';

const at = (iso: string): number => Date.parse(iso);
const DAY = 86_400_000;

describe('history days', () => {
  it('When a time is given, then its day is the UTC date, whatever the hour', () => {
    expect(dayOf(at('2026-11-26T00:00:00Z'))).toBe('2026-11-26');
    expect(dayOf(at('2026-11-26T23:59:59.999Z'))).toBe('2026-11-26');
    expect(dayOf(at('2026-11-26T00:30:00+01:00'))).toBe('2026-11-25');
    expect(addDays('2026-12-31', 1)).toBe('2027-01-01');
    expect(addDays('2024-03-01', -1)).toBe('2024-02-29');
  });

  it('When a partition is named, then its name reads back as its table and day; other names are not partitions', () => {
    expect(partitionName('deliveries', '2026-11-26')).toBe('deliveries_p20261126');
    expect(parsePartitionName('notification_variants_p20261126')).toEqual({
      table: 'notification_variants',
      day: '2026-11-26',
    });
    for (const name of ['orders_p20261126', 'notifications_p20261332', 'notifications_p2026112', 'notifications'])
      expect(parsePartitionName(name)).toBeNull();
  });

  it('When days are past a retention, then only those wholly older are: rows are kept at least the retention, at most a day more', () => {
    const days = ['2026-11-20', '2026-11-21', '2026-11-22', '2026-11-23'];
    // 3 days before 2026-11-25T12:00 is 2026-11-22T12:00: the 22nd is not wholly before it.
    expect(daysPast(days, at('2026-11-25T12:00:00Z'), 3 * DAY)).toEqual(['2026-11-20', '2026-11-21']);
    expect(daysPast(days, at('2026-11-26T00:00:00Z'), 3 * DAY)).toEqual(['2026-11-20', '2026-11-21', '2026-11-22']);
    expect(daysPast(days, at('2026-11-20T00:00:00Z'), 0)).toEqual([]);
  });

  it('When days are made, then from yesterday to a week ahead', () => {
    expect(daysToMake(at('2026-11-26T08:00:00Z'))).toEqual({ first: '2026-11-25', last: '2026-12-03' });
  });

  it('When days ahead are measured, then they count whole days after today covered without a gap in every table', () => {
    const now = at('2026-11-26T08:00:00Z');
    const days = (table: HistoryTable, ...list: string[]): PartitionBounds[] =>
      list.map((day) => ({ table, fromMs: at(`${day}T00:00:00Z`), toMs: at(`${day}T00:00:00Z`) + DAY }));
    const week = ['2026-11-25', '2026-11-26', '2026-11-27', '2026-11-28', '2026-11-29', '2026-11-30'];
    const full = (...more: string[]) => HISTORY_TABLES.flatMap((t) => days(t, ...week, '2026-12-01', ...more));
    expect(daysAhead(full('2026-12-02', '2026-12-03'), now)).toBe(7);
    // Out of order, and a gap: the days after the gap do not count.
    expect(daysAhead([...full().reverse(), ...days('deliveries', '2026-12-03')], now)).toBe(5);
    expect(
      daysAhead(
        HISTORY_TABLES.flatMap((t) => days(t, '2026-11-26')),
        now,
      ),
    ).toBe(0);
    // Today missing in one table: its writes fail.
    expect(daysAhead([...days('notifications', ...week), ...days('notification_variants', ...week)], now)).toBe(-1);
    expect(
      daysAhead(
        full().filter((p) => !(p.table === 'deliveries' && p.fromMs === at('2026-11-26T00:00:00Z'))),
        now,
      ),
    ).toBe(-1);
    expect(daysAhead([], now)).toBe(-1);
  });

  it('When days are looked for between rounds, then every day from yesterday to a week ahead that a table lacks is missing', () => {
    const now = at('2026-11-26T08:00:00Z');
    const days = (table: HistoryTable, ...list: string[]): PartitionBounds[] =>
      list.map((day) => ({ table, fromMs: at(`${day}T00:00:00Z`), toMs: at(`${day}T00:00:00Z`) + DAY }));
    const window = ['2026-11-25', '2026-11-26', '2026-11-27', '2026-11-28', '2026-11-29', '2026-11-30'];
    const all = [...window, '2026-12-01', '2026-12-02', '2026-12-03'];
    const full = HISTORY_TABLES.flatMap((t) => days(t, ...all));
    expect(missingDays(full, now)).toEqual([]);
    expect(
      missingDays(
        full.filter((p) => !(p.table === 'deliveries' && p.fromMs === at('2026-11-26T00:00:00Z'))),
        now,
      ),
    ).toEqual(['2026-11-26']);
    expect(
      missingDays(
        HISTORY_TABLES.flatMap((t) => days(t, ...window)),
        now,
      ),
    ).toEqual(['2026-12-01', '2026-12-02', '2026-12-03']);
  });
});
