import { PaymentServiceDouble, type DoubleClient } from '../../../src/simulator';
import { query } from '../../support/database';
import { startTestService, type TestService } from '../../support/service';
import { OTHER_POS_ID, orderBody, POS_ID, refundBody, uniqueId } from '../../support/signing';
import { waitUntil } from '../../support/wait';

/**
 * What the reconciler cannot see from the projections, told through the admin port (issue 54): the orders a shop
 * created (POST /orders/expected), and lists of orders to reconcile (POST /orders/reconcile, followed by GET
 * /orders/reconcile/{cause}). The service runs with its own reconciler against the payment-service double; every
 * answer is checked against docs/openapi.yaml.
 */

const POS: DoubleClient = { posId: POS_ID, clientId: POS_ID, clientSecret: 'pos-secret-lists-5d1e2f' };
const OTHER: DoubleClient = { posId: OTHER_POS_ID, clientId: OTHER_POS_ID, clientSecret: 'other-secret-lists-7a8b' };
const TOKEN = 'admin-token-lists-3c9d0e1f2a3b';
const bearer = { Authorization: `Bearer ${TOKEN}` };

let double: PaymentServiceDouble;
let svc: TestService;

beforeAll(async () => {
  double = new PaymentServiceDouble({ clients: [POS, OTHER] });
  await double.start();
  svc = await startTestService({
    env: {
      ADMIN_TOKEN: TOKEN,
      PAYMENT_API_URL: double.url,
      PAYMENT_API_CREDENTIALS: [POS, OTHER].map((c) => `${c.posId}:${c.clientId}:${c.clientSecret}`).join(','),
      RECONCILE_AFTER: '1s',
      RECONCILE_GIVE_UP: '7d',
      RECONCILE_INTERVAL: '100ms',
    },
  });
});
afterAll(async () => {
  await svc.stop();
  await double.stop();
});

const statusOf = async (table: 'orders' | 'refunds', id: string): Promise<string | undefined> =>
  (
    await query<{ status: string }>(
      svc.database.url,
      `SELECT status FROM ${table} WHERE ${table === 'orders' ? 'order_id' : 'refund_id'} = $1`,
      [id],
    )
  )[0]?.status;

/** The order ids a request body names (an entry's orderId, or a list's), whatever else it holds. */
function idsIn(body: unknown): string[] {
  if (Array.isArray(body)) return body.flatMap(idsIn);
  if (typeof body !== 'object' || body === null) return [];
  const { orderId, orderIds } = body as { orderId?: unknown; orderIds?: unknown };
  return [
    ...(typeof orderId === 'string' ? [orderId] : []),
    ...(Array.isArray(orderIds) ? orderIds.filter((id): id is string => typeof id === 'string') : []),
  ];
}

/** A POST with the token answered 400 with this code and message, and none of its orders in `table`. */
async function expectRefused(
  path: string,
  body: unknown,
  code: string,
  message: RegExp,
  table: 'expected_orders' | 'forced_checks',
): Promise<void> {
  const res = await svc.admin
    .post(path)
    .set(bearer)
    .send(body as object)
    .expect(400);
  expect(res.body.error.code).toBe(code);
  expect(res.body.error.message).toMatch(message);
  expect(await recorded(table, idsIn(body))).toEqual([]);
}

/** Which of these orders `table` holds. */
const recorded = async (table: 'expected_orders' | 'forced_checks', orderIds: string[]): Promise<string[]> =>
  (
    await query<{ order_id: string }>(svc.database.url, `SELECT order_id FROM ${table} WHERE order_id = ANY($1)`, [
      orderIds,
    ])
  ).map((row) => row.order_id);

const expected = (fields: Record<string, unknown> = {}): Record<string, unknown> => ({
  orderId: uniqueId('EXP'),
  posId: POS_ID,
  createdAt: new Date(Date.now() - 60_000).toISOString(),
  ...fields,
});

