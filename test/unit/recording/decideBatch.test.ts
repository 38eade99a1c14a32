import { createHash } from 'node:crypto';
import type { Notification, OrderNotification, RefundNotification } from '../../../src/parsing/notification';
import {
  DELIVERY_ROWS_PER_NOTIFICATION,
  meaningOf,
  type BatchItem,
  type BatchState,
  NO_REVISIONS,
} from '../../../src/recording/batch';
import { eventId } from '../../../src/outbox/cloudEvents';
import { decideBatch } from '../../../src/recording/decideBatch';
import type { OrderProjection, RefundProjection } from '../../../src/recording/projection';
import type { SignatureMatch } from '../../../src/verification/verifySignature';
import { orderNotification, refundNotification } from '../../support/notifications';

const KEY_A: SignatureMatch = { posId: 'A', keyFingerprint: 'ka' };
const KEY_B: SignatureMatch = { posId: 'B', keyFingerprint: 'kb' };

const order = (status: OrderNotification['status'], fields: Partial<OrderNotification> = {}): OrderNotification =>
  orderNotification('O1', status, { extOrderId: 'E1', merchantPosId: 'A', totalAmount: '15000', ...fields });

const refund = (status: RefundNotification['status'], fields: Partial<RefundNotification> = {}): RefundNotification =>
  refundNotification('O1', 'R1', status, { extOrderId: 'E1', amount: '500', ...fields });

const projectionOf = ({ kind: _kind, ...fields }: OrderNotification): OrderProjection => fields;
const refundProjectionOf = ({ kind: _kind, ...fields }: RefundNotification): RefundProjection => fields;

interface StateOf {
  orders?: OrderNotification[];
  refunds?: RefundNotification[];
  owners?: Record<string, string>;
  sequences?: Record<string, number>;
  stored?: Array<{ notification: Notification; id: string; body: string; deliveryRows?: number; variants?: string[] }>;
}

const sha = (text: string): Buffer => createHash('sha256').update(text).digest();

/** The transaction's time, and an earlier receipt, as the database writes them. */
const NOW = '2026-11-26T10:00:00.123456+00:00';
const EARLIER = '2026-11-25T09:00:00.654321+00:00';

const state = (given: StateOf = {}): BatchState => ({
  storedNotifications: new Map(
    (given.stored ?? []).map((r) => [
      meaningOf(r.notification),
      {
        id: r.id,
        receivedAt: EARLIER,
        bodySha256: sha(r.body),
        variants: new Set(r.variants ?? []),
        deliveryRows: r.deliveryRows ?? 1,
      },
    ]),
  ),
  orders: new Map((given.orders ?? []).map((o) => [o.orderId, { projection: projectionOf(o), recorded: {} }])),
  refunds: new Map((given.refunds ?? []).map((r) => [r.refundId, { projection: refundProjectionOf(r), recorded: {} }])),
  owners: new Map(Object.entries(given.owners ?? {})),
  sequences: new Map(Object.entries(given.sequences ?? {})),
  newIds: ['101', '102', '103', '104', '105', '106'],
  now: NOW,
  revisions: NO_REVISIONS,
});

let bodies = 0;
/** One delivery of a notification, with fresh body bytes unless given. */
const item = (notification: Notification, signers: SignatureMatch[] = [KEY_A], body?: string): BatchItem => {
  const bytes = Buffer.from(body ?? `body ${++bodies}`);
  return {
    notification,
    delivery: {
      body: bytes,
      bodySha256: sha(bytes.toString()),
      signers,
      sourceAddress: '185.68.12.10',
      processingTimeMs: null,
      observedVia: 'notification',
    },
  };
};

const decide = (items: BatchItem[], given: BatchState = state()) =>
  decideBatch(items, given, { eventSource: 'urn:test', paymentServiceTimeZone: 'Europe/Warsaw' });

