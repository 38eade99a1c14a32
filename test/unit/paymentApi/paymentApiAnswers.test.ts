import {
  errorCodesOf,
  parseOrderAnswer,
  parseRefundsAnswer,
  parseTokenAnswer,
} from '../../../src/paymentApi/paymentApiAnswers';
const json = (value: unknown): Buffer => Buffer.from(JSON.stringify(value), 'utf8');
const ORDER = {
  orderId: 'WZHF5FFDRJ140731GUEST000P01',
  extOrderId: '5e45160711d81',
  orderCreateDate: '2014-10-27T14:58:17.443+01:00',
  notifyUrl: 'http://localhost/OrderNotify/',
  customerIp: '127.0.0.1',
  merchantPosId: '145227',
  description: 'New order',
  currencyCode: 'PLN',
  totalAmount: '3200',
  status: 'COMPLETED',
  buyer: { email: 'john.doe@example.com', firstName: 'John' },
  payMethod: { type: 'PBL' },
  products: [{ name: 'Product1', unitPrice: '1000', quantity: '1' }],
};
const orderAnswer = (order: object = ORDER, extra: object = {}): Buffer =>
  json({
    orders: [order],
    status: { statusCode: 'SUCCESS', statusDesc: 'Request processed successfully' },
    properties: [{ name: 'PAYMENT_ID', value: '1234567890' }],
    ...extra,
  });

describe('parseOrderAnswer', () => {
  it('When the answer has the spec shape, then the order, its PAYMENT_ID, its payment method and amounts as digit strings are read, without buyer data', () => {
    const order = parseOrderAnswer(orderAnswer(), ORDER.orderId);
    expect(order).toEqual({
      orderId: ORDER.orderId,
      extOrderId: '5e45160711d81',
      merchantPosId: '145227',
      status: 'COMPLETED',
      totalAmount: '3200',
      currencyCode: 'PLN',
      paymentId: '1234567890',
      payMethodType: 'PBL',
      orderCreateDate: '2014-10-27T14:58:17.443+01:00',
    });
    expect(JSON.stringify(order)).not.toContain('john');
    const { payMethod: _none, ...unpaid } = ORDER;
    expect(parseOrderAnswer(orderAnswer({ ...unpaid, status: 'PENDING' }), ORDER.orderId).payMethodType).toBeNull();
  });

  it('When the order is NEW or PENDING without properties, then the status is read and paymentId is null', () => {
    for (const status of ['NEW', 'PENDING', 'WAITING_FOR_CONFIRMATION', 'CANCELED']) {
      const order = parseOrderAnswer(orderAnswer({ ...ORDER, status }, { properties: [] }), ORDER.orderId);
      expect(order).toMatchObject({ status, paymentId: null });
    }
    const noProperties = json({ orders: [ORDER], status: { statusCode: 'SUCCESS' } });
    expect(parseOrderAnswer(noProperties, ORDER.orderId).paymentId).toBeNull();
  });

  it('When numbers stand for strings (an integer amount or order id), then they are read as digits; unknown fields are ignored', () => {
    const order = parseOrderAnswer(
      orderAnswer({ ...ORDER, totalAmount: 3200, merchantPosId: 145227, somethingNew: { x: 1 } }),
      ORDER.orderId,
    );
    expect(order).toMatchObject({ totalAmount: '3200', merchantPosId: '145227' });
  });

  it.each([
    ['not JSON', Buffer.from('<html>busy</html>'), /not JSON/],
    ['not UTF-8', Buffer.from([0xff, 0xfe, 0x7b]), /not JSON/],
    ['an array', json([ORDER]), /not a JSON object/],
    ['no orders', json({ status: { statusCode: 'SUCCESS' } }), /orders must be an array/],
    ['another order only', orderAnswer({ ...ORDER, orderId: 'OTHER' }), /does not hold the order asked for/],
    ['an unknown status', orderAnswer({ ...ORDER, status: 'PAID' }), /orders\[\]\.status is not one of/],
    ['a float amount', orderAnswer({ ...ORDER, totalAmount: '32.00' }), /totalAmount must be a whole number/],
    ['no amount', orderAnswer({ ...ORDER, totalAmount: undefined }), /totalAmount is required/],
    ['no POS', orderAnswer({ ...ORDER, merchantPosId: undefined }), /merchantPosId is required/],
    ['a lower-case currency', orderAnswer({ ...ORDER, currencyCode: 'pln' }), /currencyCode must be an ISO 4217/],
    ['an error status', orderAnswer(ORDER, { status: { statusCode: 'DATA_NOT_FOUND' } }), /not SUCCESS/],
  ])('When the answer is %s, then it is refused as not in the spec shape, naming no value', (_, body, message) => {
    expect(() => parseOrderAnswer(body, ORDER.orderId)).toThrow(message);
    try {
      parseOrderAnswer(body, ORDER.orderId);
    } catch (error) {
      expect((error as Error).name).toBe('AnswerError');
      expect((error as Error).message).not.toMatch(/john|3200|PAID|OTHER/);
    }
  });
});

