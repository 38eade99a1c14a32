import { randomUUID } from 'node:crypto';
import {
  decodeMessage,
  encodeMessage,
  entriesOf,
  entryOf,
  type JournalEntry,
} from '../../../src/failover/journalEntries';
import type { BatchDecision, DeliveryEntry, NewNotification } from '../../../src/recording/batch';
import type { Delivery } from '../../../src/recording/notificationStore';
import { NO_WRITES } from '../../support/notifications';

const body = Buffer.from('{"order":{"orderId":"X1"}}');
const delivery = (over: Partial<Delivery> = {}): Delivery => ({
  observedVia: 'notification',
  body,
  bodySha256: Buffer.alloc(32),
  signers: [{ posId: '300746', keyFingerprint: 'abc' }],
  sourceAddress: '127.0.0.1',
  processingTimeMs: 12,
  signature: { algorithm: 'md5', signature: Buffer.from('00112233445566778899aabbccddeeff', 'hex') },
  ...over,
});
const entry = (over: Partial<JournalEntry> = {}): JournalEntry => ({
  kind: 'notification',
  at: '2026-12-02T06:43:20.804966+00:00',
  id: '42',
  sourceAddress: '127.0.0.1',
  processingTimeMs: 12,
  algorithm: 'md5',
  signature: '00112233445566778899aabbccddeeff',
  body: body.toString('base64'),
  ...over,
});

function decision(
  deliveries: Array<Pick<DeliveryEntry, 'delivery' | 'notificationId'>>,
  newIds: string[],
): BatchDecision {
  return {
    results: [],
    known: [],
    conflicts: [],
    writes: {
      ...NO_WRITES,
      newNotifications: newIds.map((id) => ({ id }) as NewNotification),
      deliveries: deliveries.map((d) => ({
        ...d,
        signer: { posId: '300746', keyFingerprint: 'abc' },
        outcome: 'accepted',
        notificationReceivedAt: '2026-12-02T06:43:20.804966+00:00',
        countedOnly: false,
      })),
    },
  };
}

describe('the journal entries of a committed batch', () => {
  it('When a batch recorded new notifications, then each has one entry: its first delivery, in its place', () => {
    const entries = entriesOf(
      decision(
        [
          { delivery: delivery(), notificationId: '42' },
          { delivery: delivery({ sourceAddress: '10.0.0.1' }), notificationId: '42' },
          { delivery: delivery(), notificationId: '7' },
        ],
        ['42'],
      ),
    );
    expect(entries).toEqual([entry()]);
  });

  it('When a status came from reconciliation or a restoration, then it is not journaled (no sender was answered)', () => {
    const d = decision(
      [
        { delivery: delivery({ observedVia: 'reconciliation' }), notificationId: '1' },
        { delivery: delivery({ observedVia: 'restoration' }), notificationId: '2' },
      ],
      ['1', '2'],
    );
    expect(entriesOf(d)).toEqual([]);
  });

  it('When a quarantined body is journaled, then it has no id', () => {
    expect(entryOf(delivery(), 'quarantine', '2026-12-02T06:43:20.804Z', null)).toMatchObject({
      kind: 'quarantine',
      id: null,
    });
  });
});

describe('a journal message read back', () => {
  it('When it holds entries, then they come back as written', () => {
    expect(decodeMessage(encodeMessage({ entries: [entry(), entry({ kind: 'quarantine', id: null })] }))).toEqual({
      entries: [entry(), entry({ kind: 'quarantine', id: null })],
      unreadable: 0,
    });
  });

  it('When it is a fence, then its id comes back', () => {
    const fence = randomUUID();
    expect(decodeMessage(encodeMessage({ fence }))).toEqual({ fence });
  });

  it.each<[string, Record<string, unknown>]>([
    ['an id that is not a number', { id: '1; DROP TABLE orders' }],
    ['a notification without an id', { id: null }],
    ['a quarantine with an id', { kind: 'quarantine' }],
    ['an unknown algorithm', { algorithm: 'crc32' }],
    ['a signature that is not hex', { signature: 'zz'.repeat(16) }],
    ['a body that is not base64', { body: '<not base64>' }],
    ['a time without its offset', { at: '2026-12-02T06:43:20' }],
    ['a field of its own', { extra: 1 }],
  ])('When an entry has %s, then it is counted unreadable and left out', (_what, change) => {
    expect(decodeMessage(encodeMessage({ entries: [entry(), { ...entry(), ...change }] }))).toEqual({
      entries: [entry()],
      unreadable: 1,
    });
  });

  it.each([
    ['not JSON', Buffer.from('{')],
    ['another version', Buffer.from(JSON.stringify({ journal: 2, entries: [] }))],
    ['not a journal message', Buffer.from(JSON.stringify({ order: {} }))],
  ])('When a message is %s, then it says so, and nothing of it is read', (_what, content) => {
    expect(decodeMessage(content)).toHaveProperty('problem');
  });
});
