import { EVENT_TYPES, eventId, typesMatching } from '../../../src/outbox/cloudEvents';

const SOURCE = 'urn:payment-notification-receiver';
const TIME = new Date('2026-11-28T10:25:41.002Z');

/** The UUID's 16 bytes. */
const bytes = (id: string): Buffer => Buffer.from(id.replace(/-/g, ''), 'hex');

describe('event ids', () => {
  it('When the same notification is given again, then the same id comes back (history can rebuild it)', () => {
    expect(eventId(SOURCE, '42', TIME)).toBe(eventId(SOURCE, '42', new Date(TIME.getTime())));
  });

  it('When an id is made, then it is a UUIDv7 whose time is the event time in milliseconds', () => {
    const id = eventId(SOURCE, '42', TIME);
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(bytes(id).readUIntBE(0, 6)).toBe(TIME.getTime());
  });

  it('When notifications differ, or sources do, then so do the ids', () => {
    const ids = new Set([
      eventId(SOURCE, '42', TIME),
      eventId(SOURCE, '43', TIME),
      eventId('urn:another-deployment', '42', TIME),
      eventId(SOURCE, '42', new Date(TIME.getTime() + 1)),
    ]);
    expect(ids.size).toBe(4);
  });

  it('When events share a millisecond, then their ids sort as their notification ids, across byte boundaries of the counter', () => {
    const ids = ['1', '63', '64', '16383', '16384', '16777215', '16777216', '4398046511103'];
    const made = ids.map((n) => eventId(SOURCE, n, TIME));
    expect([...made].sort()).toEqual(made);
    // The counter sits in the bits the version and variant leave.
    for (const id of made) expect(id).toMatch(/^.{14}7.{4}[89ab]/);
  });

  it('When later events come, then their ids sort after, whatever their notification ids', () => {
    expect(eventId(SOURCE, '1000', TIME) < eventId(SOURCE, '1', new Date(TIME.getTime() + 1))).toBe(true);
  });
});

describe('binding patterns', () => {
  it.each([
    ['refund.#', ['refund.pending', 'refund.finalized', 'refund.canceled', 'refund.status_conflict']],
    [
      'order.*',
      ['order.pending', 'order.waiting_for_confirmation', 'order.completed', 'order.canceled', 'order.status_conflict'],
    ],
    ['*.status_conflict', ['order.status_conflict', 'refund.status_conflict']],
    ['#.canceled', ['order.canceled', 'refund.canceled']],
    ['#', [...EVENT_TYPES]],
    ['order.completed', ['order.completed']],
    ['order.#.completed', ['order.completed']],
    ['#.#', [...EVENT_TYPES]],
  ])('When the pattern is %s, then it matches what a queue bound with it gets', (pattern, types) => {
    expect(typesMatching(pattern)).toEqual(types);
  });

  it('When a pattern matches no type, then none; when it is no pattern at all, then null', () => {
    for (const none of ['order.shipped', 'order', 'order.*.*', 'refund.*.#.x', '*'])
      expect(typesMatching(none)).toEqual([]);
    for (const bad of [
      '',
      'order..completed',
      'order.comp*',
      'Order.completed',
      'order.completed\u0000',
      'a'.repeat(256),
    ])
      expect(typesMatching(bad)).toBeNull();
  });
});
