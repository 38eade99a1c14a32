import fc from 'fast-check';
import { copyText, copyValue } from '../../src/cli/commands/history/copyRows';
import { pickSample, planChunks } from '../../src/cli/commands/history';
import { chunkRows } from '../../src/cli/commands/history/seedWorker';
import { seededRandom } from '../../src/simulator/random';
import { formatSenderTimestamp } from '../../src/simulator/bodies';

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

describe('COPY text', () => {
  it('When values hold the format specials, then they are escaped, NULL is \\N and objects are JSON', () => {
    expect(copyValue(null)).toBe('\\N');
    expect(copyValue('a\tb\nc\\d\re')).toBe('a\\tb\\nc\\\\d\\re');
    expect(copyValue({ a: 'x\ty' })).toBe('{"a":"x\\\\ty"}');
    expect(copyValue(42)).toBe('42');
    expect(
      copyText(
        [
          { a: 1, b: 'x' },
          { a: 2, b: null },
        ],
        ['a', 'b'],
      ),
    ).toBe('1\tx\n2\t\\N\n');
  });
});

describe('seeded rows', () => {
  it('When a chunk is built twice from its seed, then the notification rows are the same, and every id is new', () => {
    const settings = {
      posId: '300746',
      keyFingerprint: 'abcdefabcdef',
      eventSource: 'urn:test',
      nowMs: NOW,
      bodiesFromMs: NOW - 30 * DAY_MS,
      outboxFromMs: NOW - 7 * DAY_MS,
      scheduleFromMs: NOW - 7 * DAY_MS,
    };
    const chunk = {
      index: 0,
      fromMs: NOW - 2 * DAY_MS,
      toMs: NOW - DAY_MS,
      orders: 200,
      firstId: '1',
      seed: 7,
      sample: 0,
    };
    const a = chunkRows(settings, chunk).rows;
    const b = chunkRows(settings, chunk).rows;
    expect(a.notifications.map((n) => n.body_sha256)).toEqual(b.notifications.map((n) => n.body_sha256));
    const ids = a.notifications.map((n) => n.id);
    expect(new Set(ids).size).toBe(ids.length);
    const refundIds = a.refunds.map((r) => r.refund_id);
    expect(new Set(refundIds).size).toBe(refundIds.length);
    for (const n of a.notifications) expect(Date.parse(n.received_at)).toBeLessThanOrEqual(NOW);
  });
});

describe('formatSenderTimestamp', () => {
  const reference = (date: Date): string => {
    const parts = new Intl.DateTimeFormat('en-CA', {
      timeZone: 'Europe/Warsaw',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      hourCycle: 'h23',
      timeZoneName: 'longOffset',
    }).formatToParts(date);
    const get = (type: string): string => parts.find((p) => p.type === type)?.value ?? '';
    const ms = String(date.getUTCMilliseconds()).padStart(3, '0');
    return `${get('year')}-${get('month')}-${get('day')}T${get('hour')}:${get('minute')}:${get('second')}.${ms}${get('timeZoneName').replace('GMT', '')}`;
  };

  it('When any time is formatted, then it reads as Intl writes it in the sender zone, across the DST changes too', () => {
    fc.assert(
      fc.property(fc.integer({ min: Date.parse('2019-01-01'), max: Date.parse('2030-01-01') }), (ms) => {
        expect(formatSenderTimestamp(new Date(ms))).toBe(reference(new Date(ms)));
      }),
      { numRuns: 2_000 },
    );
    for (const edge of [
      '2026-03-29T00:59:59.999Z',
      '2026-03-29T01:00:00.000Z',
      '2026-10-25T00:59:59.999Z',
      '2026-10-25T01:00:00.000Z',
    ])
      expect(formatSenderTimestamp(new Date(edge))).toBe(reference(new Date(edge)));
  });
});
