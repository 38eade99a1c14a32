import { SharedWork } from '../../../src/reconciliation/sharedWork';

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