describe('POST /orders/expected', () => {
  it('When the shop tells of an order it created that no notification names, then it is reconciled with its POS after RECONCILE_AFTER; one notified is never asked about', async () => {
    const lost = uniqueId('EXPLOST');
    const notified = uniqueId('EXPNOTIFIED');
    double.setOrder({ orderId: lost, merchantPosId: OTHER_POS_ID, status: 'COMPLETED', paymentId: '7001' });
    await svc.post(orderBody({ orderId: notified, status: 'COMPLETED', paymentId: '7002' })).expect(200);
    const createdAt = new Date(Date.now() - 5000).toISOString();
    const told = await svc.admin
      .post('/orders/expected')
      .set(bearer)
      .send([
        { orderId: lost, posId: OTHER_POS_ID, createdAt },
        { orderId: notified, posId: POS_ID, createdAt },
      ])
      .expect(200);
    expect(told.body).toEqual({ received: 2, new: 2 });

    await waitUntil(
      'the order no notification named, reconciled',
      async () => (await statusOf('orders', lost)) === 'COMPLETED',
    );
    // Asked with its own POS's credentials; the one notified never asked about.
    const asked = double.requests.filter((r) => r.endpoint === 'order');
    expect(asked.filter((r) => r.path.endsWith(`/${lost}`)).map((r) => r.tokenPosId)).toEqual([OTHER_POS_ID]);
    expect(asked.filter((r) => r.path.endsWith(`/${notified}`))).toEqual([]);
  });

  it('When the shop tells of the same orders twice, then the second time changes nothing, and its requests are one audit row an hour', async () => {
    const audited = async (): Promise<number> =>
      Number(
        (
          await query<{ n: string }>(
            svc.database.url,
            `SELECT coalesce(sum(count), 0) AS n FROM console_audit
              WHERE action = 'orders_expected' AND via = 'api' AND actor = 'admin'`,
          )
        )[0]?.n,
      );
    const before = await audited();
    // Created by a clock a minute ahead (within the skew): RECONCILE_AFTER after it is past the test's end, so
    // the reconciler takes neither in meanwhile.
    const ahead = new Date(Date.now() + 60_000).toISOString();
    const entries = [expected({ createdAt: ahead }), expected({ createdAt: ahead })];
    const first = await svc.admin.post('/orders/expected').set(bearer).send(entries).expect(200);
    expect(first.body).toEqual({ received: 2, new: 2 });
    const again = await svc.admin
      .post('/orders/expected')
      .set(bearer)
      .send([...entries, entries[0]])
      .expect(200);
    expect(again.body).toEqual({ received: 3, new: 0 });
    expect(await audited()).toBe(before + 2);
    const rows = await query<{ n: string }>(
      svc.database.url,
      `SELECT count(*) AS n FROM console_audit WHERE action = 'orders_expected' AND at > now() - interval '1 hour'`,
    );
    // One row an hour: two at most around the turn of an hour.
    expect(Number(rows[0]?.n)).toBeLessThanOrEqual(2);
  });

  it.each<[string, unknown, string, RegExp]>([
    ['a bad order id', [expected(), expected({ orderId: 'a/b' })], 'invalid_expected_order', /^orders\[1\]\.orderId: /],
    ['a POS no key is for', [expected({ posId: '999999' })], 'invalid_expected_order', /^orders\[0\]\.posId: /],
    [
      'no offset',
      [expected(), expected(), expected({ createdAt: '2026-11-28T10:00:00' })],
      'invalid_expected_order',
      /^orders\[2\]\.createdAt: .*offset/,
    ],
    [
      'a time in the future',
      [expected({ createdAt: new Date(Date.now() + 3_600_000).toISOString() })],
      'invalid_expected_order',
      /^orders\[0\]\.createdAt: in the future/,
    ],
    [
      'a time older than RECONCILE_GIVE_UP',
      [expected({ createdAt: new Date(Date.now() - 8 * 86_400_000).toISOString() })],
      'invalid_expected_order',
      /^orders\[0\]\.createdAt: older/,
    ],
    [
      'no createdAt',
      [expected({ createdAt: undefined })],
      'invalid_expected_order',
      /^orders\[0\]\.createdAt: missing/,
    ],
    ['an entry that is not an object', [expected(), 'PB68'], 'bad_request', /not an object/],
    ['an object for a list', expected(), 'bad_request', /array/],
    ['an empty list', [], 'bad_request', /array/],
    ['1,001 entries', Array.from({ length: 1001 }, () => expected()), 'too_many_orders', /at most 1000/],
  ])(
    'When the list has %s, then it is 400 naming the entry and the field, and nothing is recorded',
    (_, body, code, message) => expectRefused('/orders/expected', body, code, message, 'expected_orders'),
  );

  it('When it comes without the token, from another site, or larger than 512 kB, then it is refused and nothing is recorded', async () => {
    const alone = [expected()];
    await svc.admin.post('/orders/expected').send(alone).expect(401);
    await svc.admin.post('/orders/expected').set(bearer).set('Sec-Fetch-Site', 'cross-site').send(alone).expect(403);
    const big = Array.from({ length: 1000 }, () => expected({ note: 'x'.repeat(600) }));
    const res = await svc.admin.post('/orders/expected').set(bearer).send(big).expect(413);
    expect(res.body.error.code).toBe('bad_request');
    expect(await recorded('expected_orders', idsIn([...alone, ...big]))).toEqual([]);
  });
});

