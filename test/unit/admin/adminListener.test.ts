import { takeToken, untilToken, type AdmissionLimits, type Bucket } from '../../../src/admin/adminListener';
const limits: AdmissionLimits = { perSecond: 100, burst: 20, maxWaiting: 64 };

describe('the admin port token bucket', () => {
  it('When requests come at once, then a burst is admitted and then none until a token refills', () => {
    let bucket: Bucket = { tokens: limits.burst, atMs: 0 };
    const taken: boolean[] = [];
    for (let i = 0; i < 25; i++) {
      const step = takeToken(bucket, 0, limits);
      bucket = step.bucket;
      taken.push(step.taken);
    }
    expect(taken.filter(Boolean)).toHaveLength(20);
    expect(untilToken(bucket, limits)).toBe(10);
    expect(takeToken(bucket, 9, limits).taken).toBe(false);
    expect(takeToken(bucket, 10, limits).taken).toBe(true);
  });

  it('When the port is quiet, then the bucket refills to the burst and no further', () => {
    const { bucket } = takeToken({ tokens: 0, atMs: 0 }, 60_000, limits);
    expect(bucket.tokens).toBe(limits.burst - 1);
  });
});
