import request from 'supertest';
import { query } from '../../support/database';
import { CONSOLE_ENV, OPERATOR_TOKEN, SAME_ORIGIN, signIn, VIEWER_TOKEN, textOf } from '../../support/console';
import { startTestService, type TestService } from '../../support/service';
import { quarantineAsOlderVersion } from '../../support/quarantine';
import { orderBody, refundBody, uniqueId } from '../../support/signing';
import { holdEvents, pendingEventsOf } from '../../support/outbox';

let svc: TestService;
let operator: string;
let viewer: string;
beforeAll(async () => {
  svc = await startTestService({
    env: { RELAY_ENABLED: 'false', ...CONSOLE_ENV, CONSOLE_TIME_ZONE: 'Europe/Warsaw', CONSOLE_CONFIRM_WITHIN: '3d' },
  });
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

  it('When a token signs in, then the cookie is a __Host- cookie: HttpOnly, SameSite=Strict, Secure, Path=/, no Domain, with an expiry', async () => {
    const res = await request(svc.adminUrl)
      .post('/console/sign-in')
      .set(SAME_ORIGIN)
      .type('form')
      .send({ token: VIEWER_TOKEN });
    expect(res.status).toBe(303);
    const cookie = ([] as string[]).concat(res.headers['set-cookie'] ?? [])[0] ?? '';
    expect(cookie).toMatch(/^__Host-console_session=[A-Za-z0-9_-]{43}; /);
    expect(cookie).toMatch(/; HttpOnly/);
    expect(cookie).toMatch(/; SameSite=Strict/);
    expect(cookie).toMatch(/; Secure/);
    expect(cookie).toMatch(/; Path=\/;/);
    expect(cookie).not.toMatch(/Domain/i);
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
    for (const section of [
      'Timeline',
      'Checks with the payment service',
      'Events for other services',
      'Refunds',
      'What the payment service sent',
      'What the payment service said when asked',
      'Who did what here',
    ])
      expect(page.text).toMatch(new RegExp(`<h2>(<a [^>]*>)?${section}(</a>)?</h2>`));
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

  it('When a body holds a field unknown today, then a viewer sees its value redacted, and an operator sees it', async () => {
    const orderId = uniqueId('CNEW');
    const body = JSON.parse(orderBody({ orderId, status: 'PENDING' })) as { order: Record<string, unknown> };
    body.order.loyaltyCard = 'LOYALTY-4242-1717';
    await deliver(JSON.stringify({ ...body, shipping: { address: 'Ulica Nowa 5, Kraków' } }));
    const asViewer = await get(`/console/orders/${orderId}`, viewer);
    expect(asViewer.status).toBe(200);
    expect(asViewer.text).toContain('loyaltyCard');
    for (const secret of ['LOYALTY-4242-1717', 'Ulica Nowa']) expect(asViewer.text).not.toContain(secret);
    const asOperator = await get(`/console/orders/${orderId}`, operator);
    expect(asOperator.text).toContain('LOYALTY-4242-1717');
  });
});

describe('console: bad input gets a clear page and changes nothing', () => {
  it('When the cookie is forged, then 401 with the sign-in form and the cookie cleared', async () => {
    const [name] = viewer.split('=') as [string, string];
    for (const cookie of [
      `${name}=${'A'.repeat(43)}`,
      `${name}=v1.victor.viewer.1.${'A'.repeat(43)}`,
      `${name}=nonsense`,
    ]) {
      const res = await get('/console/attention', cookie);
      expect(res.status).toBe(401);
      expect(res.text).toContain('name="token"');
      expect(res.text).toMatch(/Your session (has ended|is not valid)/);
      expect(String(res.headers['set-cookie'])).toContain(
        `${name}=; Path=/; HttpOnly; Secure; SameSite=Strict; Max-Age=0`,
      );
    }
  });

  it('When a session is past its expiry, then 401 saying so, and its row is gone', async () => {
    const cookie = await signIn(svc.adminUrl, VIEWER_TOKEN);
    await query(
      svc.database.url,
      "UPDATE console_sessions SET expires_at = now() - interval '1 second' WHERE id_hash = sha256(convert_to($1, 'UTF8'))",
      [cookie.split('=')[1]],
    );
    const res = await get('/console/attention', cookie);
    expect(res.status).toBe(401);
    expect(res.text).toContain('Your session has expired');
    expect(
      await query(svc.database.url, "SELECT 1 FROM console_sessions WHERE id_hash = sha256(convert_to($1, 'UTF8'))", [
        cookie.split('=')[1],
      ]),
    ).toEqual([]);
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
      `SELECT (SELECT count(*) FROM console_audit)::int AS audit, (SELECT count(*) FROM outbox_held)::int AS held,
              (SELECT count(*) FROM quarantined_notifications WHERE resolved_at IS NULL)::int AS open`,
    );
    for (const path of [
      '/console',
      '/console/attention',
      '/console/deliveries',
      '/console/deliveries?outcome=accepted&pos=300746',
      '/console/audit',
      '/console/audit?actor=olga&action=sign_in',
      '/console/sessions',
      '/console/signed-out',
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
      `SELECT (SELECT count(*) FROM console_audit)::int AS audit, (SELECT count(*) FROM outbox_held)::int AS held,
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
    expect(res.text).toContain('1 event will be passed on to other services again');
    expect(res.text).toContain('data-outcome="done"');
    expect(await pendingEventsOf(svc.database.url, orderId)).toBe(1);
    const page = await get(`/console/orders/${orderId}`, viewer);
    // Who, from where (as the API's actions are), what and how it ended.
    expect(page.text).toMatch(
      /<td><bdi>olga<\/bdi><\/td>\s*<td>operator<\/td>\s*<td>\s*the console<br \/><span class="muted">127\.0\.0\.1<\/span>\s*<\/td>\s*<td>sent the order’s events again/,
    );
    expect(
      await query(
        svc.database.url,
        "SELECT host(source_address) AS source, result, detail FROM console_audit WHERE action = 'republish' AND order_id = $1",
        [orderId],
      ),
    ).toEqual([{ source: '127.0.0.1', result: 'done', detail: '1 event(s) pending again' }]);
    const audit = await get('/console/audit', viewer);
    expect(audit.text).toContain('republish');
  });

  it('When the audit page is filtered by person, action, order and time, then only matching rows show, a bounded page at a time', async () => {
    const orderId = uniqueId('CAUDF');
    await deliver(orderBody({ orderId, status: 'PENDING' }));
    for (let i = 0; i < 3; i++)
      expect((await post(`/console/orders/${orderId}/republish`, operator, { confirm: 'yes' })).status).toBe(200);
    const rows = (text: string) => [...text.matchAll(/<tr>\s*<td><time/g)].length;
    const byOrder = await get(`/console/audit?order=${orderId}`, viewer);
    expect(byOrder.status).toBe(200);
    expect(rows(byOrder.text)).toBe(3);
    const byAll = await get(
      `/console/audit?actor=olga&action=republish&order=${orderId}&from=2020-01-01&to=2099-01-01`,
      viewer,
    );
    expect(rows(byAll.text)).toBe(3);
    expect(byAll.text).toContain('<option value="republish"  selected>');
    expect(rows((await get(`/console/audit?actor=victor&order=${orderId}`, viewer)).text)).toBe(0);
    expect(rows((await get(`/console/audit?action=sign_out&order=${orderId}`, viewer)).text)).toBe(0);
    expect(rows((await get(`/console/audit?order=${orderId}&to=2020-01-01`, viewer)).text)).toBe(0);
    for (const bad of [
      'action=drop_table',
      'order=a%2Fb',
      'from=yesterday',
      'from=2026-01-02&to=2026-01-01',
      `actor=${'x'.repeat(201)}`,
      'actor=a&actor=b',
    ])
      expect({ bad, status: (await get(`/console/audit?${bad}`, viewer)).status }).toEqual({ bad, status: 400 });
  });

  it('When the audit trail holds more than a page, then the page is bounded and Older keeps the filters', async () => {
    const orderId = uniqueId('CAUDP');
    await deliver(orderBody({ orderId, status: 'PENDING' }));
    await query(
      svc.database.url,
      `INSERT INTO console_audit (actor, role, action, target, order_id, result)
       SELECT 'olga', 'operator', 'republish', $1, $1, 'done' FROM generate_series(1, 60)`,
      [orderId],
    );
    const first = await get(`/console/audit?order=${orderId}&action=republish`, viewer);
    expect([...first.text.matchAll(/<tr>\s*<td><time/g)].length).toBe(50);
    const older = /<a rel="next" href="([^"]+)"/.exec(first.text)?.[1]?.replaceAll('&amp;', '&') ?? '';
    expect(older).toContain(`order=${orderId}`);
    expect(older).toContain('action=republish');
    const second = await get(older, viewer);
    expect([...second.text.matchAll(/<tr>\s*<td><time/g)].length).toBe(10);
    expect(second.text).not.toContain('rel="next"');
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
    expect(one.text).toContain('still cannot be read');
    expect(one.text).toContain('data-outcome="not_done"');
    const count = await get('/console/quarantine/retry?reason=invalid_field', operator);
    expect(count.text).toMatch(/<strong>\d+<\/strong> notification\(s\) set aside/);
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

/** The page's text between two markers (the raw bodies are the last part of an order's page). */
const before = (page: string, marker: string): string => page.slice(0, page.indexOf(marker));

const warsaw = new Intl.DateTimeFormat('en-GB', {
  timeZone: 'Europe/Warsaw',
  hour: '2-digit',
  minute: '2-digit',
  second: '2-digit',
  hourCycle: 'h23',
});

describe("console: the shop's language", () => {
  it('When an order of 223471 PLN has two finalized refunds of 28013, then its page shows major units, the refunded total and net paid, and no minor units outside the bodies', async () => {
    const orderId = uniqueId('CMONEY');
    await deliver(orderBody({ orderId, status: 'PENDING', totalAmount: '223471' }));
    await deliver(orderBody({ orderId, status: 'COMPLETED', totalAmount: '223471', paymentId: `P${orderId}` }));
    for (const n of [1, 2]) {
      await deliver(refundBody({ orderId, refundId: `R${n}${orderId}`, status: 'PENDING', amount: '28013' }));
      await deliver(refundBody({ orderId, refundId: `R${n}${orderId}`, status: 'FINALIZED', amount: '28013' }));
    }
    await deliver(refundBody({ orderId, refundId: `R3${orderId}`, status: 'PENDING', amount: '1000' }));
    const page = await get(`/console/orders/${orderId}`, viewer);
    const shown = textOf(before(page.text, 'What the payment service sent'));
    expect(shown).toContain('Amount 2,234.71 PLN');
    expect(shown.match(/280\.13 PLN/g)).toHaveLength(2); // each finalized refund's row
    expect(shown).toContain('Refunded 560.26 PLN in 2 refunds');
    expect(shown).toContain('Refunds in progress 10.00 PLN in 1 refund');
    expect(shown).toContain('Net paid 1,674.45 PLN');
    expect(shown).not.toMatch(/223471|28013|56026/);
    // The bodies, as received, keep the minor units.
    expect(textOf(page.text.slice(page.text.indexOf('What the payment service sent')))).toContain(
      '"totalAmount": "223471"',
    );
  });

  it('When a notification states another amount than the first, then both are shown as money, on the order and under needs attention', async () => {
    const orderId = uniqueId('CDISAGREE');
    await deliver(orderBody({ orderId, status: 'PENDING', totalAmount: '223471' }));
    await deliver(orderBody({ orderId, status: 'COMPLETED', totalAmount: '223472' }));
    const page = textOf(
      before((await get(`/console/orders/${orderId}`, viewer)).text, 'What the payment service sent'),
    );
    expect(page).toMatch(/totalAmount 2,234\.71 PLN 2,234\.72 PLN/);
    expect(page).not.toMatch(/22347[12]/);
    const attention = (await get('/console/attention', viewer)).text;
    const section = textOf(attention.slice(attention.indexOf('id="contradictions"')));
    expect(section).toContain('totalAmount: kept 2,234.71 PLN, received 2,234.72 PLN');
  });

  it('When an amount is in a currency the console does not know, then it is shown as received and marked', async () => {
    const orderId = uniqueId('CXYZ');
    await deliver(orderBody({ orderId, status: 'PENDING', totalAmount: '223471', currencyCode: 'XYZ' }));
    const page = await get(`/console/orders/${orderId}`, viewer);
    expect(textOf(before(page.text, 'What the payment service sent'))).toContain(
      '223471 XYZ (as received: in minor units; the currency XYZ is not one the console knows)',
    );
  });

  it('When the zone is Europe/Warsaw, then every time shown is the local one with its zone, the instant kept in datetime', async () => {
    const orderId = uniqueId('CZONE');
    await deliver(orderBody({ orderId, status: 'PENDING' }));
    for (const path of [`/console/orders/${orderId}`, '/console/deliveries', '/console/attention', '/console']) {
      const page = await get(path, viewer);
      const times = [...page.text.matchAll(/<time datetime="([^"]+)"[^>]*>([^<]*)<\/time>/g)];
      expect([path, times.length > 0]).toEqual([path, true]);
      for (const [, iso, shown] of times) {
        expect(shown).toContain(warsaw.format(new Date(iso ?? '')));
        expect(shown).toMatch(/ CES?T$/);
      }
      expect(page.text).toContain('Times are in <strong>Europe/Warsaw</strong>');
    }
  });

  it('When the deliveries are filtered by local times, then they are read in the zone; bad ones get 400 with the expected format', async () => {
    const page = await get('/console/deliveries?from=2026-11-27T09:00&to=2026-11-27T10:00', viewer);
    expect(page.status).toBe(200);
    expect(page.text).toContain('datetime="2026-11-27T08:00:00.000Z"');
    expect(page.text).toContain('datetime="2026-11-27T09:00:00.000Z"');
    expect(page.text).toContain('value="2026-11-27T09:00:00"');
    const skipped = await get('/console/deliveries?from=2026-03-29T02:30&to=2026-03-29T05:00', viewer);
    expect(skipped.status).toBe(200);
    expect(textOf(skipped.text)).toContain('does not exist in this time zone (the clocks skip it)');
    expect(skipped.text).toContain('datetime="2026-03-29T01:00:00.000Z"');
    for (const [query, says] of [
      ['from=27.11.2026', 'must be a date such as 2026-11-27 or a local time such as 2026-11-27T09:00 (Europe/Warsaw)'],
      ['from=1999-12-31', 'between the years 2000 and 2099'],
      ['from=2026-02-30', 'must be a date such as 2026-11-27'],
      ['from=2026-11-28&to=2026-11-27', 'from must be before to'],
    ] as const) {
      const res = await get(`/console/deliveries?${query}`, viewer);
      expect({ query, status: res.status }).toEqual({ query, status: 400 });
      expect(textOf(res.text)).toContain(says);
    }
  });

  it('When deliveries are listed, then every one leads to its order, duplicates and late ones too, and a set-aside one to its page', async () => {
    const orderId = uniqueId('CLINK');
    await deliver(orderBody({ orderId, status: 'COMPLETED' }));
    await deliver(orderBody({ orderId, status: 'COMPLETED' })); // received twice
    await deliver(orderBody({ orderId, status: 'PENDING' })); // arrived late
    expect(
      (await svc.post(orderBody({ orderId: uniqueId('CLINKQ'), status: 'PENDING', totalAmount: '1.5' }))).body.outcome,
    ).toBe('quarantined');
    const page = await get('/console/deliveries', viewer);
    const rows = [...page.text.matchAll(/<tr>\s*<td><time[\s\S]*?<\/tr>/g)].map((m) => m[0]);
    expect(rows.length).toBeGreaterThan(3);
    for (const row of rows) expect(row).toMatch(/href="\/console\/(orders|quarantine)\//);
    const ours = rows.filter((r) => r.includes(`/console/orders/${orderId}"`));
    expect(
      ours
        .map((r) => textOf(r).match(/recorded|received twice|arrived after a later status and was ignored/)?.[0])
        .sort(),
    ).toEqual(['arrived after a later status and was ignored', 'received twice', 'recorded']);
    const quarantined = /href="(\/console\/quarantine\/\d+)"/.exec(page.text)?.[1] ?? '';
    const detail = await get(quarantined, viewer);
    expect(detail.status).toBe(200);
    expect(textOf(detail.text)).toContain('a field holds a value the service does not accept');
  });

  it('When a value holds U+202E, then it is isolated wherever a page shows it, and not in the title', async () => {
    const orderId = uniqueId('CBIDI');
    // An id holding it is quarantined (issue 45: it would look like another id); any other value is shown, isolated.
    const asId = await svc.post(
      orderBody({ orderId: uniqueId('CBIDQ'), extOrderId: 'shop-\u202e1234-abc', status: 'PENDING' }),
    );
    expect(asId.body.outcome).toBe('quarantined');
    await deliver(orderBody({ orderId, status: 'COMPLETED', payMethodType: `PBL\u202e-evil` }));
    const page = (await get(`/console/orders/${orderId}`, operator)).text;
    const at = [...page.matchAll(/\u202e/g)].map((m) => m.index ?? 0);
    expect(at.length).toBeGreaterThan(0);
    for (const index of at) {
      const open = page.lastIndexOf('<bdi>', index);
      expect(open).toBeGreaterThan(page.lastIndexOf('</bdi>', index));
    }
    expect(page).toContain('⟨U+202E⟩'); // written out in the bodies
    expect(page.slice(page.indexOf('<title>'), page.indexOf('</title>'))).not.toContain('\u202e');
  });

  it('When the glossary is read, then it explains every status for the customer and the shop, and every page links it', async () => {
    const glossary = await request(svc.adminUrl).get('/console/glossary');
    expect(glossary.status).toBe(200);
    for (const status of ['NEW', 'PENDING', 'WAITING_FOR_CONFIRMATION', 'COMPLETED', 'CANCELED'])
      expect(glossary.text).toContain(`id="order-${status}"`);
    for (const status of ['PENDING', 'FINALIZED', 'CANCELED']) expect(glossary.text).toContain(`id="refund-${status}"`);
    expect(textOf(glossary.text)).toContain('Refunded (FINALIZED) The money was sent back to the card or account');
    const orderId = uniqueId('CGLOSS');
    await deliver(orderBody({ orderId, status: 'PENDING' }));
    const anchors = new Set([...glossary.text.matchAll(/id="([^"]+)"/g)].map((m) => m[1]));
    for (const path of [
      '/console',
      '/console/attention',
      '/console/deliveries',
      '/console/audit',
      '/console/export',
      `/console/orders/${orderId}`,
    ]) {
      const page = await get(path, viewer);
      expect([path, page.text.includes('href="/console/glossary"')]).toEqual([path, true]);
      // Every word a page links to the glossary is one the glossary explains.
      for (const [, anchor] of page.text.matchAll(/href="\/console\/glossary#([^"]+)"/g))
        expect([path, anchor, anchors.has(anchor)]).toEqual([path, anchor, true]);
    }
  });

  it('When an order waits for the shop’s confirmation, then needs attention lists it with its deadline', async () => {
    const orderId = uniqueId('CWAIT');
    await deliver(orderBody({ orderId, status: 'WAITING_FOR_CONFIRMATION', totalAmount: '223471' }));
    const page = await get('/console/attention', viewer);
    const line = /<tr id="line-confirmation"[\s\S]*?<\/tr>/.exec(page.text)?.[0] ?? '';
    expect(line).toContain('data-severity="warning"');
    expect(textOf(line)).toMatch(/The first deadline: \d+ \w+ \d{4}, \d\d:\d\d:\d\d CES?T \(in (3 days|2 days 23 h)\)/);
    expect(line).toContain('href="/console/attention#confirmation"');
    const section = page.text.slice(page.text.indexOf('id="confirmation"'));
    expect(section).toContain(`/console/orders/${orderId}`);
    expect(textOf(section)).toContain('2,234.71 PLN');
  });

  it('When an order waits for the shop’s confirmation, then its page says by when to confirm or cancel it, exactly and relatively, and what each does', async () => {
    const orderId = uniqueId('CWPAGE');
    await deliver(orderBody({ orderId, status: 'WAITING_FOR_CONFIRMATION' }));
    const page = await get(`/console/orders/${orderId}`, viewer);
    const box = textOf(
      /<section class="notice" data-testid="confirm-by"[\s\S]*?<\/section>/.exec(page.text)?.[0] ?? '',
    );
    expect(box).toMatch(/Confirm or cancel it by \d+ \w+ \d{4}, \d\d:\d\d:\d\d CES?T \(in (3 days|2 days 23 h)\)/);
    expect(box).toContain('To take the money');
    expect(box).toContain('Not to take it');
    expect(box).toContain('the payment service cancels it by itself');
  });

  it('When an order was paid and then canceled, then its page opens with what is uncertain, never as settled, and what to do', async () => {
    const orderId = uniqueId('CCONTRA');
    await deliver(orderBody({ orderId, status: 'PENDING' }));
    await deliver(orderBody({ orderId, status: 'COMPLETED', localReceiptDateTime: '2026-11-02T12:00:00' }));
    await deliver(orderBody({ orderId, status: 'CANCELED' }));
    const page = (await get(`/console/orders/${orderId}`, viewer)).text;
    const first = page.indexOf('data-testid="uncertain"');
    expect(first).toBeGreaterThan(-1);
    expect(first).toBeLessThan(page.indexOf('data-testid="facts"'));
    const box = textOf(/<section class="notice bad" data-testid="uncertain"[\s\S]*?<\/section>/.exec(page)?.[0] ?? '');
    expect(box).toMatch(/The money may have been taken, or not: COMPLETED came at .+ CES?T .*, CANCELED at /);
    expect(box).toContain('Hold it');
    expect(box).toContain('POST /orders/{id}/reconcile');
    const shown = textOf(before(page, 'What the payment service sent'));
    expect(shown).not.toContain('The customer has paid');
    expect(shown).toContain('not settled');
    expect(shown).not.toContain('Net paid');
    // When the payment service says the money moved (its local time, read in Europe/Warsaw), beside when we heard.
    expect(shown).toMatch(/Paid at the payment service 2 Nov 2026, 12:00:00 CET .*read in Europe\/Warsaw.*Heard by us/);
  });

  it('When a search finds several orders and one was paid and then canceled, then its result says contradicted and held, not Paid', async () => {
    const extOrderId = uniqueId('ext-CSEARCH');
    const [settled, contradicted] = [uniqueId('CSEARCH1'), uniqueId('CSEARCH2')];
    await deliver(orderBody({ orderId: settled, extOrderId, status: 'COMPLETED' }));
    await deliver(orderBody({ orderId: contradicted, extOrderId, status: 'COMPLETED' }));
    await deliver(orderBody({ orderId: contradicted, extOrderId, status: 'CANCELED' }));
    await deliver(
      refundBody({ orderId: settled, refundId: `R${settled}`, extRefundId: extOrderId, status: 'FINALIZED' }),
    );
    await deliver(
      refundBody({ orderId: settled, refundId: `R${settled}`, extRefundId: extOrderId, status: 'CANCELED' }),
    );
    const page = await get(`/console/search?q=${encodeURIComponent(extOrderId)}`, viewer);
    expect(page.status).toBe(200);
    const row = (orderId: string, field: string): string =>
      textOf(
        [...page.text.matchAll(/<tr>[\s\S]*?<\/tr>/g)]
          .map((m) => m[0])
          .find((r) => r.includes(`/console/orders/${orderId}`) && textOf(r).includes(field)) ?? '',
      );
    expect(row(contradicted, 'shop reference')).toMatch(
      /contradicted: Paid \(COMPLETED\) .+, then Canceled \(CANCELED\) .+; held until reconciled/,
    );
    expect(row(settled, 'shop reference')).not.toContain('contradicted');
    expect(row(settled, 'refund reference')).toMatch(/contradicted: .*\(FINALIZED\) .+, then .*\(CANCELED\) .+; held/);
  });

  it('When a refund was finalized and then canceled, then its order page says so; its reason and description show to a viewer', async () => {
    const orderId = uniqueId('CRCONTRA');
    await deliver(orderBody({ orderId, status: 'COMPLETED' }));
    await deliver(refundBody({ orderId, refundId: `R${orderId}`, status: 'FINALIZED' }));
    await deliver(refundBody({ orderId, refundId: `R${orderId}`, status: 'CANCELED' }));
    const page = (await get(`/console/orders/${orderId}`, viewer)).text;
    const box = textOf(/<section class="notice bad" data-testid="uncertain"[\s\S]*?<\/section>/.exec(page)?.[0] ?? '');
    expect(box).toMatch(/The money may have gone back to the customer, or not: FINALIZED came at .*, CANCELED at /);
    const refunds = textOf(
      page.slice(page.indexOf('data-testid="reason-note"'), page.indexOf('What the payment service sent')),
    );
    expect(refunds).toContain('refund: customer request');
    expect(refunds).toContain('not the customer’s personal data');
    expect(refunds).toMatch(/Refunded at the payment service 2 Nov 2026, 11:59:59 CET/);
    expect(textOf(page)).not.toMatch(/"reason": "\[redacted/);
  });

  it('When events wait for the broker, then needs attention says how many orders other services miss, the broker’s answer and links them', async () => {
    const orderId = uniqueId('CWAITEV');
    await deliver(orderBody({ orderId, status: 'PENDING' }));
    await holdEvents(svc.database.url, orderId, 3, 'returned: unroutable: no queue bound');
    const page = await get('/console/attention', viewer);
    const line = /<tr id="line-events-waiting"[\s\S]*?<\/tr>/.exec(page.text)?.[0] ?? '';
    expect(textOf(line)).toContain('returned: unroutable: no queue bound');
    expect(textOf(line)).toMatch(/do not know yet about these \d+ orders?/);
    expect(line).toContain('href="/console/attention#events-waiting"');
    expect(page.text.slice(page.text.indexOf('id="events-waiting"'))).toContain(`/console/orders/${orderId}`);
  });

  it('When tomorrow’s day of history is missing, then needs attention says so; when it is back, all is well', async () => {
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
    const partition = `notification_variants_p${tomorrow.replaceAll('-', '')}`;
    await query(svc.database.url, `ALTER TABLE notification_variants DETACH PARTITION ${partition}`);
    await query(svc.database.url, `DROP TABLE ${partition}`);
    try {
      const line = /<tr id="line-history-days"[\s\S]*?<\/tr>/.exec((await get('/console/attention', viewer)).text)?.[0];
      expect(line).toContain('data-severity="warning"');
      expect(textOf(line ?? '')).toContain('A day of history is missing');
    } finally {
      await query(svc.database.url, 'SELECT history_partitions_ensure($1::date, $1::date)', [tomorrow]);
    }
    const line = /<tr id="line-history-days"[\s\S]*?<\/tr>/.exec((await get('/console/attention', viewer)).text)?.[0];
    expect(line).toContain('data-severity="ok"');
  });
});