describe('POST /orders/reconcile', () => {
  it('When a list names orders no record covers, then it is 202 with where to follow it, each is checked once whatever its state here, and each is audited', async () => {
    const refundOnly = uniqueId('LSTREF');
    const finalHere = uniqueId('LSTFIN');
    const neverSeen = uniqueId('LSTNEW');
    await svc.post(refundBody({ orderId: refundOnly, refundId: `${refundOnly}R`, status: 'FINALIZED' })).expect(200);
    double.setOrder({ orderId: refundOnly, merchantPosId: POS_ID, status: 'COMPLETED', paymentId: '7101' });
    double.setRefund(refundOnly, { refundId: `${refundOnly}R`, status: 'FINALIZED' });
    await svc.post(orderBody({ orderId: finalHere, status: 'COMPLETED', paymentId: '7102' })).expect(200);
    double.setOrder({ orderId: finalHere, merchantPosId: POS_ID, status: 'COMPLETED', paymentId: '7102' });
    double.setRefund(finalHere, { refundId: `${finalHere}R`, status: 'FINALIZED' });
    double.setOrder({ orderId: neverSeen, merchantPosId: OTHER_POS_ID, status: 'CANCELED' });

    const res = await svc.admin
      .post('/orders/reconcile')
      .set(bearer)
      .send({ orderIds: [refundOnly, finalHere, neverSeen, finalHere], posId: OTHER_POS_ID })
      .expect(202);
    expect(res.body).toMatchObject({ orders: 3, scheduled: 3, answered: 0, uncovered: 0 });
    const cause = (res.body as { cause: string }).cause;
    expect(res.headers.location).toBe(`/orders/reconcile/${encodeURIComponent(cause)}`);

    const progress = await waitUntil('the list checked', async () => {
      const followed = await svc.admin
        .get(res.headers.location as string)
        .set(bearer)
        .expect(200);
      return (followed.body as { done: boolean }).done ? followed.body : undefined;
    });
    expect(progress).toEqual({ cause, due: 0, answered: 3, uncovered: 0, done: true, notCovered: [] });
    expect(await statusOf('orders', refundOnly)).toBe('COMPLETED');
    expect(await statusOf('refunds', `${finalHere}R`)).toBe('FINALIZED');
    expect(await statusOf('orders', neverSeen)).toBe('CANCELED');

    const audit = await query<{ order_id: string; result: string; via: string }>(
      svc.database.url,
      `SELECT order_id, result, via FROM console_audit WHERE action = 'reconcile' AND order_id = ANY($1) ORDER BY id`,
      [[refundOnly, finalHere, neverSeen]],
    );
    expect(audit).toEqual(
      [refundOnly, finalHere, neverSeen].map((order_id) => ({ order_id, result: 'scheduled', via: 'api' })),
    );
  });

  it('When more than 100 orders are listed, then the audit holds one row for the list; an order with no POS to ask with is not covered, and listed', async () => {
    const ids = Array.from({ length: 101 }, () => uniqueId('LSTMANY'));
    // No posId, and two POS configured: none of them can be asked about.
    const res = await svc.admin.post('/orders/reconcile').set(bearer).send({ orderIds: ids }).expect(202);
    const cause = (res.body as { cause: string }).cause;
    const progress = await waitUntil('the list settled', async () => {
      const followed = await svc.admin.get(`/orders/reconcile/${cause}`).set(bearer).expect(200);
      return (followed.body as { done: boolean }).done ? followed.body : undefined;
    });
    expect(progress).toMatchObject({ due: 0, answered: 0, uncovered: 101 });
    expect((progress as { notCovered: unknown[] }).notCovered).toHaveLength(100);
    expect((progress as { notCovered: unknown[] }).notCovered[0]).toEqual({
      orderId: [...ids].sort()[0],
      result: 'no_pos',
    });
    const audit = await query<{ target: string; order_id: string | null }>(
      svc.database.url,
      `SELECT target, order_id FROM console_audit WHERE action = 'reconcile' AND detail LIKE $1`,
      [`%${cause}`],
    );
    expect(audit).toEqual([{ target: '101 orders', order_id: null }]);
  });

  it.each<[string, unknown, string, RegExp]>([
    ['a bad id', { orderIds: ['A1', 'A2', 'c/d'] }, 'invalid_order_id', /^orderIds\[2\]: .*"\/"/],
    ['an id that is not a string', { orderIds: ['A1', 7] }, 'invalid_order_id', /^orderIds\[1\]: not a string/],
    ['a POS without credentials', { orderIds: ['A1'], posId: '999999' }, 'unknown_pos', /credentials/],
    ['no orderIds', { ids: ['A1'] }, 'bad_request', /orderIds/],
    ['a list for a body', ['A1'], 'bad_request', /orderIds/],
    ['an empty list', { orderIds: [] }, 'bad_request', /orderIds/],
    ['10,001 ids', { orderIds: Array.from({ length: 10_001 }, (_, i) => `MANY${i}`) }, 'too_many_orders', /10000/],
  ])('When the list has %s, then it is 400 naming it, and nothing is scheduled', (_, body, code, message) =>
    expectRefused('/orders/reconcile', body, code, message, 'forced_checks'),
  );

  it('When a cause is unknown or cannot be one, then following it is 404 or 400', async () => {
    const unknown = await svc.admin.get('/orders/reconcile/list:nothing-here').set(bearer).expect(404);
    expect(unknown.body.error.code).toBe('checks_not_found');
    await svc.admin
      .get(`/orders/reconcile/${encodeURIComponent('a b')}`)
      .set(bearer)
      .expect(400);
    await svc.admin.get('/orders/reconcile/list:nothing-here').expect(401);
  });
});

describe('without reconciliation', () => {
  it('When PAYMENT_API_URL is not set, then both routes are 409 reconciliation_off and record nothing', async () => {
    const off = await startTestService();
    try {
      const expect409 = async (path: string, body: object): Promise<void> => {
        const res = await off.admin.post(path).send(body).expect(409);
        expect(res.body.error.code).toBe('reconciliation_off');
      };
      await expect409('/orders/expected', [expected()]);
      await expect409('/orders/reconcile', { orderIds: ['A1'] });
      const [rows] = await query<{ n: string }>(
        off.database.url,
        'SELECT (SELECT count(*) FROM expected_orders) + (SELECT count(*) FROM forced_checks) AS n',
      );
      expect(rows?.n).toBe('0');
    } finally {
      await off.stop();
    }
  });
});