describe('decideBatch: states and events', () => {
  it('When a lifecycle arrives in one batch, then each step applies in turn with consecutive sequences', () => {
    const { results, writes } = decide([
      item(order('PENDING')),
      item(order('COMPLETED', { payMethodType: 'PBL' })),
      item(refund('FINALIZED')),
    ]);
    expect(results.map((r) => r.outcome)).toEqual(['accepted', 'accepted', 'accepted']);
    expect(writes.events.map((e) => [e.type, e.data.previousStatus, e.data.sequence, e.data.notificationId])).toEqual([
      ['order.pending', null, 1, '101'],
      ['order.completed', 'PENDING', 2, '102'],
      ['refund.finalized', null, 3, '103'],
    ]);
    expect(writes.orders.map((o) => o.projection)).toEqual([
      expect.objectContaining({ orderId: 'O1', status: 'COMPLETED', payMethodType: 'PBL' }),
    ]);
    expect(writes.refunds.map((r) => r.projection)).toEqual([
      expect.objectContaining({ refundId: 'R1', status: 'FINALIZED' }),
    ]);
    expect(writes.orders[0]?.recorded).toEqual({ PENDING: { id: '101', at: NOW }, COMPLETED: { id: '102', at: NOW } });
    expect(writes.refunds[0]?.recorded).toEqual({ FINALIZED: { id: '103', at: NOW } });
    expect(writes.newNotifications.map((r) => r.receivedAt)).toEqual([NOW, NOW, NOW]);
    expect(writes.sequences).toEqual([{ orderId: 'O1', lastSequence: 3 }]);
    // Each event's time is its notification's receipt (to the millisecond), its id derived from both.
    expect(writes.events.map((e) => [e.time, e.id])).toEqual(
      ['101', '102', '103'].map((id) => ['2026-11-26T10:00:00.123Z', eventId('urn:test', id, new Date(NOW))]),
    );
    expect(writes.newNotifications.map((r) => [r.id, r.transition])).toEqual([
      ['101', 'applied'],
      ['102', 'applied'],
      ['103', 'applied'],
    ]);
  });

  it('When the order already has events, then numbering continues from its last sequence', () => {
    const { writes } = decide(
      [item(order('COMPLETED'))],
      state({ orders: [order('PENDING')], owners: { O1: 'A' }, sequences: { O1: 4 } }),
    );
    expect(writes.events[0]?.data.sequence).toBe(5);
  });

  it('When a stale notification arrives, then it is recorded but nothing changes and no event or sequence is used', () => {
    const { results, writes } = decide(
      [item(order('PENDING'))],
      state({ orders: [order('COMPLETED')], owners: { O1: 'A' }, sequences: { O1: 2 } }),
    );
    expect(results[0]).toMatchObject({ outcome: 'stale', currentStatus: 'COMPLETED', eventsWritten: 0 });
    expect(writes.newNotifications.map((r) => r.transition)).toEqual(['stale']);
    // The projection stays; only the status recorded is added to it, for dedup.
    expect(writes.orders).toEqual([
      { projection: projectionOf(order('COMPLETED')), recorded: { PENDING: { id: '101', at: NOW } } },
    ]);
    expect(writes.events).toEqual([]);
    expect(writes.sequences).toEqual([]);
  });

  it('When CANCELED follows COMPLETED, then a conflict event is written and the projection keeps COMPLETED', () => {
    const { results, writes } = decide(
      [item(order('CANCELED'))],
      state({ orders: [order('COMPLETED', { paymentId: 'P1' })], owners: { O1: 'A' } }),
    );
    expect(results[0]).toMatchObject({ outcome: 'conflict', currentStatus: 'COMPLETED' });
    expect(writes.events[0]).toMatchObject({
      type: 'order.status_conflict',
      data: { status: 'CANCELED', previousStatus: 'COMPLETED', paymentId: 'P1', sequence: 1 },
    });
    expect(writes.orders.map((o) => [o.projection.status, o.recorded])).toEqual([
      ['COMPLETED', { CANCELED: { id: '101', at: NOW } }],
    ]);
  });

  it('When a final status is contradicted, then the decision lists the conflict with who observed it', () => {
    const fromApi = item(refund('CANCELED'));
    fromApi.delivery.observedVia = 'reconciliation';
    const canceled = { orders: [order('CANCELED')], refunds: [refund('FINALIZED')], owners: { O1: 'A' } };
    const { conflicts } = decide([item(order('COMPLETED')), fromApi], state(canceled));
    expect(conflicts).toEqual([
      { kind: 'order', status: 'COMPLETED', keptStatus: 'CANCELED', source: 'notification' },
      { kind: 'refund', status: 'CANCELED', keptStatus: 'FINALIZED', source: 'reconciliation' },
    ]);
    expect(decide([item(order('CANCELED'))], state(canceled)).conflicts).toEqual([]);
  });

  it('When a conflicting status recorded before comes again after retention removed its history, then it is a conflict observed by a replay', () => {
    const given = state({ orders: [order('CANCELED')], owners: { O1: 'A' } });
    const replayed: BatchState = {
      ...given,
      orders: new Map([
        ['O1', { projection: projectionOf(order('CANCELED')), recorded: { COMPLETED: { id: '7', at: EARLIER } } }],
      ]),
    };
    const { results, conflicts } = decide([item(order('COMPLETED'))], replayed);
    expect(results[0]).toMatchObject({ outcome: 'conflict', currentStatus: 'CANCELED' });
    expect(conflicts).toEqual([{ kind: 'order', status: 'COMPLETED', keptStatus: 'CANCELED', source: 'replay' }]);
  });

  it('When a later notification lacks fields, then the projection and its event keep the earlier values', () => {
    const { writes } = decide([
      item(order('PENDING', { paymentId: 'P1', payMethodType: 'CARD_TOKEN' })),
      item(order('CANCELED', { extOrderId: null })),
    ]);
    expect(writes.orders[0]?.projection).toMatchObject({
      status: 'CANCELED',
      paymentId: 'P1',
      payMethodType: 'CARD_TOKEN',
      extOrderId: 'E1',
    });
    expect(writes.events[1]?.data).toMatchObject({ paymentId: 'P1', extOrderId: 'E1' });
  });

  it('When the state is given, then it is not modified', () => {
    const given = state({ orders: [order('PENDING')], owners: { O1: 'A' } });
    decide([item(order('COMPLETED'))], given);
    expect(given.orders.get('O1')?.projection.status).toBe('PENDING');
    expect(given.orders.get('O1')?.recorded).toEqual({});
    expect(given.owners.size).toBe(1);
  });

  it('When a refund knows its extRefundId, then the event carries it; otherwise the field is absent', () => {
    const { writes } = decide([
      item(refund('FINALIZED', { extRefundId: 'X1' })),
      item(refund('PENDING', { refundId: 'R2' })),
    ]);
    expect(writes.events[0]?.data).toMatchObject({ extRefundId: 'X1' });
    expect(writes.events[1]?.data).not.toHaveProperty('extRefundId');
  });

  it('When more new notifications arrive than ids were reserved, then the decision fails rather than reuse one', () => {
    const given = { ...state(), newIds: ['1'] };
    expect(() => decide([item(order('PENDING')), item(order('COMPLETED'))], given)).toThrow(/ids/);
  });
});

