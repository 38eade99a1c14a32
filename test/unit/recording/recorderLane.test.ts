import { databaseTime } from '../../../src/recording/recorderLane';

describe('databaseTime', () => {
  it('When an instant is written for a batch decided without a read, then it reads as the database writes it in UTC', () => {
    expect(databaseTime(Date.UTC(2026, 11, 3, 10, 0, 0, 120))).toBe('2026-12-03T10:00:00.12+00:00');
    expect(databaseTime(Date.UTC(2026, 11, 3, 10, 0, 0, 0))).toBe('2026-12-03T10:00:00+00:00');
    expect(databaseTime(Date.UTC(2026, 11, 3, 10, 0, 0, 7))).toBe('2026-12-03T10:00:00.007+00:00');
  });
});
