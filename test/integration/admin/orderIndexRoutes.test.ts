import { startTestService, type TestService } from '../../support/service';
import { orderBody, OTHER_KEY, OTHER_POS_ID, POS_ID, sign, uniqueId } from '../../support/signing';

/**
 * GET /orders, the JSON API's list of orders (issue 55): by time, status and POS, newest change first, keyset-paged
 * and bounded; bad input is 400 naming the parameter. Every answer is checked against docs/openapi.yaml.
 */

const TOKEN = 'admin-token-orders-list-7e6d5c4b3a';
const bearer = { Authorization: `Bearer ${TOKEN}` };
let svc: TestService;

beforeAll(async () => {
  svc = await startTestService({ env: { RELAY_ENABLED: 'false', ADMIN_TOKEN: TOKEN } });
});
afterAll(() => svc.stop());

async function deliver(orderId: string, status: string, merchantPosId = POS_ID): Promise<void> {
  const body = orderBody({ orderId, status, merchantPosId });
  const signed: Record<string, string> =
    merchantPosId === OTHER_POS_ID ? { 'OpenSvc-Signature': sign(body, OTHER_KEY) } : {};
  expect((await svc.post(body, signed)).status).toBe(200);
}

const list = (query: string) => svc.admin.get(`/orders?${query}`).set(bearer);

interface Listed {
  orderId: string;
  status: string;
  merchantPosId: string | null;
  updatedAt: string;
  contradicted: unknown;
}

describe('GET /orders', () => {
  it('When orders are paged two at a time, then every one comes once, newest change first, and the last page has no next', async () => {
    const since = new Date().toISOString();
    const ids = [1, 2, 3, 4, 5].map((n) => uniqueId(`LIST${n}`));
    for (const id of ids) await deliver(id, 'PENDING');
    const seen: Listed[] = [];
    let after: string | null = null;
    do {
      const res = await list(`since=${encodeURIComponent(since)}&limit=2${after ? `&after=${after}` : ''}`);
      expect(res.status).toBe(200);
      expect(res.body.orders.length).toBeLessThanOrEqual(2);
      seen.push(...(res.body.orders as Listed[]));
      after = res.body.next as string | null;
    } while (after !== null);
    const ours = seen.filter((o) => ids.includes(o.orderId)).map((o) => o.orderId);
    expect(ours).toEqual([...ids].reverse());
    expect(new Set(seen.map((o) => o.orderId)).size).toBe(seen.length);
  });

  it('When filtered by status and POS, then only those orders come; a contradicted one says so with both statuses', async () => {
    const mine = uniqueId('LPOS');
    const other = uniqueId('LOTHER');
    const contradicted = uniqueId('LCONTRA');
    await deliver(mine, 'COMPLETED', OTHER_POS_ID);
    await deliver(other, 'COMPLETED');
    await deliver(contradicted, 'COMPLETED', OTHER_POS_ID);
    await deliver(contradicted, 'CANCELED', OTHER_POS_ID);
    const res = await list(`status=COMPLETED&posId=${OTHER_POS_ID}&limit=1000`);
    expect(res.status).toBe(200);
    const orders = res.body.orders as Listed[];
    expect(orders.every((o) => o.status === 'COMPLETED' && o.merchantPosId === OTHER_POS_ID)).toBe(true);
    const ids = orders.map((o) => o.orderId);
    expect(ids).toContain(mine);
    expect(ids).not.toContain(other);
    expect(orders.find((o) => o.orderId === mine)?.contradicted).toBeNull();
    expect(orders.find((o) => o.orderId === contradicted)?.contradicted).toEqual({
      statuses: [
        { status: 'COMPLETED', receivedAt: expect.any(String) },
        { status: 'CANCELED', receivedAt: expect.any(String) },
      ],
      held: true,
    });
  });

  it('When the query is bad or the cursor forged, then 400 naming the parameter', async () => {
    const forged = Buffer.from(JSON.stringify(['0000-01-01T00:00:00.000000Z', 'X'])).toString('base64url');
    const cases: [string, RegExp][] = [
      ['limit=0', /^limit:/],
      ['limit=1001', /^limit:/],
      ['limit=ten', /^limit:/],
      ['status=PAID', /^status:/],
      ['since=yesterday', /^since:/],
      ['since=2026-11-28T10:00:00', /^since:/],
      ['since=2026-11-28T10:00:00Z&until=2026-11-28T09:00:00Z', /^until:/],
      ['after=not-a-cursor!', /^after:/],
      [`after=${Buffer.from('["x","y"]').toString('base64url')}`, /^after:/],
      [`after=${forged}`, /^after:/],
      ['posId=a%00b', /^posId:/],
      ['limit=1&limit=2', /^limit:/],
      ['sort=asc', /^sort:/],
    ];
    for (const [query, message] of cases) {
      const res = await list(query);
      expect({ query, status: res.status, code: res.body.error?.code }).toEqual({
        query,
        status: 400,
        code: 'invalid_query',
      });
      expect(res.body.error.message).toMatch(message);
    }
  });

  it('When no token or a wrong one is given, then 401', async () => {
    expect((await svc.admin.get('/orders')).status).toBe(401);
    expect((await svc.admin.get('/orders').set({ Authorization: 'Bearer wrong-token-0000000000' })).status).toBe(401);
  });
});

describe('GET /exports/finance.csv', () => {
  it('When a POS and days are given with the token, then the console’s CSV comes, with a paid order of that POS in it', async () => {
    const orderId = uniqueId('LCSV');
    await deliver(orderId, 'COMPLETED');
    const yesterday = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
    const res = await svc.admin
      .get(`/exports/finance.csv?posId=${POS_ID}&from=${yesterday}&to=${tomorrow}`)
      .set(bearer)
      .buffer(true)
      .parse((r, done) => {
        let text = '';
        r.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
        r.on('end', () => done(null, text));
      });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/csv/);
    expect(res.body as string).toMatch(/^\ufeff"/);
    expect(res.body as string).toContain(orderId);
  });

  it('When the POS, the days or a parameter are wrong, or there is no token, then 400 or 401 and no CSV', async () => {
    for (const query of [
      `posId=${POS_ID}&from=2026-11-01`,
      `posId=a%20b&from=2026-11-01&to=2026-11-02`,
      `posId=${POS_ID}&from=2026-11-02&to=2026-11-01`,
      `posId=${POS_ID}&from=2026-01-01&to=2026-03-01`,
      `posId=${POS_ID}&from=yesterday&to=2026-11-01`,
      `posId=${POS_ID}&from=2026-11-01&to=2026-11-02&format=xlsx`,
    ]) {
      const res = await svc.admin.get(`/exports/finance.csv?${query}`).set(bearer);
      expect({ query, status: res.status, code: res.body.error?.code }).toEqual({
        query,
        status: 400,
        code: 'invalid_query',
      });
    }
    expect((await svc.admin.get(`/exports/finance.csv?posId=${POS_ID}&from=2026-11-01&to=2026-11-02`)).status).toBe(
      401,
    );
  });
});