describe('decideBatch: repeats', () => {
  it('When the same meaning arrives twice in a batch, then the second is a duplicate of the first, and a variant when its bytes differ', () => {
    const { results, writes } = decide([
      item(order('PENDING'), [KEY_A], 'x'),
      item(order('PENDING'), [KEY_A], 'x'),
      item(order('PENDING'), [KEY_A], 'y'),
    ]);
    expect(results.map((r) => r.outcome)).toEqual(['accepted', 'duplicate', 'duplicate']);
    expect(writes.newNotifications).toHaveLength(1);
    expect(writes.variants.map((v) => v.body.toString())).toEqual(['y']);
    expect(results.map((r) => r.outcome !== 'refused' && r.newVariant)).toEqual([false, false, true]);
    expect(writes.deliveries.map((d) => [d.outcome, d.notificationId])).toEqual([
      ['accepted', '101'],
      ['duplicate', '101'],
      ['duplicate', '101'],
    ]);
  });

  it('When a meaning was recorded before, then a repeat writes only its delivery', () => {
    const { results, writes, known } = decide(
      [item(order('PENDING'), [KEY_A], 'first')],
      state({
        orders: [order('PENDING')],
        owners: { O1: 'A' },
        stored: [{ notification: order('PENDING'), id: '9', body: 'first' }],
      }),
    );
    expect(results[0]).toMatchObject({ outcome: 'duplicate', notificationId: '9', posId: 'A' });
    expect(writes.newNotifications).toEqual([]);
    expect(writes.variants).toEqual([]);
    expect(known).toEqual([
      {
        meaning: meaningOf(order('PENDING')),
        id: '9',
        receivedAt: EARLIER,
        bodySha256: sha('first'),
        ownerPosId: 'A',
        deliveryRows: 2,
      },
    ]);
  });

  it('When the known-duplicates cache knows an item, then it is a duplicate without any state', () => {
    const record = {
      meaning: meaningOf(order('PENDING')),
      id: '5',
      receivedAt: EARLIER,
      bodySha256: sha('x'),
      ownerPosId: 'A',
      deliveryRows: 4,
    };
    const known = { ...item(order('PENDING')), known: { record, signer: KEY_A } };
    const decision = decide([known], state());
    expect(decision.results[0]).toMatchObject({ outcome: 'duplicate', notificationId: '5' });
    expect(decision.writes.deliveries).toMatchObject([{ notificationId: '5', countedOnly: false }]);
    expect(decision.writes.owners).toEqual([]);
    expect(decision.known).toEqual([{ ...record, deliveryRows: 5 }]);
  });
});

