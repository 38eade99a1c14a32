import fc from 'fast-check';
import { idProblem } from '../../../src/parsing/identifiers';
import { parseNotification } from '../../../src/parsing/parseNotification';
import { fixture, fixtures } from '../../support/fixtures';

const parse = (value: unknown) =>
  parseNotification(Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)));
const order = (fields: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
  parse({ order: { orderId: 'O1', status: 'PENDING', ...fields }, ...extra });

describe('parseNotification', () => {
  it('When a captured COMPLETED order is read, then every projected field is taken from it', () => {
    expect(parseNotification(Buffer.from(fixture('real-01').body))).toEqual({
      ok: true,
      notification: {
        kind: 'order',
        orderId: 'PB68465GCH200213GUEST000P01',
        extOrderId: '5e45160711d81',
        merchantPosId: '300746',
        status: 'COMPLETED',
        totalAmount: '15000',
        currencyCode: 'PLN',
        paymentId: '76258454',
        payMethodType: 'CARD_TOKEN',
        localReceiptDateTime: '2020-02-13T10:25:40.528+01:00',
      },
    });
  });

  it('When a refund made in the panel lacks amount, currency and statusDateTime, then it is still read', () => {
    expect(parseNotification(Buffer.from(fixture('real-15').body))).toEqual({
      ok: true,
      notification: {
        kind: 'refund',
        orderId: 'DHRGFXKV5B201103GUEST000P01',
        extOrderId: '50024',
        refundId: '5000024357',
        extRefundId: null,
        status: 'FINALIZED',
        amount: null,
        currencyCode: null,
        statusDateTime: null,
        refundDate: '2020-11-03T17:58:46.567+01:00',
        reason: 'refund',
        reasonDescription: null,
      },
    });
  });

  it('When every captured body is read, then orders and refunds with a status are understood', () => {
    for (const f of fixtures.filter((x) => x.status !== null)) {
      const result = parseNotification(Buffer.from(f.body));
      expect({ id: f.id, ok: result.ok, kind: result.ok && result.notification.kind }).toEqual({
        id: f.id,
        ok: true,
        kind: f.kind,
      });
    }
  });

  it.each([
    ['1712345678901', '2024-04-05T19:34:38.901Z'],
    [1712345678901, '2024-04-05T19:34:38.901Z'],
    ['2014-08-20T19:43:31.418+02:00', '2014-08-20T19:43:31.418+02:00'],
    ['2020-02-13T10:25:40', '2020-02-13T10:25:40'],
    ['2020-02-13T10:25:40Z', '2020-02-13T10:25:40Z'],
  ])('When a timestamp is %p, then it is read as %s', (value, expected) => {
    const result = parse({ orderId: 'O', refund: { refundId: 'R', status: 'FINALIZED', statusDateTime: value } });
    expect(result.ok && result.notification.kind === 'refund' && result.notification.statusDateTime).toBe(expected);
  });

  it.each([
    ['15000', '15000'],
    [15000, '15000'],
    ['007', '7'],
    ['0', '0'],
  ])('When totalAmount is %p, then it is kept exactly as %s', (value, expected) => {
    const result = order({ totalAmount: value });
    expect(result.ok && result.notification.kind === 'order' && result.notification.totalAmount).toBe(expected);
  });

  it.each([['-1'], [-1], ['1.5'], [1.5], ['1e3'], [1e300], ['99999999999999999999'], [true], [{}]])(
    'When totalAmount is %p, then the body is quarantined as invalid_field',
    (value) => {
      expect(order({ totalAmount: value })).toMatchObject({ ok: false, reason: 'invalid_field' });
    },
  );

  it('When unknown fields are present, including __proto__ and constructor, then they are ignored', () => {
    const body =
      '{"__proto__":{"polluted":1},"constructor":{"x":1},"order":{"orderId":"O1","status":"PENDING","newField":[1,2]},"more":null}';
    expect(parseNotification(Buffer.from(body))).toMatchObject({ ok: true, notification: { orderId: 'O1' } });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it.each([
    [Buffer.from([0x7b, 0xff, 0x7d]), 'invalid_utf8'],
    [Buffer.from('{"order":'), 'not_json'],
    [Buffer.from('[1,2]'), 'unknown_shape'],
    [Buffer.from('{"something":"else"}'), 'unknown_shape'],
    [Buffer.from('{"order":{"orderId":"O"},"refund":{"refundId":"R"}}'), 'unknown_shape'],
    [Buffer.from('{"order":{"orderId":"orderId"}}'), 'invalid_field'],
    [Buffer.from('{"order":{"orderId":"O","status":"SHIPPED"}}'), 'invalid_field'],
    [Buffer.from('{"order":{"orderId":"O\\u0000","status":"PENDING"}}'), 'invalid_field'],
    [Buffer.from('{"order":{"orderId":"O\\u001f1","status":"PENDING"}}'), 'invalid_field'],
    [Buffer.from('{"order":{"orderId":"O","status":"PENDING","currencyCode":"zł"}}'), 'invalid_field'],
    [Buffer.from('['.repeat(100_000) + ']'.repeat(100_000)), 'too_deep'],
  ])('When the body is %#, then it is quarantined as %s', (body, reason) => {
    expect(parseNotification(body)).toMatchObject({ ok: false, reason });
  });

  it('When given arbitrary bytes, then it never throws and always gives a result', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 512 }), (bytes) => {
        const result = parseNotification(Buffer.from(bytes));
        expect(typeof result.ok).toBe('boolean');
      }),
    );
  });

  it('When given arbitrary JSON, then it never throws', () => {
    fc.assert(
      fc.property(fc.json(), fc.jsonValue(), (json, value) => {
        parseNotification(Buffer.from(json));
        parseNotification(Buffer.from(JSON.stringify({ order: value })));
        parseNotification(Buffer.from(JSON.stringify({ orderId: 'O', refund: value })));
      }),
    );
  });
});