describe('parseRefundsAnswer', () => {
  it('When refunds are listed, then each record is read, a CANCELED one with its statusError', () => {
    const refunds = parseRefundsAnswer(
      json({
        refunds: [
          {
            refundId: '5000009987',
            extRefundId: '20200117103713',
            amount: '21000',
            currencyCode: 'PLN',
            description: 'Refund',
            creationDateTime: '2020-01-17T10:37:13.000+01:00',
            status: 'FINALIZED',
            statusDateTime: '2020-01-17T10:40:01.000+01:00',
          },
          {
            refundId: 5000009988,
            amount: 100,
            currencyCode: 'PLN',
            status: 'CANCELED',
            statusDateTime: '1579254001000',
            statusError: { code: 'PROVIDER_BANK_REJECT', description: 'Bank rejected the refund' },
          },
          { refundId: '5000009989', amount: '300', currencyCode: 'PLN', status: 'PENDING' },
        ],
      }),
    );
    expect(refunds).toEqual([
      {
        refundId: '5000009987',
        extRefundId: '20200117103713',
        amount: '21000',
        currencyCode: 'PLN',
        status: 'FINALIZED',
        statusDateTime: '2020-01-17T10:40:01.000+01:00',
        creationDateTime: '2020-01-17T10:37:13.000+01:00',
        statusError: null,
      },
      {
        refundId: '5000009988',
        extRefundId: null,
        amount: '100',
        currencyCode: 'PLN',
        status: 'CANCELED',
        statusDateTime: '2020-01-17T09:40:01.000Z',
        creationDateTime: null,
        statusError: { code: 'PROVIDER_BANK_REJECT', description: 'Bank rejected the refund' },
      },
      expect.objectContaining({ refundId: '5000009989', status: 'PENDING' }),
    ]);
  });

  it('When an order has no refunds, then the list is empty', () => {
    expect(parseRefundsAnswer(json({ refunds: [] }))).toEqual([]);
    expect(parseRefundsAnswer(json({}))).toEqual([]);
  });

  it.each([
    ['refunds not an array', json({ refunds: {} })],
    ['a refund without id', json({ refunds: [{ amount: '1', status: 'FINALIZED' }] })],
    ['an unknown refund status', json({ refunds: [{ refundId: '1', status: 'DONE' }] })],
    ['a negative amount', json({ refunds: [{ refundId: '1', status: 'FINALIZED', amount: '-5' }] })],
  ])('When the list has %s, then it is refused', (_, body) => {
    expect(() => parseRefundsAnswer(body)).toThrow(expect.objectContaining({ name: 'AnswerError' }));
  });
});

describe('parseTokenAnswer', () => {
  it('When the token answer has the spec shape, then the token and its lifetime are read', () => {
    expect(
      parseTokenAnswer(
        json({
          access_token: '7524f96e-2d22-45da-bc64-778a61cbfc26',
          token_type: 'bearer',
          expires_in: 43199,
          grant_type: 'client_credentials',
        }),
      ),
    ).toEqual({ accessToken: '7524f96e-2d22-45da-bc64-778a61cbfc26', expiresInSeconds: 43199 });
  });

  it.each([
    ['no token', { token_type: 'bearer', expires_in: 10 }],
    ['a token with a space', { access_token: 'a b', token_type: 'bearer', expires_in: 10 }],
    ['another token type', { access_token: 'a', token_type: 'mac', expires_in: 10 }],
    ['no lifetime', { access_token: 'a', token_type: 'bearer' }],
    ['a lifetime in a string', { access_token: 'a', token_type: 'bearer', expires_in: '10' }],
  ])('When the answer has %s, then it is refused without echoing the token', (_, answer) => {
    expect(() => parseTokenAnswer(json(answer))).toThrow(expect.objectContaining({ name: 'AnswerError' }));
  });
});

describe('errorCodesOf', () => {
  it('When an error answer has a status object, then its codes are read; otherwise none', () => {
    expect(
      errorCodesOf(json({ status: { statusCode: 'ERROR_VALUE_INVALID', codeLiteral: 'INVALID_AUTH_FOR_THIS_ORDER' } })),
    ).toEqual({ statusCode: 'ERROR_VALUE_INVALID', codeLiteral: 'INVALID_AUTH_FOR_THIS_ORDER' });
    expect(errorCodesOf(Buffer.from('Bad gateway'))).toEqual({ statusCode: null, codeLiteral: null });
  });
});
