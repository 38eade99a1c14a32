/**
 * The finance export (GET /console/export.csv): what finance opens in a spreadsheet, for one POS and a range of local
 * days, streamed a page at a time.
 */
import request from 'supertest';
import { CONSOLE_ENV, signIn, VIEWER_TOKEN } from '../../../support/console';
import { query } from '../../../support/database';
import { startTestService, type TestService } from '../../../support/service';
import {
  exactBytes,
  OTHER_KEY,
  OTHER_POS_ID,
  orderBody,
  POS_ID,
  refundBody,
  sign,
  uniqueId,
} from '../../../support/signing';

let svc: TestService;
let viewer: string;
beforeAll(async () => {
  svc = await startTestService({
    env: { ...CONSOLE_ENV, RELAY_ENABLED: 'false', CONSOLE_TIME_ZONE: 'Europe/Warsaw' },
  });
  viewer = await signIn(svc.adminUrl, VIEWER_TOKEN);
});
afterAll(() => svc.stop());

const get = (path: string) => request(svc.adminUrl).get(path).set('Cookie', viewer);
const deliver = async (body: string, key?: string) => {
  const res = key
    ? await svc.public
        .post('/notifications')
        .set('Content-Type', 'application/json;charset=UTF-8')
        .set('OpenSvc-Signature', sign(body, key))
        .serialize(exactBytes)
        .send(Buffer.from(body))
    : await svc.post(body);
  expect(res.status).toBe(200);
};

/** Today in Warsaw, as the export's days are given. */
const today = (): string =>
  new Intl.DateTimeFormat('en-CA', {
    timeZone: 'Europe/Warsaw',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
  }).format(new Date());

/** A CSV as rows of cells (RFC 4180: quoted cells, doubled quotes, CRLF). */
function parseCsv(text: string): string[][] {
  expect(text.startsWith('\ufeff')).toBe(true);
  return text
    .slice(1)
    .split('\r\n')
    .filter((line) => line !== '')
    .map((line) => [...line.matchAll(/"((?:[^"]|"")*)"(,|$)/g)].map((m) => (m[1] ?? '').replace(/""/g, '"')));
}

