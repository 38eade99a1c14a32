import {
  afterCheck,
  delayAfterChecks,
  firstCheckAt,
  schedulePolicy,
  unavailableBackoff,
} from '../../../src/reconciliation/schedule';
import { Retries } from '../../../src/domain/backoff';
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

describe('reconciliation schedule', () => {
  const policy = schedulePolicy(5 * MINUTE, 7 * DAY);
  const observedAt = new Date('2026-11-25T08:00:00Z');

  it('When an order is open, then its first check is RECONCILE_AFTER after its last observation', () => {
    expect(firstCheckAt(observedAt, policy)).toEqual(new Date('2026-11-25T08:05:00Z'));
  });

  it('When checks find it still open, then the gaps double up to the widest gap', () => {
    const gaps = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12].map((checks) => delayAfterChecks(checks, policy));
    expect(gaps.slice(0, 4)).toEqual([10 * MINUTE, 20 * MINUTE, 40 * MINUTE, 80 * MINUTE]);
    expect(Math.max(...gaps)).toBe(6 * HOUR);
    expect(gaps).toEqual([...gaps].sort((a, b) => a - b));
  });

  it('When the schedule is followed, then it ends with one check at the give-up time and then gives up', () => {
    let at = firstCheckAt(observedAt, policy);
    const checks: Date[] = [];
    for (let n = 1; n < 1000; n++) {
      checks.push(at);
      const next = afterCheck(observedAt, n, at, policy);
      if (next.givenUp) break;
      expect(next.nextCheckAt.getTime()).toBeGreaterThan(at.getTime());
      at = next.nextCheckAt;
    }
    expect(checks.at(-1)).toEqual(new Date(observedAt.getTime() + 7 * DAY));
    expect(checks.length).toBeGreaterThan(10);
    expect(checks.length).toBeLessThan(60);
  });

  it('When the API asked to wait longer than the schedule, then the next check waits that long', () => {
    const next = afterCheck(observedAt, 1, firstCheckAt(observedAt, policy), policy, 2 * HOUR);
    expect(next).toEqual({ givenUp: false, nextCheckAt: new Date('2026-11-25T10:05:00Z') });
  });

  it('When RECONCILE_AFTER is short (a test), then the widest gap is never below it', () => {
    const short = schedulePolicy(1000, 60_000);
    expect(delayAfterChecks(1, short)).toBe(2000);
    expect(short.maxDelayMs).toBe(15_000);
  });

  it.each([
    [1, null, 60_000],
    [2, null, 120_000],
    [20, null, 300_000],
    [1, 90_000, 90_000],
  ])(
    'When %i rounds in a row found the API unavailable (Retry-After %p), then the sweep pauses %i ms',
    (failed, retryAfter, expected) => {
      const rounds = new Retries(unavailableBackoff(30_000));
      const waits = Array.from({ length: failed }, () => rounds.next(retryAfter ?? 0));
      expect(waits.at(-1)).toBe(expected);
    },
  );
});
