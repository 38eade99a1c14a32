import { NOTHING_READ } from '../../../src/recording/batch';
import { KeptOrders } from '../../../src/recording/keptOrders';
import { databaseTime, RecorderLane } from '../../../src/recording/recorderLane';
import { NO_WRITES } from '../../support/notifications';

describe('databaseTime', () => {
  it('When an instant is written for a batch decided without a read, then it reads as the database writes it in UTC', () => {
    expect(databaseTime(Date.UTC(2026, 11, 3, 10, 0, 0, 120))).toBe('2026-12-03T10:00:00.12+00:00');
    expect(databaseTime(Date.UTC(2026, 11, 3, 10, 0, 0, 0))).toBe('2026-12-03T10:00:00+00:00');
    expect(databaseTime(Date.UTC(2026, 11, 3, 10, 0, 0, 7))).toBe('2026-12-03T10:00:00.007+00:00');
  });
});

describe('RecorderLane', () => {
  it("When a read's time is before the lane's last batch, then the read is dated at that batch's time", () => {
    const lane = new RecorderLane(new KeptOrders(10), 16);
    const state = { ...NOTHING_READ, now: '2026-12-03T10:00:00.5+00:00' };
    const link = lane.link(false, 0);
    lane.committed(
      state,
      NO_WRITES,
      link,
      { order_revisions: null, refund_revisions: null, next_ids: [], now: '2026-12-03T10:00:00.6+00:00' },
      Date.parse('2026-12-03T10:00:00.6Z'),
    );
    expect(lane.dated({ ...NOTHING_READ, now: '2026-12-03T10:00:00.4+00:00' }).now).toBe('2026-12-03T10:00:00.5+00:00');
    expect(lane.dated({ ...NOTHING_READ, now: '2026-12-03T10:00:00.7+00:00' }).now).toBe('2026-12-03T10:00:00.7+00:00');
  });
});
