import { takeToken, untilToken, type AdmissionLimits, type Bucket } from '../../src/admin/adminListener';
import { SharedWork } from '../../src/reconciliation/sharedWork';

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

describe('shared work', () => {
  it('When callers ask the same at once, then the work runs once and each gets its result', async () => {
    const shared = new SharedWork<number>();
    let runs = 0;
    const work = async (): Promise<number> => {
      runs += 1;
      await new Promise((resolve) => setTimeout(resolve, 20));
      return 42;
    };
    expect(await Promise.all([shared.run('a', work), shared.run('a', work), shared.run('b', work)])).toEqual([
      42, 42, 42,
    ]);
    expect(runs).toBe(2);
    expect(shared.size).toBe(0);
  });

  it('When every caller leaves, then the work is cancelled; while one stays, it is not', async () => {
    const shared = new SharedWork<string>();
    const work = (cancelled: AbortSignal): Promise<string> =>
      new Promise((resolve) => {
        const timer = setTimeout(() => resolve('done'), 50);
        cancelled.addEventListener('abort', () => {
          clearTimeout(timer);
          resolve('cancelled');
        });
      });
    const first = new AbortController();
    const second = new AbortController();
    const results = [shared.run('k', work, first.signal), shared.run('k', work, second.signal)];
    first.abort();
    const staying = new AbortController();
    const kept = shared.run('other', work, staying.signal);
    second.abort();
    expect(await Promise.all(results)).toEqual(['cancelled', 'cancelled']);
    expect(await kept).toBe('done');
  });
});