describe('decideBatch: the audit stays bounded under replay', () => {
  it('When a notification has rows enough, then further deliveries are only counted, also within one batch', () => {
    const pending = order('PENDING');
    const replays = [1, 2, 3].map(() => item(pending, [KEY_A], 'first'));
    const { writes, known } = decide(
      replays,
      state({
        orders: [pending],
        owners: { O1: 'A' },
        stored: [{ notification: pending, id: '9', body: 'first', deliveryRows: DELIVERY_ROWS_PER_NOTIFICATION - 2 }],
      }),
    );
    expect(writes.deliveries.map((d) => d.countedOnly)).toEqual([false, false, true]);
    expect(known[0]?.deliveryRows).toBe(DELIVERY_ROWS_PER_NOTIFICATION);
  });

  it('When a new notification arrives twice in one batch, then both deliveries get a row', () => {
    const { writes } = decide([item(order('PENDING'), [KEY_A], 'a'), item(order('PENDING'), [KEY_A], 'a')]);
    expect(writes.deliveries.map((d) => d.countedOnly)).toEqual([false, false]);
  });
});

describe('decideBatch: a POS vouches for its own orders only', () => {
  it("When an order's first notification arrives, then the order is bound to the POS it names", () => {
    const { writes, results } = decide([item(order('PENDING', { merchantPosId: 'B' }), [KEY_B])]);
    expect(writes.owners).toEqual([{ orderId: 'O1', posId: 'B' }]);
    expect(results[0]).toMatchObject({ posId: 'B' });
    expect(writes.orders[0]?.projection.merchantPosId).toBe('B');
  });

  it('When the first notification names no POS, then the order is bound to the POS whose key verified it', () => {
    const { writes } = decide([item(order('PENDING', { merchantPosId: null }), [KEY_B])]);
    expect(writes.owners).toEqual([{ orderId: 'O1', posId: 'B' }]);
    expect(writes.orders[0]?.projection.merchantPosId).toBe('B');
  });

  it.each([
    ['the next status', order('COMPLETED', { merchantPosId: null })],
    ['the same status again (a duplicate)', order('PENDING', { merchantPosId: null })],
    ['a refund', refund('FINALIZED')],
  ])(
    "When %s of another POS's order is signed with this POS's key, then it is refused and nothing is written",
    (_what, n) => {
      const { results, writes } = decide(
        [item(n, [KEY_A])],
        state({
          orders: [order('PENDING', { merchantPosId: 'B' })],
          owners: { O1: 'B' },
          stored: [{ notification: order('PENDING'), id: '9', body: 'x' }],
        }),
      );
      expect(results).toEqual([{ outcome: 'refused', reason: 'pos_mismatch' }]);
      expect(writes).toMatchObject({
        newNotifications: [],
        owners: [],
        orders: [],
        refunds: [],
        events: [],
        deliveries: [],
        variants: [],
      });
    },
  );

  it('When a refund arrives before its order, then it binds the order, and the order then takes only that POS', () => {
    const { results, writes } = decide([
      item(refund('FINALIZED'), [KEY_B]),
      item(order('PENDING', { merchantPosId: null }), [KEY_A]),
      item(order('COMPLETED', { merchantPosId: null }), [KEY_B]),
    ]);
    expect(writes.owners).toEqual([{ orderId: 'O1', posId: 'B' }]);
    expect(results.map((r) => r.outcome)).toEqual(['accepted', 'refused', 'accepted']);
  });

  it('When one key is configured for two POS, then the key of the POS the order belongs to vouches for it', () => {
    const shared = [KEY_A, { posId: 'B', keyFingerprint: 'ka' }];
    const { results } = decide(
      [item(order('COMPLETED', { merchantPosId: null }), shared)],
      state({ owners: { O1: 'B' } }),
    );
    expect(results[0]).toMatchObject({ outcome: 'accepted', posId: 'B' });
  });

  it("When a refund recorded under an order names another order, then both orders' POS must vouch for it", () => {
    const given = state({
      orders: [order('COMPLETED')],
      refunds: [refund('PENDING')],
      owners: { O1: 'A', O2: 'B' },
      sequences: { O1: 2 },
    });
    expect(decide([item(refund('FINALIZED', { orderId: 'O2' }), [KEY_A])], given).results[0]).toMatchObject({
      outcome: 'refused',
    });
  });
});