describe('parseNotification: values Postgres or Date cannot hold', () => {
  it.each([
    [
      '{"order":{"orderId":"O","status":"COMPLETED"},"localReceiptDateTime":9007199254740991}',
      'beyond the representable date range',
    ],
    [
      '{"order":{"orderId":"O","status":"COMPLETED"},"localReceiptDateTime":8640000000000001}',
      'beyond the representable date range',
    ],
    ['{"order":{"orderId":"O\\ud800","status":"PENDING"}}', 'unpaired surrogate'],
    [
      '{"orderId":"O","refund":{"refundId":"R","status":"FINALIZED","reasonDescription":"x\\udc00y"}}',
      'unpaired surrogate',
    ],
  ])('When the body is %s, then it is quarantined (%s), never an error', (body, detail) => {
    expect(parseNotification(Buffer.from(body))).toMatchObject({
      ok: false,
      reason: 'invalid_field',
      detail: expect.stringContaining(detail),
    });
  });

  it('When an id is longer than the admin API and the payment-API client take (128), then it is quarantined', () => {
    expect(order({ orderId: 'A'.repeat(128) })).toMatchObject({ ok: true });
    expect(order({ orderId: 'A'.repeat(129) })).toMatchObject({ ok: false, reason: 'invalid_field' });
    expect(parse({ orderId: 'O', refund: { refundId: '1'.repeat(129), status: 'FINALIZED' } })).toMatchObject({
      ok: false,
      reason: 'invalid_field',
    });
  });

  it.each([
    ['..', 'dot segment'],
    ['.', 'dot segment'],
    ['a/b', 'contains "/"'],
    ['O\u0085', 'control character'],
    ['ORDER1\u200b', 'invisible or bidirectional format character'],
    ['\u202eORDER1', 'invisible or bidirectional format character'],
    ['OR\u2066DER\u2069', 'invisible or bidirectional format character'],
    ['\ufeffORDER1', 'invisible or bidirectional format character'],
  ])('When an order or refund id is %j, which the admin API refuses, then it is quarantined saying why', (id, why) => {
    const refused = { ok: false, reason: 'invalid_field' };
    expect(order({ orderId: id })).toMatchObject({
      ...refused,
      detail: expect.stringContaining(`order.orderId is not an id the admin API takes: the id`),
    });
    expect(order({ orderId: id })).toMatchObject({ detail: expect.stringContaining(why) });
    expect(parse({ orderId: id, refund: { refundId: 'R1', status: 'FINALIZED' } })).toMatchObject({
      ...refused,
      detail: expect.stringContaining('orderId'),
    });
    expect(parse({ orderId: 'O1', refund: { refundId: id, status: 'FINALIZED' } })).toMatchObject({
      ...refused,
      detail: expect.stringContaining('refund.refundId'),
    });
  });

  it('When any order or refund id is signed, then it is recorded exactly when the admin API would take it', () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.string({ maxLength: 140 }), fc.constantFrom('.', '..', 'a/b', '/', 'x'.repeat(129))),
        (id) => {
          fc.pre(id.trim() !== '');
          const taken = idProblem(id) === null;
          expect(order({ orderId: id }).ok).toBe(taken);
          expect(parse({ orderId: 'O1', refund: { refundId: id, status: 'FINALIZED' } }).ok).toBe(taken);
        },
      ),
    );
  });

  // Issue 45: U+200B-U+200F, U+202A-U+202E, U+2066-U+2069 and U+FEFF, each in every id a person reads.
  const FORMAT_CHARACTERS = [
    ...[0x200b, 0x200c, 0x200d, 0x200e, 0x200f],
    ...[0x202a, 0x202b, 0x202c, 0x202d, 0x202e],
    ...[0x2066, 0x2067, 0x2068, 0x2069],
    0xfeff,
  ].map((code) => String.fromCodePoint(code));

  it.each(FORMAT_CHARACTERS.map((c) => [`U+${c.codePointAt(0)?.toString(16).toUpperCase()}`, c]))(
    'When an id a person reads holds the format character %s, then the notification is quarantined naming the field',
    (_name, c) => {
      const refused = (field: string) => ({
        ok: false,
        reason: 'invalid_field',
        detail: `${field} contains an invisible or bidirectional format character`,
      });
      expect(order({ orderId: 'O1', extOrderId: `shop${c}1` })).toMatchObject(refused('order.extOrderId'));
      expect(order({ orderId: 'O1', merchantPosId: `3007${c}46` })).toMatchObject(refused('order.merchantPosId'));
      expect(order({ orderId: 'O1' }, { properties: [{ name: 'PAYMENT_ID', value: `${c}9` }] })).toMatchObject(
        refused('properties[].value'),
      );
      expect(
        parse({ orderId: 'O1', extOrderId: `s${c}`, refund: { refundId: 'R1', status: 'FINALIZED' } }),
      ).toMatchObject(refused('extOrderId'));
      expect(
        parse({ orderId: 'O1', refund: { refundId: 'R1', extRefundId: `r${c}`, status: 'FINALIZED' } }),
      ).toMatchObject(refused('refund.extRefundId'));
      expect(order({ orderId: `O${c}1` })).toMatchObject({ ok: false, reason: 'invalid_field' });
      expect(idProblem(`O${c}1`)).toBe('the id contains an invisible or bidirectional format character');
    },
  );

  it('When an id holds visible text of other scripts, then it is kept (only format characters are refused)', () => {
    expect(order({ orderId: 'Zamówienie-١٢٣', extOrderId: 'שלום-1' })).toMatchObject({ ok: true });
  });

  it('When a surrogate pair is well formed, then the text is kept', () => {
    const result = parseNotification(
      Buffer.from(
        '{"orderId":"O","refund":{"refundId":"R","status":"FINALIZED","reasonDescription":"\\ud83d\\ude00"}}',
      ),
    );
    expect(result.ok && result.notification.kind === 'refund' && result.notification.reasonDescription).toBe('😀');
  });
});

describe('quarantine details', () => {
  it('When a field holds something unexpected, then the detail names the field and never repeats what it holds', () => {
    // Every value carries a marker no field name or message contains: any echo of it would show.
    fc.assert(
      fc.property(fc.string({ maxLength: 60 }), (rest) => {
        const value = `Zq9${rest}`;
        for (const body of [
          { order: { orderId: 'O1', status: value } },
          { orderId: 'O1', refund: { refundId: 'R1', status: value } },
          { order: { orderId: 'O1', status: 'PENDING', totalAmount: value } },
          { order: { orderId: 'O1', status: 'PENDING', currencyCode: value } },
          { order: { orderId: 'O1', status: 'PENDING' }, localReceiptDateTime: value },
          { orderId: 'O1', refund: { refundId: 'R1', status: 'FINALIZED', refundDate: value } },
        ]) {
          const result = parseNotification(Buffer.from(JSON.stringify(body)));
          expect(result.ok).toBe(false);
          if (!result.ok) expect(result.detail).not.toContain('Zq9');
        }
      }),
    );
  });
});
