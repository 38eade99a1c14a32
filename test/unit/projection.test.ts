import type { Notification, OrderNotification, RefundNotification } from '../../src/parsing/notification';
import { applyNotifications, type ProjectionState } from '../../src/recording/projection';

const empty = (): ProjectionState => ({ orders: new Map(), refunds: new Map(), sequences: new Map() });

const order = (status: OrderNotification['status'], fields: Partial<OrderNotification> = {}): OrderNotification => ({
  kind: 'order',
  orderId: 'O1',
  extOrderId: 'E1',
  merchantPosId: '300746',
  status,
  totalAmount: '15000',
  currencyCode: 'PLN',
  paymentId: null,
  payMethodType: null,
  localReceiptDateTime: null,
  ...fields,
});

const refund = (
  status: RefundNotification['status'],
  fields: Partial<RefundNotification> = {},
): RefundNotification => ({
  kind: 'refund',
  orderId: 'O1',
  extOrderId: 'E1',
  refundId: 'R1',
  extRefundId: null,
  status,
  amount: '500',
  currencyCode: 'PLN',
  statusDateTime: null,
  refundDate: null,
  reason: null,
  reasonDescription: null,
  ...fields,
});

const apply = (state: ProjectionState, notifications: Notification[]) =>
  applyNotifications(
    state,
    notifications.map((notification, i) => ({ notificationId: String(i + 1), notification })),
    'urn:test',
    new Date('2026-11-22T00:00:00Z'),
  );

describe('applyNotifications', () => {
  it('When a lifecycle arrives in one batch, then each step applies in turn with consecutive sequences', () => {
    const result = apply(empty(), [
      order('PENDING'),
      order('COMPLETED', { payMethodType: 'PBL' }),
      refund('FINALIZED'),
    ]);
    expect(result.applied.map((a) => [a.outcome, a.previousStatus, a.event?.type, a.event?.data.sequence])).toEqual([
      ['applied', null, 'order.pending', 1],
      ['applied', 'PENDING', 'order.completed', 2],
      ['applied', null, 'refund.finalized', 3],
    ]);
    expect(result.orders).toEqual([
      expect.objectContaining({ orderId: 'O1', status: 'COMPLETED', payMethodType: 'PBL' }),
    ]);
    expect(result.refunds).toEqual([expect.objectContaining({ refundId: 'R1', status: 'FINALIZED' })]);
    expect(result.sequences).toEqual(new Map([['O1', 3]]));
  });

  it('When the order already has events, then numbering continues from its last sequence', () => {
    const state = empty();
    state.orders.set('O1', { ...order('PENDING'), orderId: 'O1' });
    state.sequences.set('O1', 4);
    expect(apply(state, [order('COMPLETED')]).applied[0]?.event?.data.sequence).toBe(5);
  });

  it('When a stale notification arrives, then nothing changes and no event or sequence is used', () => {
    const state = empty();
    state.orders.set('O1', order('COMPLETED'));
    state.sequences.set('O1', 2);
    const result = apply(state, [order('PENDING')]);
    expect(result.applied).toEqual([{ outcome: 'stale', previousStatus: 'COMPLETED', event: null }]);
    expect(result.orders).toEqual([]);
    expect(result.sequences.size).toBe(0);
  });

  it('When CANCELED follows COMPLETED, then a conflict event is written and the projection keeps COMPLETED', () => {
    const state = empty();
    state.orders.set('O1', order('COMPLETED', { paymentId: 'P1' }));
    const result = apply(state, [order('CANCELED')]);
    expect(result.applied[0]).toMatchObject({
      outcome: 'conflict',
      previousStatus: 'COMPLETED',
      event: {
        type: 'order.status_conflict',
        data: { status: 'CANCELED', previousStatus: 'COMPLETED', paymentId: 'P1', sequence: 1 },
      },
    });
    expect(result.orders).toEqual([]);
  });

  it('When a later notification lacks fields, then the projection and its event keep the earlier values', () => {
    const result = apply(empty(), [
      order('PENDING', { paymentId: 'P1', payMethodType: 'CARD_TOKEN' }),
      order('CANCELED', { extOrderId: null }),
    ]);
    expect(result.orders[0]).toMatchObject({
      status: 'CANCELED',
      paymentId: 'P1',
      payMethodType: 'CARD_TOKEN',
      extOrderId: 'E1',
    });
    expect(result.applied[1]?.event?.data).toMatchObject({ paymentId: 'P1', extOrderId: 'E1' });
  });

  it('When the input state is given, then it is not modified', () => {
    const state = empty();
    state.orders.set('O1', order('PENDING'));
    apply(state, [order('COMPLETED')]);
    expect(state.orders.get('O1')?.status).toBe('PENDING');
  });

  it('When a refund knows its extRefundId, then the event carries it; otherwise the field is absent', () => {
    const [withId, withoutId] = apply(empty(), [
      refund('FINALIZED', { extRefundId: 'X1' }),
      refund('PENDING', { refundId: 'R2' }),
    ]).applied;
    expect(withId?.event?.data).toMatchObject({ extRefundId: 'X1' });
    expect(withoutId?.event?.data).not.toHaveProperty('extRefundId');
  });
});