describe('decideBatch: facts never change once known', () => {
  it('When a later notification states another amount, currency, extOrderId or POS, then the first values stay and each disagreement is recorded', () => {
    const shared = [KEY_A, { posId: 'B', keyFingerprint: 'ka' }];
    const { results, writes } = decide(
      [
        item(
          order('COMPLETED', { totalAmount: '1', currencyCode: 'EUR', extOrderId: 'E9', merchantPosId: 'B' }),
          shared,
        ),
      ],
      state({ orders: [order('PENDING')], owners: { O1: 'A' }, sequences: { O1: 1 } }),
    );
    expect(results[0]).toMatchObject({
      outcome: 'accepted',
      disagreements: ['merchantPosId', 'extOrderId', 'totalAmount', 'currencyCode'],
    });
    expect(writes.orders[0]?.projection).toMatchObject({
      status: 'COMPLETED',
      totalAmount: '15000',
      currencyCode: 'PLN',
      extOrderId: 'E1',
      merchantPosId: 'A',
    });
    expect(writes.events[0]?.data).toMatchObject({ totalAmount: '15000', merchantPosId: 'A', extOrderId: 'E1' });
    expect(writes.newNotifications[0]?.disagreements).toEqual([
      { field: 'merchantPosId', kept: 'A', received: 'B' },
      { field: 'extOrderId', kept: 'E1', received: 'E9' },
      { field: 'totalAmount', kept: '15000', received: '1' },
      { field: 'currencyCode', kept: 'PLN', received: 'EUR' },
    ]);
  });

  it('When the first notification lacked a fact, then a later one fills it in without a disagreement', () => {
    const { results, writes } = decide(
      [item(order('COMPLETED', { totalAmount: '15000' }))],
      state({ orders: [order('PENDING', { totalAmount: null })], owners: { O1: 'A' } }),
    );
    expect(results[0]).toMatchObject({ disagreements: [] });
    expect(writes.orders[0]?.projection.totalAmount).toBe('15000');
  });

  it('When a refund recorded under one order names another (same POS), then it stays under the first, its event goes to that stream, and the disagreement is recorded', () => {
    const { results, writes } = decide(
      [item(refund('CANCELED', { orderId: 'O2', amount: '1' }))],
      state({
        orders: [order('COMPLETED')],
        refunds: [refund('FINALIZED')],
        owners: { O1: 'A', O2: 'A' },
        sequences: { O1: 3, O2: 7 },
      }),
    );
    expect(results[0]).toMatchObject({ outcome: 'conflict', disagreements: ['orderId', 'amount'] });
    expect(writes.events[0]).toMatchObject({
      type: 'refund.status_conflict',
      subject: 'O1',
      data: { orderId: 'O1', sequence: 4, amount: '500' },
    });
    expect(writes.sequences).toEqual([{ orderId: 'O1', lastSequence: 4 }]);
    expect(writes.newNotifications[0]?.orderId).toBe('O1');
  });

  it('When a refund moves on to a final status while naming another order, then it applies under its own order', () => {
    const { writes } = decide(
      [item(refund('FINALIZED', { orderId: 'O2' }))],
      state({ refunds: [refund('PENDING')], owners: { O1: 'A' }, sequences: { O1: 1 } }),
    );
    expect(writes.refunds[0]?.projection).toMatchObject({ orderId: 'O1', status: 'FINALIZED' });
    expect(writes.owners).toEqual([{ orderId: 'O2', posId: 'A' }]);
    expect(writes.events[0]).toMatchObject({ subject: 'O1', data: { sequence: 2 } });
  });
});

describe('decideBatch: history retention', () => {
  it('When a status was recorded but retention removed its history, then it is recorded again, stale, with no event', () => {
    const completed = order('COMPLETED');
    const given = state({ orders: [completed], owners: { O1: 'A' }, sequences: { O1: 2 } });
    // The projection remembers COMPLETED, but its day is gone: the read found no record of it.
    const stored = {
      ...given,
      orders: new Map([
        ['O1', { projection: projectionOf(completed), recorded: { COMPLETED: { id: '7', at: EARLIER } } }],
      ]),
    };
    const { results, writes } = decide([item(completed)], stored);
    expect(results[0]).toMatchObject({
      outcome: 'stale',
      currentStatus: 'COMPLETED',
      notificationId: '101',
      eventsWritten: 0,
    });
    expect(writes.events).toEqual([]);
    expect(writes.orders).toEqual([
      { projection: projectionOf(completed), recorded: { COMPLETED: { id: '101', at: NOW } } },
    ]);
  });
});
