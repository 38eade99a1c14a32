import request from 'supertest';
import { query } from '../support/database';
import { CONSOLE_ENV, OPERATOR_TOKEN, SAME_ORIGIN, signIn, VIEWER_TOKEN } from '../support/console';
import { startTestService, type TestService } from '../support/service';
import { orderBody, refundBody, uniqueId } from '../support/signing';

let svc: TestService;
let operator: string;
let viewer: string;
beforeAll(async () => {
  svc = await startTestService({ env: { RELAY_ENABLED: 'false', ...CONSOLE_ENV } });
  operator = await signIn(svc.adminUrl, OPERATOR_TOKEN);
  viewer = await signIn(svc.adminUrl, VIEWER_TOKEN);
});
afterAll(() => svc.stop());

const get = (path: string, cookie: string) => request(svc.adminUrl).get(path).set('Cookie', cookie);
const post = (path: string, cookie: string, form: Record<string, string>) =>
  request(svc.adminUrl).post(path).set('Cookie', cookie).set(SAME_ORIGIN).type('form').send(form);

async function deliver(body: string): Promise<void> {
  const res = await svc.post(body);
  expect(res.status).toBe(200);
}

const auditRows = async () =>
  (await query(svc.database.url, 'SELECT count(*)::int AS n FROM console_audit'))[0]?.n as number;

describe('console: signing in', () => {
  it('When nobody is signed in, then a page redirects to the sign-in form', async () => {
    const res = await request(svc.adminUrl).get('/console/attention');
    expect(res.status).toBe(303);
    expect(res.headers.location).toBe('/console/sign-in');
    const form = await request(svc.adminUrl).get('/console/sign-in');
    expect(form.status).toBe(200);
    expect(form.text).toContain('name="token"');
    expect(form.headers['content-security-policy']).toContain("frame-ancestors 'none'");
  });

  it('When a wrong token is given, then 401 and the failed sign-in is audited', async () => {
    const before = await auditRows();
    const res = await request(svc.adminUrl)
      .post('/console/sign-in')
      .set(SAME_ORIGIN)
      .type('form')
      .send({ token: 'not-a-token-of-anyone' });
    expect(res.status).toBe(401);
    expect(res.text).toContain('That token is not valid');
    expect(res.headers['set-cookie']).toBeUndefined();
    expect(await auditRows()).toBe(before + 1);
  });

  it('When a token signs in, then the cookie is HttpOnly, SameSite=Strict, Secure, with an expiry', async () => {
    const res = await request(svc.adminUrl)
      .post('/console/sign-in')
      .set(SAME_ORIGIN)
      .type('form')
      .send({ token: VIEWER_TOKEN });
    expect(res.status).toBe(303);
    const cookie = ([] as string[]).concat(res.headers['set-cookie'] ?? [])[0] ?? '';
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/SameSite=Strict/);
    expect(cookie).toMatch(/Secure/);
    expect(cookie).toMatch(/Max-Age=\d+/);
  });
});

describe('console: search and the order page', () => {
  it('When an order is searched by its ids, then each finds its page; an unknown id a 404 page', async () => {
    const orderId = uniqueId('CSRCH');
    await deliver(orderBody({ orderId, status: 'PENDING', paymentId: `PAY${orderId}` }));
    await deliver(refundBody({ orderId, refundId: `R${orderId}`, extRefundId: `XR${orderId}`, status: 'PENDING' }));
    for (const q of [orderId, `ext-${orderId}`, `PAY${orderId}`, `R${orderId}`, `XR${orderId}`]) {
      const res = await get(`/console/search?q=${encodeURIComponent(q)}`, viewer);
      expect(res.status).toBe(303);
      expect(res.headers.location).toBe(`/console/orders/${orderId}`);
    }
    const none = await get('/console/search?q=NOPE-NOTHING', viewer);
    expect(none.status).toBe(404);
    expect(none.text).toContain('No order or refund has the id');
    const page = await get(`/console/orders/${orderId}`, viewer);
    if (page.status !== 200) console.log(svc.logs.filter((l) => l.includes('unexpected')).join('\n'));
    expect(page.status).toBe(200);
    for (const section of ['Timeline', 'Events', 'Reconciliation', 'Refunds', 'Raw bodies', 'Audit'])
      expect(page.text).toContain(`<h2>${section}</h2>`);
    expect(page.text).toContain('data-testid="timeline"');
  });
});

describe('console: roles and cross-site posts', () => {
  it('When a viewer asks for an action, then 403 and nothing is done', async () => {
    const orderId = uniqueId('CVIEW');
    await deliver(orderBody({ orderId, status: 'PENDING' }));
    const before = await auditRows();
    expect((await get(`/console/orders/${orderId}/republish`, viewer)).status).toBe(403);
    const res = await post(`/console/orders/${orderId}/republish`, viewer, { confirm: 'yes' });
    expect(res.status).toBe(403);
    expect(res.text).toContain('Only an operator may do this');
    expect(await auditRows()).toBe(before);
  });

  it('When a form is posted from another site, then 403 and nothing is done', async () => {
    const orderId = uniqueId('CXSITE');
    await deliver(orderBody({ orderId, status: 'PENDING' }));
    const before = await auditRows();
    const res = await request(svc.adminUrl)
      .post(`/console/orders/${orderId}/republish`)
      .set('Cookie', operator)
      .set('Sec-Fetch-Site', 'cross-site')
      .type('form')
      .send({ confirm: 'yes' });
    expect(res.status).toBe(403);
    const noHeaders = await request(svc.adminUrl)
      .post(`/console/orders/${orderId}/republish`)
      .set('Cookie', operator)
      .type('form')
      .send({ confirm: 'yes' });
    expect(noHeaders.status).toBe(403);
    const evilOrigin = await request(svc.adminUrl)
      .post(`/console/orders/${orderId}/republish`)
      .set('Cookie', operator)
      .set('Origin', 'https://evil.example')
      .type('form')
      .send({ confirm: 'yes' });
    expect(evilOrigin.status).toBe(403);
    expect(await auditRows()).toBe(before);
  });
});
