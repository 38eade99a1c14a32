import { isRetryableStatus, nextRequestStart, parseRetryAfter } from '../../../src/paymentApi/retryPolicy';

describe('parseRetryAfter', () => {
  const now = Date.parse('2026-11-25T08:00:00Z');

  it.each([
    ['3', 3000],
    [' 0 ', 0],
    ['Wed, 25 Nov 2026 08:00:10 GMT', 10_000],
    ['Wed, 25 Nov 2026 07:59:00 GMT', 0],
    ['soon', null],
    ['-1', null],
    ['1.5', null],
    // Past 15 minutes the wait is cut: neither a weeks-long pause nor a timer overflowing into a busy loop.
    ['900', 900_000],
    ['901', 900_000],
    ['2147483', 900_000],
    ['999999999', 900_000],
    ['99999999999999999999999', 900_000],
    ['Fri, 01 Jan 2100 00:00:00 GMT', 900_000],
  ])('When Retry-After is %p, then the wait is %p ms', (value, ms) => {
    expect(parseRetryAfter(value, now)).toBe(ms);
  });

  it('When there is no Retry-After, then there is no wait', () => {
    expect(parseRetryAfter(null, now)).toBeNull();
  });
});

describe('isRetryableStatus', () => {
  it('When the answer is 408, 429 or 5xx, then it is worth another attempt; 4xx otherwise are not', () => {
    expect([408, 429, 500, 502, 503, 504].every(isRetryableStatus)).toBe(true);
    expect([200, 400, 401, 403, 404].some(isRetryableStatus)).toBe(false);
  });
});

describe('nextRequestStart', () => {
  it('When requests come at once, then a burst of perSecond starts now and the rest one interval apart', () => {
    let state = 0;
    const starts: number[] = [];
    for (let i = 0; i < 6; i++) {
      const next = nextRequestStart(state, 1000, 4);
      state = next.theoreticalArrivalMs;
      starts.push(next.startAtMs);
    }
    expect(starts).toEqual([1000, 1000, 1000, 1000, 1250, 1500]);
  });

  it('When requests are spaced out, then none waits; below one per second, each waits its whole interval', () => {
    let state = 0;
    for (const now of [0, 300, 600, 900]) {
      const next = nextRequestStart(state, now, 4);
      expect(next.startAtMs).toBe(now);
      state = next.theoreticalArrivalMs;
    }
    const first = nextRequestStart(0, 0, 0.5);
    expect(first.startAtMs).toBe(0);
    expect(nextRequestStart(first.theoreticalArrivalMs, 0, 0.5).startAtMs).toBe(2000);
  });
});
