import request from 'supertest';
import { query } from '../support/database';
import { CONSOLE_ENV, OPERATOR_TOKEN, SAME_ORIGIN, signIn, VIEWER_TOKEN } from '../support/console';
import { startTestService, type TestService } from '../support/service';
import { quarantineAsOlderVersion } from '../support/quarantine';
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

/** Every href and src of a page: each must be one of our own routes. */
const links = (page: string): string[] => [...page.matchAll(/(?:href|src|action)="([^"]*)"/g)].map((m) => m[1] ?? '');

describe('console: what a notification carries is untrusted text', () => {
  it('When fields hold script, javascript: URLs, HTML and long unicode, then the pages show them escaped and link nowhere else', async () => {
    const orderId = `${uniqueId('CEVIL')}<b>"'`;
    const extOrderId = 'javascript:alert(1)//<script>alert(2)</script>';
    const long = 'Zażółć gęślą jaźń 🙂 עברית '.repeat(40);
    await deliver(
      orderBody({
        orderId,
        extOrderId,
        status: 'PENDING',
        paymentId: '<img src=x onerror=alert(3)>',
        buyer: { email: 'buyer@example.com', firstName: long, lastName: '<svg onload=alert(4)>' },
      }),
    );
    const found = await get(`/console/search?q=${encodeURIComponent(extOrderId)}`, operator);
    expect(found.status).toBe(303);
    expect(found.headers.location).toBe(`/console/orders/${encodeURIComponent(orderId)}`);
    for (const cookie of [operator, viewer]) {
      const page = await get(found.headers.location as string, cookie);
      expect(page.status).toBe(200);
      expect(page.text).not.toMatch(/<script|<img|<svg onload|<b>"/i);
      expect(page.text).toContain('javascript:alert(1)//&lt;script&gt;alert(2)&lt;/script&gt;');
      expect(page.text).toContain('&lt;img src=x onerror=alert(3)&gt;');
      for (const link of links(page.text)) expect(link).toMatch(/^\/console(\/|$|\?)/);
      expect(page.headers['content-security-policy']).toContain("default-src 'none'");
    }
    const asOperator = await get(found.headers.location as string, operator);
    expect(asOperator.text).toContain('buyer@example.com');
    expect(asOperator.text).toContain('Zażółć gęślą jaźń 🙂');
    const asViewer = await get(found.headers.location as string, viewer);
    expect(asViewer.text).not.toContain('buyer@example.com');
    expect(asViewer.text).toContain('[redacted: personal data]');
  });
});

describe('console: bad input gets a clear page and changes nothing', () => {
  it('When the cookie is forged or expired, then 401 with the sign-in form', async () => {
    const [name, value] = viewer.split('=') as [string, string];
    const forged = value.replace(/\.victor\./, '.olga.').replace('.viewer.', '.operator.');
    for (const cookie of [`${name}=${forged}`, `${name}=v1.victor.viewer.1.${'A'.repeat(43)}`, `${name}=nonsense`]) {
      const res = await get('/console/attention', cookie);
      expect(res.status).toBe(401);
      expect(res.text).toContain('name="token"');
    }
  });

  it('When a session is past its expiry, then 401 saying so', async () => {
    const { sealSession } = await import('../../src/console/session');
    const expired = sealSession(Buffer.from(CONSOLE_ENV.CONSOLE_SESSION_SECRET), {
      name: 'olga',
      role: 'operator',
      expiresAt: Math.floor(Date.now() / 1000) - 1,
    });
    const res = await get('/console/attention', `console_session=${expired}`);
    expect(res.status).toBe(401);
    expect(res.text).toContain('Your session has expired');
  });

  it('When nonsense filters, ids or a missing confirmation are sent, then 400 or 404 pages and no audit row', async () => {
    const before = await auditRows();
    for (const path of [
      '/console/deliveries?outcome=maybe',
      '/console/deliveries?from=yesterday',
      '/console/deliveries?from=2026-01-01&to=2026-06-01',
      '/console/deliveries?cursor=abc',
      '/console/deliveries?pos=a%20b',
      '/console/audit?cursor=-1',
      '/console/quarantine/retry?reason=DROP%20TABLE',
      '/console/quarantine/x1/retry',
      '/console/search?q=',
    ]) {
      const res = await get(path, operator);
      expect({ path, status: res.status }).toEqual({ path, status: 400 });
      expect(res.headers['content-type']).toMatch(/text\/html/);
    }
    const unknown = await get('/console/orders/NO-SUCH-ORDER-ANYWHERE', operator);
    expect(unknown.status).toBe(404);
    expect(unknown.text).toContain('No order or refund has the id');
    expect((await get('/console/no/such/page', operator)).status).toBe(404);
    const unconfirmed = await post('/console/orders/ANY/republish', operator, {});
    expect(unconfirmed.status).toBe(400);
    expect(unconfirmed.text).toContain('Nothing was done');
    expect(await auditRows()).toBe(before);
  });
});

describe('console: pages and actions', () => {
  it('When every page is read, then each answers 200 and nothing is written', async () => {
    const orderId = uniqueId('CPAGES');
    await deliver(orderBody({ orderId, status: 'PENDING' }));
    const [before] = await query(
      svc.database.url,
      `SELECT (SELECT count(*) FROM console_audit)::int AS audit, (SELECT count(*) FROM outbox_events WHERE published_at IS NULL)::int AS pending,
              (SELECT count(*) FROM quarantined_notifications WHERE resolved_at IS NULL)::int AS open`,
    );
    for (const path of [
      '/console',
      '/console/attention',
      '/console/deliveries',
      '/console/deliveries?outcome=accepted&pos=300746',
      '/console/audit',
      `/console/orders/${orderId}`,
      `/console/orders/${orderId}/reconcile`,
      `/console/orders/${orderId}/republish`,
      '/console/quarantine/retry',
      '/console/assets/console.css',
    ]) {
      const res = await get(path, operator);
      expect({ path, status: res.status }).toEqual({ path, status: 200 });
    }
    const [after] = await query(
      svc.database.url,
      `SELECT (SELECT count(*) FROM console_audit)::int AS audit, (SELECT count(*) FROM outbox_events WHERE published_at IS NULL)::int AS pending,
              (SELECT count(*) FROM quarantined_notifications WHERE resolved_at IS NULL)::int AS open`,
    );
    expect(after).toEqual(before);
  });

  it('When an operator re-publishes an order, then its events are pending again and the audit row is on its page', async () => {
    const orderId = uniqueId('CREPUB');
    await deliver(orderBody({ orderId, status: 'PENDING' }));
    await query(svc.database.url, 'UPDATE outbox_events SET published_at = now() WHERE order_id = $1', [orderId]);
    const confirm = await get(`/console/orders/${orderId}/republish`, operator);
    expect(confirm.text).toMatch(/<button[^>]*>Confirm/);
    const res = await post(`/console/orders/${orderId}/republish`, operator, { confirm: 'yes' });
    expect(res.status).toBe(200);
    expect(res.text).toContain('data-testid="result"');
    expect(res.text).toContain('1 event(s) will be published again');
    const pending = await query(
      svc.database.url,
      'SELECT id FROM outbox_events WHERE order_id = $1 AND published_at IS NULL',
      [orderId],
    );
    expect(pending).toHaveLength(1);
    const page = await get(`/console/orders/${orderId}`, viewer);
    expect(page.text).toMatch(/<td>olga<\/td>\s*<td>operator<\/td>\s*<td>republish<\/td>/);
    const audit = await get('/console/audit', viewer);
    expect(audit.text).toContain('republish');
  });

  it('When an operator reconciles with reconciliation off, then 409 and the refusal is audited', async () => {
    const orderId = uniqueId('CRECON');
    await deliver(orderBody({ orderId, status: 'PENDING' }));
    const res = await post(`/console/orders/${orderId}/reconcile`, operator, { confirm: 'yes' });
    expect(res.status).toBe(409);
    const rows = await query(
      svc.database.url,
      "SELECT actor, role, result FROM console_audit WHERE action = 'reconcile' AND order_id = $1",
      [orderId],
    );
    expect(rows).toEqual([{ actor: 'olga', role: 'operator', result: 'refused' }]);
  });

  it('When an operator retries quarantined notifications, one and in bulk, then each is audited with its count', async () => {
    const orderId = uniqueId('CQUAR');
    expect((await svc.post(orderBody({ orderId, status: 'PENDING', totalAmount: '150.00' }))).body.outcome).toBe(
      'quarantined',
    );
    const [row] = await query<{ id: string }>(
      svc.database.url,
      'SELECT id FROM quarantined_notifications WHERE resolved_at IS NULL ORDER BY id DESC LIMIT 1',
    );
    const id = (row as { id: string }).id;
    const attention = await get('/console/attention', operator);
    expect(attention.text).toContain(`/console/quarantine/${id}/retry`);
    const one = await post(`/console/quarantine/${id}/retry`, operator, { confirm: 'yes' });
    expect(one.status).toBe(200);
    expect(one.text).toContain('still unreadable');
    const count = await get('/console/quarantine/retry?reason=invalid_field', operator);
    expect(count.text).toMatch(/<strong>\d+<\/strong> open quarantined/);
    const bulk = await post('/console/quarantine/retry', operator, {
      confirm: 'yes',
      reason: 'invalid_field',
      pos: '',
    });
    expect(bulk.status).toBe(200);
    const audited = await query(
      svc.database.url,
      "SELECT action, result FROM console_audit WHERE action LIKE 'quarantine%' ORDER BY id",
    );
    expect(audited).toEqual([
      { action: 'quarantine_retry', result: 'still_unreadable' },
      { action: 'quarantine_retry_all', result: expect.stringMatching(/^0 of \d+ recorded$/) },
    ]);
  });

  it('When a retried quarantined notification is recorded, then its audit row is on its order page', async () => {
    const orderId = uniqueId('CQFIX');
    const id = await quarantineAsOlderVersion(svc.database.url, orderBody({ orderId, status: 'PENDING' }));
    const retried = await post(`/console/quarantine/${id}/retry`, operator, { confirm: 'yes' });
    expect(retried.status).toBe(200);
    expect(
      await query(svc.database.url, 'SELECT result, order_id FROM console_audit WHERE target = $1', [
        `quarantine #${id}`,
      ]),
    ).toEqual([{ result: 'recorded', order_id: orderId }]);
    const page = await get(`/console/orders/${orderId}`, operator);
    expect(page.status).toBe(200);
    expect(page.text).toContain(`quarantine #${id}`);
  });
});
