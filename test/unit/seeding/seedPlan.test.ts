import fc from 'fast-check';
import { pickSample, planChunks } from '../../../src/seeding/seedPlan';
import { seededRandom } from '../../../src/simulator/random';
const DAY_MS = 86_400_000;
const NOW = Date.parse('2026-11-26T12:00:00Z');

describe('planChunks', () => {
  it('When a year of orders is planned, then the chunks add up to them, each within a day, oldest first', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 200_000 }), fc.integer({ min: 1, max: 400 }), (orders, days) => {
        const from = NOW - days * DAY_MS;
        const chunks = planChunks(orders, from, NOW, { sample: 2, random: seededRandom(1), firstId: 100n });
        expect(chunks.reduce((sum, c) => sum + c.orders, 0)).toBe(orders);
        // Each chunk has its own block of the reserved ids, five an order, one after another.
        expect(chunks[0]?.firstId).toBe('100');
        for (const [i, c] of chunks.entries()) {
          expect(c.index).toBe(i);
          expect(c.orders).toBeGreaterThan(0);
          expect(c.fromMs).toBeGreaterThanOrEqual(from);
          expect(c.toMs).toBeLessThanOrEqual(NOW);
          expect(Math.floor(c.fromMs / DAY_MS)).toBe(Math.floor((c.toMs - 1) / DAY_MS));
          if (i > 0) {
            expect(c.fromMs).toBeGreaterThanOrEqual(chunks[i - 1]!.fromMs);
            expect(BigInt(c.firstId)).toBe(BigInt(chunks[i - 1]!.firstId) + BigInt(chunks[i - 1]!.orders * 5));
          }
        }
      }),
      { numRuns: 50 },
    );
  });

  it('When orders are planned evenly, then a day gets its share', () => {
    const chunks = planChunks(365_000, NOW - 365 * DAY_MS, NOW, { sample: 0, random: seededRandom(1) });
    const perDay = new Map<number, number>();
    for (const c of chunks)
      perDay.set(Math.floor(c.fromMs / DAY_MS), (perDay.get(Math.floor(c.fromMs / DAY_MS)) ?? 0) + c.orders);
    const full = [...perDay.values()].slice(1, -1);
    expect(Math.min(...full)).toBeGreaterThanOrEqual(999);
    expect(Math.max(...full)).toBeLessThanOrEqual(1001);
  });
});

describe('pickSample', () => {
  it('When ids are picked, then half come from the oldest month and half from the newest, each once', () => {
    const chunks = planChunks(10_000, NOW - 365 * DAY_MS, NOW, { sample: 3, random: seededRandom(2) });
    const ids = new Map(
      chunks.filter((c) => c.sample > 0).map((c) => [c.index, [`a${c.index}`, `b${c.index}`, `c${c.index}`]]),
    );
    const picked = pickSample(chunks, ids, 20);
    expect(picked).toHaveLength(20);
    expect(new Set(picked).size).toBe(20);
    const startOf = (id: string): number => chunks[Number(id.slice(1))]!.fromMs;
    for (const id of picked.slice(0, 10)) expect(startOf(id)).toBeLessThan(NOW - 335 * DAY_MS);
    for (const id of picked.slice(10)) expect(startOf(id)).toBeGreaterThan(NOW - 31 * DAY_MS);
  });

  it('When the history is shorter than two months, then no id is printed twice', () => {
    const chunks = planChunks(100, NOW - 10 * DAY_MS, NOW, { sample: 10, random: seededRandom(3) });
    const ids = new Map(chunks.map((c) => [c.index, [`x${c.index}`, `y${c.index}`]]));
    const picked = pickSample(chunks, ids, 8);
    expect(new Set(picked).size).toBe(picked.length);
    expect(picked).toHaveLength(8);
  });
});
