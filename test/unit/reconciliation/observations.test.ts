import { createHash } from 'node:crypto';
import type { ApiAnswer, RetrievedOrder, RetrievedRefund } from '../../../src/paymentApi/paymentApi';
import {
  hasRefunds,
  orderObservation,
  PAYMENT_API_FINGERPRINT,
  posToAsk,
  refundObservations,
} from '../../../src/reconciliation/observations';

describe('which POS asks', () => {
  it.each<[string | undefined, string | undefined, string[], ReturnType<typeof posToAsk>]>([
    ['300746', undefined, ['300746', '145227'], { posId: '300746' }],
    ['300746', '300746', ['300746', '145227'], { posId: '300746' }],
    ['300746', '145227', ['300746', '145227'], { problem: 'pos_mismatch' }],
    [undefined, '145227', ['300746', '145227'], { posId: '145227' }],
    [undefined, undefined, ['300746'], { posId: '300746' }],
    [undefined, undefined, ['300746', '145227'], { problem: 'pos_required' }],
    [undefined, '999999', ['300746'], { problem: 'unknown_pos' }],
  ])('When the owner is %p and %p is asked for among %j, then %j', (owner, requested, configured, expected) => {
    expect(posToAsk(owner, requested, configured)).toEqual(expected);
  });
});

describe('what the API says, as observations', () => {
  const order: RetrievedOrder = {
    orderId: 'ORDER1',
    extOrderId: 'ext-1',
    merchantPosId: '300746',
    status: 'COMPLETED',
    totalAmount: '15000',
    currencyCode: 'PLN',
    paymentId: '5000001',
    payMethodType: 'CARD_TOKEN',
    orderCreateDate: null,
  };
  const answer = <T>(value: T, text: string): ApiAnswer<T> => ({
    body: Buffer.from(text),
    value,
    correlationId: null,
  });

  it('When the API shows a completed order, then it is the order notification of that meaning, with its payment method, vouched for by the asking POS, with the answer as its body', () => {
    const observed = orderObservation('300746', answer(order, '{"orders":[]}'));
    expect(observed?.notification).toEqual({
      kind: 'order',
      orderId: 'ORDER1',
      extOrderId: 'ext-1',
      merchantPosId: '300746',
      status: 'COMPLETED',
      totalAmount: '15000',
      currencyCode: 'PLN',
      paymentId: '5000001',
      payMethodType: 'CARD_TOKEN',
      localReceiptDateTime: null,
    });
    expect(observed?.delivery).toEqual({
      observedVia: 'reconciliation',
      body: Buffer.from('{"orders":[]}'),
      bodySha256: createHash('sha256').update('{"orders":[]}').digest(),
      signers: [{ posId: '300746', keyFingerprint: PAYMENT_API_FINGERPRINT }],
      sourceAddress: null,
      processingTimeMs: null,
    });
  });

  it('When the API shows NEW, then there is nothing to record', () => {
    expect(orderObservation('300746', answer({ ...order, status: 'NEW' }, '{}'))).toBeNull();
    expect(hasRefunds({ ...order, status: 'PENDING' })).toBe(false);
    expect(hasRefunds(order)).toBe(true);
  });

  it('When the API lists refunds, then each is a refund notification under the order', () => {
    const refund: RetrievedRefund = {
      refundId: 'R1',
      extRefundId: null,
      amount: '4500',
      currencyCode: 'PLN',
      status: 'FINALIZED',
      statusDateTime: '2026-11-25T09:00:00.000+01:00',
      creationDateTime: null,
      statusError: null,
    };
    const [observed] = refundObservations('300746', order, answer([refund], '{"refunds":[]}'));
    expect(observed?.notification).toMatchObject({
      kind: 'refund',
      orderId: 'ORDER1',
      refundId: 'R1',
      status: 'FINALIZED',
    });
    expect(observed?.delivery.observedVia).toBe('reconciliation');
  });
});
