import {
  NOT_SHOWN_WHY,
  readableBody,
  REDACTED,
  redactedLine,
  redactPersonalData,
  whyShown,
} from '../../../src/domain/personalData';
import { orderNotificationBody, refundNotificationBody } from '../../../src/simulator/bodies';

const order = {
  orderId: 'ORDER-1',
  extOrderId: 'shop-1',
  orderCreateDate: '2026-11-28T10:00:00.000+01:00',
  notifyUrl: 'https://shop.example/notify',
  customerIp: '203.0.113.9',
  merchantPosId: '300746',
  description: 'Order for Jan Kowalski, Ulica 5',
  currencyCode: 'PLN',
  totalAmount: '15000',
  products: [{ name: 'A gift for Anna', unitPrice: '15000', quantity: '1' }],
  buyer: {
    customerId: 'c-1',
    email: 'jan@example.com',
    phone: '+48 600 000 000',
    firstName: 'Jan',
    lastName: 'Kowalski',
    language: 'pl',
  },
  payMethod: 'card' as const,
  paymentId: '9001',
};
const PERSONAL = ['203.0.113.9', 'Kowalski', 'jan@example.com', '600 000', 'Anna', 'shop.example', 'c-1'];

describe('personal data', () => {
  it('When an order notification is read without the right, then only its ids, amounts, currency, status, dates and pay method type are shown', () => {
    const body = orderNotificationBody(order, 'COMPLETED', {
      localReceiptDateTime: '2026-11-28T10:01:00',
      withPaymentId: true,
    });
    const seen = redactPersonalData(JSON.parse(body.toString('utf8')));
    expect(seen).toEqual({
      order: {
        orderId: 'ORDER-1',
        extOrderId: 'shop-1',
        orderCreateDate: '2026-11-28T10:00:00.000+01:00',
        notifyUrl: REDACTED,
        customerIp: REDACTED,
        merchantPosId: '300746',
        description: REDACTED,
        currencyCode: 'PLN',
        totalAmount: '15000',
        buyer: REDACTED,
        payMethod: { type: 'CARD_TOKEN' },
        status: 'COMPLETED',
        products: REDACTED,
      },
      localReceiptDateTime: '2026-11-28T10:01:00',
      properties: [{ name: 'PAYMENT_ID', value: '9001' }],
    });
    for (const secret of PERSONAL) expect(JSON.stringify(seen)).not.toContain(secret);
  });

  it('When a refund notification is read without the right, then its reason and description are shown: they are the payment service’s words, not personal data', () => {
    const body = refundNotificationBody(order, {
      refundId: 'R-1',
      extRefundId: 'shop-r-1',
      amount: '5000',
      currencyCode: 'PLN',
      status: 'FINALIZED',
      statusDateTime: '2026-11-28T11:00:00.000+01:00',
      reason: 'refund',
      reasonDescription: 'refund rejected by the bank',
      refundDate: '2026-11-28T10:59:00.000+01:00',
    });
    expect(redactPersonalData(JSON.parse(body.toString('utf8')))).toEqual({
      orderId: 'ORDER-1',
      extOrderId: 'shop-1',
      refund: {
        refundId: 'R-1',
        extRefundId: 'shop-r-1',
        amount: '5000',
        currencyCode: 'PLN',
        status: 'FINALIZED',
        statusDateTime: '2026-11-28T11:00:00.000+01:00',
        reason: 'refund',
        reasonDescription: 'refund rejected by the bank',
        refundDate: '2026-11-28T10:59:00.000+01:00',
      },
    });
  });

  it('When a body holds a field unknown today, at any depth, then its value is redacted', () => {
    const seen = redactPersonalData({
      order: {
        orderId: 'O',
        loyaltyCard: '1234 5678',
        payMethod: { type: 'PBL', cardHolder: 'Jan' },
        status: { x: 1 },
      },
      shipping: { address: 'Ulica 5' },
      properties: [{ name: 'BUYER_NOTE', value: 'call Jan' }, 'Jan'],
      orderId: ['O'],
    });
    expect(seen).toEqual({
      order: {
        orderId: 'O',
        loyaltyCard: REDACTED,
        payMethod: { type: 'PBL', cardHolder: REDACTED },
        status: REDACTED,
      },
      shipping: REDACTED,
      properties: [{ name: 'BUYER_NOTE', value: REDACTED }, REDACTED],
      orderId: REDACTED,
    });
    expect(redactPersonalData(['Jan'])).toBe(REDACTED);
  });

  it('When a viewer may not see personal data, then the readable body is redacted and the raw bytes withheld', () => {
    const body = orderNotificationBody(order, 'COMPLETED', { withPaymentId: true });
    const { readable, raw } = readableBody(body, { personalData: false });
    for (const secret of PERSONAL) expect(readable).not.toContain(secret);
    expect(readable).toContain(REDACTED);
    expect(raw).toBeNull();
    expect(readableBody(Buffer.from('not json jan@example.com'), { personalData: false })).toEqual({
      readable: REDACTED,
      raw: null,
    });
  });

  it('When personal data may be shown, then the body is pretty-printed and given as received', () => {
    const body = orderNotificationBody(order, 'COMPLETED', { withPaymentId: true });
    const { readable, raw } = readableBody(body, { personalData: true });
    expect(readable).toContain('jan@example.com');
    expect(raw).toBe(body.toString('utf8'));
  });

  it('When a body is printed on one line, then it is redacted, and one that is not JSON is only described', () => {
    const body = orderNotificationBody(order, 'PENDING', { withPaymentId: false });
    expect(JSON.parse(redactedLine(body))).toMatchObject({ order: { orderId: 'ORDER-1', customerIp: REDACTED } });
    expect(redactedLine(Buffer.from('jan@example.com'))).toBe('(15 bytes, not JSON: not shown)');
  });

  it('When a field is shown, then the allowlist says why it is not personal data', () => {
    for (const path of ['order.orderId', 'refund.reason', 'refund.reasonDescription', 'localReceiptDateTime']) {
      expect(whyShown(path)).toEqual(expect.any(String));
    }
    expect(whyShown('order.buyer.email')).toBeNull();
    expect(NOT_SHOWN_WHY.get('order.buyer')).toMatch(/name, e-mail/);
  });
});
