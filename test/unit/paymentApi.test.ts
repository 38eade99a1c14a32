import { errorCodesOf, parseOrderAnswer, parseRefundsAnswer, parseTokenAnswer } from '../../src/paymentApi/answers';
import { parsePaymentApiCredentials } from '../../src/paymentApi/credentials';
import { createRequestLimiter } from '../../src/paymentApi/requestLimiter';
import { isRetryableStatus, nextRequestStart, parseRetryAfter } from '../../src/paymentApi/retryPolicy';

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

describe('parsePaymentApiCredentials', () => {
  it('When entries are posId:clientId:clientSecret, then each POS gets its client; the secret may hold ":"', () => {
    expect(parsePaymentApiCredentials(' 145227:145227:12f071174cb7eb79d4aac5bc2f07563f , 300746:c2:a:b ')).toEqual({
      credentials: [
        { posId: '145227', clientId: '145227', clientSecret: '12f071174cb7eb79d4aac5bc2f07563f' },
        { posId: '300746', clientId: 'c2', clientSecret: 'a:b' },
      ],
      problems: [],
    });
  });

  it.each([
    ['', ["entry 1 is empty (a stray ',')"]],
    ['1:c:s;2:d:t', ["entry 1 holds a space or ';': entries are separated by ','"]],
    ['1:c', ['entry 1 is not of the form posId:clientId:clientSecret']],
    [
      '1:c:s,2::s,3:c:',
      [
        'entry 2 is not of the form posId:clientId:clientSecret',
        'entry 3 is not of the form posId:clientId:clientSecret',
      ],
    ],
    ['1:c:s,1:d:t', ['entry 2: POS 1 appears more than once (one client per POS)']],
  ])('When the value is %p, then the problems name entries, never their secrets', (value, problems) => {
    expect(parsePaymentApiCredentials(value).problems).toEqual(problems);
  });
});

describe('parseRetryAfter', () => {
  const now = Date.parse('2026-11-25T08:00:00Z');

  it.each([
    ['3', 3000],
    [' 0 ', 0],
    ['Wed, 25 Nov 2026 08:00:10 GMT', 10_000],
    ['Wed, 25 Nov 2026 07:59:00 GMT', 0],
    ['soon', null],
    ['-1', null],
    ['1.5', null],
    // Past 15 minutes the wait is cut: neither a weeks-long pause nor a timer overflowing into a busy loop.
    ['900', 900_000],
    ['901', 900_000],
    ['2147483', 900_000],
    ['999999999', 900_000],
    ['99999999999999999999999', 900_000],
    ['Fri, 01 Jan 2100 00:00:00 GMT', 900_000],
  ])('When Retry-After is %p, then the wait is %p ms', (value, ms) => {
    expect(parseRetryAfter(value, now)).toBe(ms);
  });

  it('When there is no Retry-After, then there is no wait', () => {
    expect(parseRetryAfter(null, now)).toBeNull();
  });
});

describe('isRetryableStatus', () => {
  it('When the answer is 408, 429 or 5xx, then it is worth another attempt; 4xx otherwise are not', () => {
    expect([408, 429, 500, 502, 503, 504].every(isRetryableStatus)).toBe(true);
    expect([200, 400, 401, 403, 404].some(isRetryableStatus)).toBe(false);
  });
});

describe('nextRequestStart', () => {
  it('When requests come at once, then a burst of perSecond starts now and the rest one interval apart', () => {
    let state = 0;
    const starts: number[] = [];
    for (let i = 0; i < 6; i++) {
      const next = nextRequestStart(state, 1000, 4);
      state = next.theoreticalArrivalMs;
      starts.push(next.startAtMs);
    }
    expect(starts).toEqual([1000, 1000, 1000, 1000, 1250, 1500]);
  });

  it('When requests are spaced out, then none waits; below one per second, each waits its whole interval', () => {
    let state = 0;
    for (const now of [0, 300, 600, 900]) {
      const next = nextRequestStart(state, now, 4);
      expect(next.startAtMs).toBe(now);
      state = next.theoreticalArrivalMs;
    }
    const first = nextRequestStart(0, 0, 0.5);
    expect(first.startAtMs).toBe(0);
    expect(nextRequestStart(first.theoreticalArrivalMs, 0, 0.5).startAtMs).toBe(2000);
  });
});

describe('createRequestLimiter', () => {
  it('When more requests start at once than the per-second cap, then the later ones wait their turn', async () => {
    const sleeps: number[] = [];
    const acquire = createRequestLimiter({
      maxInFlight: 10,
      maxPerSecond: 4,
      now: () => 1000,
      sleep: (ms) => {
        sleeps.push(ms);
        return Promise.resolve();
      },
    });
    for (let i = 0; i < 6; i++) (await acquire())();
    expect(sleeps).toEqual([250, 500]);
  });

  it('When the in-flight cap is reached, then the next request waits for a place and gets it first come first served', async () => {
    const acquire = createRequestLimiter({
      maxInFlight: 2,
      maxPerSecond: 1000,
      now: () => 0,
      sleep: () => Promise.resolve(),
    });
    const first = await acquire();
    const second = await acquire();
    const order: string[] = [];
    const third = acquire().then((release) => (order.push('third'), release));
    const fourth = acquire().then((release) => (order.push('fourth'), release));
    await new Promise((resolve) => setImmediate(resolve));
    expect(order).toEqual([]);
    first();
    first(); // giving a place back twice frees one place only
    await third;
    await new Promise((resolve) => setImmediate(resolve));
    expect(order).toEqual(['third']);
    second();
    await fourth;
    expect(order).toEqual(['third', 'fourth']);
  });
});
