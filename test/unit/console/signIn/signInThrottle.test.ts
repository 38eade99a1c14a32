import {
  minuteOf,
  secondsLeftInMinute,
  signInVerdict,
  SIGN_IN_LIMITS,
  throttleReason,
  throttleSource,
} from '../../../../src/console/signIn/signInThrottle';

describe('the sign-in throttle', () => {
  it("When failures reach a source's limit, then its token is not checked", () => {
    const { perSource, total } = SIGN_IN_LIMITS;
    expect(signInVerdict({ source: 0, total: 0 })).toBe('check');
    expect(signInVerdict({ source: perSource - 1, total: total - 1 })).toBe('check');
    expect(signInVerdict({ source: perSource, total: perSource })).toBe('source_limit');
    expect(signInVerdict({ source: perSource, total: total * 10 })).toBe('source_limit');
  });

  it('When all sources together pass the total, then a source that failed this minute waits, and one that did not is checked', () => {
    const { total } = SIGN_IN_LIMITS;
    expect(signInVerdict({ source: 0, total })).toBe('check');
    expect(signInVerdict({ source: 0, total: total * 1000 })).toBe('check');
    expect(signInVerdict({ source: 1, total })).toBe('total_limit');
    expect(signInVerdict({ source: 1, total: total - 1 })).toBe('check');
  });

  it('When a source is throttled, then the reason says what is true of it', () => {
    expect(throttleReason('source_limit', { source: 10, total: 40 })).toBe(
      '10 failed tokens from this address this minute (10 are allowed)',
    );
    expect(throttleReason('total_limit', { source: 2, total: 130 })).toBe(
      '130 failed tokens this minute from all addresses (100 are allowed), 2 of them from this one',
    );
  });

  it('When sources are counted, then an IPv6 address counts as its /64 and an IPv4 one as itself', () => {
    expect(throttleSource('127.0.0.2')).toBe('127.0.0.2');
    expect(throttleSource('2001:db8:1:2:3:4:5:6')).toBe('2001:db8:1:2::/64');
    expect(throttleSource('2001:db8:1:2::9')).toBe(throttleSource('2001:db8:1:2:ffff::1'));
    expect(throttleSource('::1')).toBe('::/64');
  });

  it('When a time falls in a minute, then failures count in that minute and Retry-After waits for its end', () => {
    expect(minuteOf(Date.parse('2026-11-28T10:15:42.5Z')).toISOString()).toBe('2026-11-28T10:15:00.000Z');
    expect(secondsLeftInMinute(Date.parse('2026-11-28T10:15:42.5Z'))).toBe(18);
    expect(secondsLeftInMinute(Date.parse('2026-11-28T10:15:59.999Z'))).toBe(1);
  });
});
