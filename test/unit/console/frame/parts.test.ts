import { relative } from '../../../../src/console/frame/parts';

const now = new Date('2026-12-02T12:00:00Z');
const after = (seconds: number): Date => new Date(now.getTime() + seconds * 1000);

describe('relative times on the console', () => {
  it('When 2 days 23 h remain, then it says "in 2 days 23 h", not "in 2 days"', () => {
    expect(relative(after(2 * 86_400 + 23 * 3600 + 59 * 60), now)).toBe('in 2 days 23 h');
  });

  it('When 1 h 59 min have passed, then it says "1 h 59 min ago"', () => {
    expect(relative(after(-(3600 + 59 * 60 + 30)), now)).toBe('1 h 59 min ago');
  });

  it('When a whole unit remains, then the smaller unit is left out', () => {
    expect(relative(after(3 * 86_400), now)).toBe('in 3 days');
    expect(relative(after(-2 * 3600), now)).toBe('2 h ago');
  });

  it('When one day and some hours remain, then it says "day", singular', () => {
    expect(relative(after(86_400 + 5 * 3600), now)).toBe('in 1 day 5 h');
  });

  it('When under an hour or a minute, then minutes or seconds alone', () => {
    expect(relative(after(-(59 * 60 + 59)), now)).toBe('59 min ago');
    expect(relative(after(42), now)).toBe('in 42 s');
  });
});