describe('console: the finance export', () => {
  it('When a day of a POS is exported, then its completed orders and finalized refunds are in it, amounts in major units, times with their offset', async () => {
    const paid = uniqueId('XPAID');
    const hostile = '=HYPERLINK("http://evil.example","click")';
    await deliver(orderBody({ orderId: paid, extOrderId: hostile, status: 'PENDING', totalAmount: '223471' }));
    await deliver(
      orderBody({ orderId: paid, extOrderId: hostile, status: 'COMPLETED', totalAmount: '223471', paymentId: '5011' }),
    );
    await deliver(
      refundBody({
        orderId: paid,
        extOrderId: hostile,
        refundId: `R${paid}`,
        status: 'PENDING',
        amount: '28013',
        extRefundId: '+ret-1',
      }),
    );
    await deliver(
      refundBody({
        orderId: paid,
        extOrderId: hostile,
        refundId: `R${paid}`,
        status: 'FINALIZED',
        amount: '28013',
        extRefundId: '+ret-1',
      }),
    );
    const yen = uniqueId('XYEN');
    await deliver(orderBody({ orderId: yen, status: 'COMPLETED', totalAmount: '1234', currencyCode: 'JPY' }));
    const odd = uniqueId('XODD');
    await deliver(orderBody({ orderId: odd, status: 'COMPLETED', totalAmount: '500', currencyCode: 'XYZ' }));
    const open = uniqueId('XOPEN');
    await deliver(orderBody({ orderId: open, status: 'PENDING' }));
    const other = uniqueId('XOTHER');
    await deliver(orderBody({ orderId: other, status: 'COMPLETED', merchantPosId: OTHER_POS_ID }), OTHER_KEY);

    const res = await get(`/console/export.csv?pos=${POS_ID}&from=${today()}&to=${today()}`);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(res.headers['content-disposition']).toBe(
      `attachment; filename="payments-${POS_ID}-${today()}-to-${today()}.csv"`,
    );
    const [header, ...rows] = parseCsv(res.text);
    expect(header).toEqual([
      'type',
      'booking_time',
      'shop_reference',
      'payment_id',
      'order_id',
      'refund_id',
      'shop_refund_reference',
      'amount',
      'currency',
      'shop_account',
      'note',
    ]);
    const byOrder = (id: string) => rows.filter((r) => r[4] === id);
    expect(byOrder(paid)).toEqual([
      [
        'payment',
        expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+0[12]:00$/),
        `'${hostile}`,
        '5011',
        paid,
        '',
        '',
        '2234.71',
        'PLN',
        POS_ID,
        '',
      ],
      [
        'refund',
        // Its booking time is the payment service's refund date (2026-11-02T11:59:59.000+01:00), in Warsaw time.
        '2026-11-02T11:59:59.000+01:00',
        `'${hostile}`,
        '5011',
        paid,
        `R${paid}`,
        "'+ret-1",
        '280.13',
        'PLN',
        POS_ID,
        '',
      ],
    ]);
    expect(byOrder(yen)[0]?.slice(7, 9)).toEqual(['1234', 'JPY']);
    expect(byOrder(odd)[0]?.slice(7)).toEqual([
      '',
      'XYZ',
      POS_ID,
      'amount not in major units: 500 minor units of XYZ, as received',
    ]);
    expect(byOrder(open)).toEqual([]);
    expect(byOrder(other)).toEqual([]);
    // Nothing a spreadsheet would run: every cell starting =, +, -, @, tab or CR is written as text.
    for (const row of rows) for (const cell of row) expect(cell).not.toMatch(/^[=+\-@\t\r]/);
  });

  it('When more orders became final in one microsecond (one statement’s now()) than a page holds, then each is exported once', async () => {
    const prefix = uniqueId('XMANY');
    await query(
      svc.database.url,
      `INSERT INTO orders (order_id, merchant_pos_id, status, status_rank, total_amount, currency_code, updated_at)
       SELECT $1 || lpad(i::text, 5, '0'), $2, 'COMPLETED', 3, i, 'PLN', now()
         FROM generate_series(1, 2345) AS i`,
      [prefix, POS_ID],
    );
    const res = await get(`/console/export.csv?pos=${POS_ID}&from=${today()}&to=${today()}`);
    const ids = parseCsv(res.text)
      .slice(1)
      .map((r) => r[4] ?? '')
      .filter((id) => id.startsWith(prefix));
    expect(ids).toHaveLength(2345);
    expect(new Set(ids).size).toBe(2345);
  });

  it('When the export is asked for badly, then 400 says the expected form and nothing is sent', async () => {
    for (const [q, says] of [
      [`from=${today()}&to=${today()}`, 'pos must be a shop account (POS) id'],
      [`pos=${POS_ID}&from=27.11.2026&to=${today()}`, 'from and to must be days such as 2026-11-27 (in Europe/Warsaw)'],
      [`pos=${POS_ID}&from=2026-11-28&to=2026-11-27`, 'from must not be after to'],
      [`pos=${POS_ID}&from=2026-01-01&to=2026-03-01`, 'An export covers at most 31 days; this asks for 60.'],
      [`pos=${POS_ID}&from=1999-01-01&to=1999-01-02`, 'between the years 2000 and 2099'],
    ] as const) {
      const res = await get(`/console/export.csv?${q}`);
      expect({ q, status: res.status }).toEqual({ q, status: 400 });
      expect(res.headers['content-type']).toMatch(/text\/html/);
      expect(res.text).toContain(says);
    }
  });

  it('When the overview is read, then it links the export, whose page offers the known POS', async () => {
    expect((await get('/console')).text).toContain('href="/console/export"');
    const page = await get('/console/export');
    expect(page.status).toBe(200);
    expect(page.text).toContain(`<option value="${POS_ID}">`);
    expect(page.text).toContain('action="/console/export.csv"');
  });

  it('When an order came Paid and then Canceled, and a refund Refunded and then Canceled, then both are held in the CSV with a note, and the page totals agree with the CSV', async () => {
    const paid = uniqueId('XHELD');
    await deliver(orderBody({ orderId: paid, status: 'COMPLETED', totalAmount: '10000' }));
    await deliver(orderBody({ orderId: paid, status: 'CANCELED', totalAmount: '10000' }));
    const canceled = uniqueId('XCANC');
    await deliver(orderBody({ orderId: canceled, status: 'CANCELED', totalAmount: '20000' }));
    await deliver(orderBody({ orderId: canceled, status: 'COMPLETED', totalAmount: '20000' }));
    const refunded = uniqueId('XREF');
    await deliver(orderBody({ orderId: refunded, status: 'COMPLETED', totalAmount: '30000' }));
    await deliver(refundBody({ orderId: refunded, refundId: `R${refunded}`, status: 'FINALIZED', amount: '3000' }));
    await deliver(refundBody({ orderId: refunded, refundId: `R${refunded}`, status: 'CANCELED', amount: '3000' }));

    const csv = parseCsv((await get(`/console/export.csv?pos=${POS_ID}&from=${today()}&to=${today()}`)).text);
    const rows = csv.slice(1);
    const of = (id: string) => rows.filter((r) => r[4] === id).map((r) => [r[0], r[7], r[10]]);
    expect(of(paid)).toEqual([
      [
        'held_payment',
        '100.00',
        'held: COMPLETED and then CANCELED both came; book nothing until reconciled with the payment service',
      ],
    ]);
    expect(of(canceled)).toEqual([
      [
        'held_payment',
        '200.00',
        'held: CANCELED and then COMPLETED both came; book nothing until reconciled with the payment service',
      ],
    ]);
    expect(of(refunded)).toEqual([
      ['payment', '300.00', ''],
      [
        'held_refund',
        '30.00',
        'held: FINALIZED and then CANCELED both came; book nothing until reconciled with the payment service',
      ],
    ]);

    // The page's totals, per type and currency, are what the CSV's rows add up to.
    const page = (await get(`/console/export?pos=${POS_ID}&from=${today()}&to=${today()}`)).text;
    const shown = [...page.matchAll(/<tr data-kind="([a-z_]+)" data-currency="([A-Z]*)">([\s\S]*?)<\/tr>/g)].map(
      (m) => {
        const cells = [...(m[3] ?? '').matchAll(/<td>([\s\S]*?)<\/td>/g)].map((c) =>
          (c[1] ?? '').replace(/<[^>]*>/g, '').trim(),
        );
        return { kind: m[1], currency: m[2], count: Number(cells[2]), total: cells[3] };
      },
    );
    const fromCsv = new Map<string, { count: number; cents: number }>();
    for (const r of rows) {
      const key = `${r[0]} ${r[8]}`;
      const t = fromCsv.get(key) ?? { count: 0, cents: 0 };
      fromCsv.set(key, { count: t.count + 1, cents: t.cents + Math.round(Number(r[7] || 0) * 100) });
    }
    expect(shown.length).toBe(fromCsv.size);
    for (const s of shown) {
      const t = fromCsv.get(`${s.kind} ${s.currency}`);
      expect({ ...s, count: t?.count }).toEqual({ ...s, count: s.count });
      if (s.currency === 'PLN')
        expect(s.total).toContain(((t?.cents ?? 0) / 100).toLocaleString('en-GB', { minimumFractionDigits: 2 }));
    }
    expect(page).toContain('Payments held: both Paid and Canceled came');
  });

  it('When the export page is opened, then it starts at today and offers yesterday and this month in one click', async () => {
    const page = (await get('/console/export')).text;
    expect(page).toContain(`name="from" type="date" value="${today()}"`);
    expect(page).toContain(`name="to" type="date" value="${today()}"`);
    expect(page).toMatch(/>Yesterday<\/a>/);
    expect(page).toContain(`from=${today().slice(0, 8)}01&amp;to=${today()}`);
  });
});
