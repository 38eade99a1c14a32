import { backoffMs, Retries, type BackoffPolicy } from '../../../src/domain/backoff';

const policy: BackoffPolicy = { firstMs: 100, maxMs: 1000, jitter: 'none' };

describe('backoffMs', () => {
  it('When retries follow each other, then the wait doubles from the first up to the maximum', () => {
    expect([1, 2, 3, 4, 5, 10, 1000].map((retry) => backoffMs(policy, retry))).toEqual([
      100, 200, 400, 800, 1000, 1000, 1000,
    ]);
  });

  it('When the policy jitters fully, then the wait is uniform below the doubled ceiling', () => {
    const jittered: BackoffPolicy = { ...policy, jitter: 'full' };
    expect([1, 2, 3, 4, 5, 10].map((retry) => backoffMs(jittered, retry, () => 0.999999))).toEqual([
      99, 199, 399, 799, 999, 999,
    ]);
    expect(backoffMs(jittered, 3, () => 0)).toBe(0);
    expect(backoffMs(jittered, 3, () => 0.5)).toBe(200);
  });
});

describe('Retries', () => {
  it('When failures follow each other, then each waits longer; a success starts over; a floor is kept', () => {
    const retries = new Retries(policy);
    expect([retries.next(), retries.next(), retries.next()]).toEqual([100, 200, 400]);
    expect(retries.count).toBe(3);
    retries.reset();
    expect(retries.next()).toBe(100);
    expect(retries.next(5000)).toBe(5000);
  });
});
