import { chunkRows } from '../../../src/seeding/seedWorker';
const DAY_MS = 86_400_000;
const NOW = Date.parse('2026-11-26T12:00:00Z');

describe('seeded rows', () => {
  it('When a chunk is built twice from its seed, then the notification rows are the same, and every id is new', () => {
    const settings = {
      posId: '300746',
      keyFingerprint: 'abcdefabcdef',
      eventSource: 'urn:test',
      paymentServiceTimeZone: 'Europe/Warsaw',
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
