import { createRequestLimiter } from '../../../src/paymentApi/requestLimiter';

describe('createRequestLimiter', () => {
  it('When more requests start at once than the per-second cap, then the later ones wait their turn', async () => {
    const sleeps: number[] = [];
    const acquire = createRequestLimiter({
      maxInFlight: 10,
      maxPerSecond: 4,
      now: () => 1000,
      sleep: (ms) => {
        sleeps.push(ms);
        return Promise.resolve();
      },
    });
    for (let i = 0; i < 6; i++) (await acquire())();
    expect(sleeps).toEqual([250, 500]);
  });

  it('When the in-flight cap is reached, then the next request waits for a place and gets it first come first served', async () => {
    const acquire = createRequestLimiter({
      maxInFlight: 2,
      maxPerSecond: 1000,
      now: () => 0,
      sleep: () => Promise.resolve(),
    });
    const first = await acquire();
    const second = await acquire();
    const order: string[] = [];
    const third = acquire().then((release) => (order.push('third'), release));
    const fourth = acquire().then((release) => (order.push('fourth'), release));
    await new Promise((resolve) => setImmediate(resolve));
    expect(order).toEqual([]);
    first();
    first(); // giving a place back twice frees one place only
    await third;
    await new Promise((resolve) => setImmediate(resolve));
    expect(order).toEqual(['third']);
    second();
    await fourth;
    expect(order).toEqual(['third', 'fourth']);
  });
});
