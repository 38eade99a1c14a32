import { NOTHING_READ, type BatchItem, type BatchState, type BatchWrites } from '../../../src/recording/batch';
import { KeptOrders } from '../../../src/recording/keptOrders';
import type { OrderNotification, RefundNotification } from '../../../src/parsing/notification';
import type { OrderProjection, RefundProjection } from '../../../src/recording/projection';
import type { StoredProjection } from '../../../src/recording/projectionFold';
import { deliveryOf, NO_WRITES, orderNotification, refundNotification } from '../../support/notifications';

const orderItem = (orderId: string, status: OrderNotification['status']): BatchItem => ({
  delivery: deliveryOf(),
  notification: orderNotification(orderId, status),
});

const refundItem = (orderId: string, refundId: string, status: RefundNotification['status']): BatchItem => ({
  delivery: deliveryOf(),
  notification: refundNotification(orderId, refundId, status),
});

const recordedAt = (statuses: string[]): StoredProjection<OrderProjection>['recorded'] =>
  Object.fromEntries(statuses.map((s, i) => [s, { id: String(i + 1), at: '2026-12-03T10:00:00Z' }]));

const stored = (orderId: string, statuses: string[]): StoredProjection<OrderProjection> => {
  const { kind: _kind, ...projection } = orderNotification(orderId, 'PENDING');
  return { projection, recorded: recordedAt(statuses) };
};

const storedRefund = (orderId: string, refundId: string): StoredProjection<RefundProjection> => {
  const { kind: _kind, ...projection } = refundNotification(orderId, refundId, 'PENDING');
  return { projection, recorded: { PENDING: { id: '9', at: '2026-12-03T10:00:00Z' } } };
};

/** Keeps orders as a write leaves them: each at revision `r-<order>`, owned by 300746, its stream at 1. */
function keep(kept: KeptOrders, orders: string[], refunds: Array<[string, string]> = []): void {
  const writes: BatchWrites = {
    ...NO_WRITES,
    orders: orders.map((id) => stored(id, ['PENDING'])),
    refunds: refunds.map(([orderId, refundId]) => storedRefund(orderId, refundId)),
    owners: orders.map((orderId) => ({ orderId, posId: '300746' })),
    sequences: orders.map((orderId) => ({ orderId, lastSequence: 1 })),
  };
  kept.keep(NOTHING_READ, writes, {
    orders: new Map(orders.map((id) => [id, `r-${id}`])),
    refunds: new Map(refunds.map(([, id]) => [id, `r-${id}`])),
  });
}

const decided = (kept: KeptOrders, ...items: BatchItem[]): BatchState | null =>
  kept.stateFor(items, ['101', '102'], '2026-12-03T10:00:00.000Z');

describe('KeptOrders', () => {
  it('When a batch is of kept orders, then its state is what was kept, with the revisions the write expects', () => {
    const kept = new KeptOrders(10);
    keep(kept, ['A']);
    const state = decided(kept, orderItem('A', 'COMPLETED'));
    expect(state?.orders.get('A')?.projection.orderId).toBe('A');
    expect(state?.owners.get('A')).toBe('300746');
    expect(state?.sequences.get('A')).toBe(1);
    expect(state?.revisions.orders.get('A')).toBe('r-A');
    expect(state?.newIds).toEqual(['101', '102']);
  });

  it('When an order not kept comes with its first status, then it is taken for new, its later statuses in the batch too; alone, a later one must be read', () => {
    const kept = new KeptOrders(10);
    expect(decided(kept, orderItem('NEW', 'PENDING'))?.orders.size).toBe(0);
    expect(decided(kept, orderItem('NEW', 'PENDING'), orderItem('NEW', 'COMPLETED'))?.orders.size).toBe(0);
    expect(decided(kept, orderItem('NEW', 'PENDING'), refundItem('NEW', 'RN', 'FINALIZED'))?.refunds.size).toBe(0);
    expect(decided(kept, orderItem('NEW', 'COMPLETED'))).toBeNull();
    expect(decided(kept, orderItem('NEW', 'COMPLETED'), orderItem('NEW', 'PENDING'))).toBeNull();
  });

  it('When a status its kept projection recorded comes again, then the batch must read its history', () => {
    const kept = new KeptOrders(10);
    keep(kept, ['A']);
    expect(decided(kept, orderItem('A', 'COMPLETED'), orderItem('A', 'PENDING'))).toBeNull();
  });

  it('When a refund comes, then its order must be kept; one not kept is taken for new, one kept under another order brings that order along', () => {
    const kept = new KeptOrders(10);
    keep(kept, ['A', 'B'], [['B', 'R1']]);
    expect(decided(kept, refundItem('X', 'R2', 'PENDING'))).toBeNull();
    expect(decided(kept, refundItem('A', 'R2', 'PENDING'))?.refunds.size).toBe(0);
    expect(decided(kept, refundItem('A', 'R3', 'FINALIZED'))?.refunds.size).toBe(0);
    const state = decided(kept, refundItem('A', 'R1', 'FINALIZED'));
    expect([...(state?.orders.keys() ?? [])].sort()).toEqual(['A', 'B']);
    expect(state?.revisions.refunds.get('R1')).toBe('r-R1');
    expect(decided(kept, refundItem('A', 'R1', 'PENDING'))).toBeNull();
  });

  it('When more orders are kept than the capacity, then the least recently used go, with their refunds', () => {
    const kept = new KeptOrders(2);
    keep(kept, ['A'], [['A', 'RA']]);
    keep(kept, ['B']);
    keep(kept, ['A']);
    keep(kept, ['C']);
    expect(kept.size).toBe(2);
    expect(decided(kept, orderItem('B', 'COMPLETED'))).toBeNull();
    expect(decided(kept, orderItem('A', 'COMPLETED'))).not.toBeNull();
    keep(kept, ['D']);
    keep(kept, ['E']);
    // RA went with A: a refund of a kept order not kept is taken for new, its write checks it is not there.
    expect(decided(kept, refundItem('E', 'RA', 'FINALIZED'))?.refunds.has('RA')).toBe(false);
  });

  it("When a refund came before its order, then the order's PENDING reads (its owner and stream are there), until its projection is kept", () => {
    const kept = new KeptOrders(10);
    // A refund of an order with no projection yet: the write binds the order and counts its event, nothing else.
    kept.keep(
      NOTHING_READ,
      { ...NO_WRITES, owners: [{ orderId: 'A', posId: '300746' }], sequences: [{ orderId: 'A', lastSequence: 1 }] },
      { orders: new Map(), refunds: new Map() },
    );
    expect(decided(kept, orderItem('A', 'PENDING'))).toBeNull();
    expect(decided(kept, orderItem('B', 'PENDING'))).not.toBeNull();
    keep(kept, ['A']);
    expect(decided(kept, orderItem('A', 'COMPLETED'))?.owners.get('A')).toBe('300746');
  });

  it('When orders are forgotten or everything is cleared, then their batches read; with a capacity of 0, every batch reads', () => {
    const kept = new KeptOrders(10);
    keep(kept, ['A', 'B']);
    kept.forget(['A']);
    expect(decided(kept, orderItem('A', 'COMPLETED'))).toBeNull();
    expect(decided(kept, orderItem('B', 'COMPLETED'))).not.toBeNull();
    kept.clear();
    expect(decided(kept, orderItem('B', 'COMPLETED'))).toBeNull();
    const off = new KeptOrders(0);
    keep(off, ['A']);
    expect(decided(off, orderItem('NEW', 'PENDING'))).toBeNull();
  });
});
