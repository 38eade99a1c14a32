import request from 'supertest';
import { secondsLeftInMinute, SIGN_IN_LIMITS } from '../../src/console/signInThrottle';
import {
  CONSOLE_ENV,
  fromAddress,
  metricValue,
  OPERATOR_TOKEN,
  SAME_ORIGIN,
  signIn,
  signInFrom,
  VIEWER_TOKEN,
} from '../support/console';
import { query } from '../support/database';
import { startTestService, type TestService } from '../support/service';
import { orderBody, uniqueId } from '../support/signing';
import { waitUntil } from '../support/wait';

const ADMIN_TOKEN = 'admin-token-for-the-doors-0123';

describe('the admin port without tokens', () => {
  let svc: TestService | null = null;
  afterEach(async () => {
    await svc?.stop();
    svc = null;
  });

  it('When the admin port is bound to loopback, then the console and the data routes are open, as the operator local', async () => {
    svc = await startTestService({ env: { RELAY_ENABLED: 'false' } });
    const res = await request(svc.adminUrl).get('/console');
    expect(res.status).toBe(200);
    expect(res.text).toContain('local (operator)');
    expect((await svc.admin.get('/orders/NOT-THERE')).status).toBe(404);
  });

  it('When the admin port is bound to every address, then every console page answers 403 and every data route 401 saying what to set, while probes and metrics answer', async () => {
    svc = await startTestService({ env: { RELAY_ENABLED: 'false', HOST: '0.0.0.0' } });
    const orderId = uniqueId('CLOSED');
    expect((await svc.post(orderBody({ orderId, status: 'PENDING' }))).status).toBe(200);
    for (const path of ['/console', '/console/sign-in', '/console/orders/X']) {
      const res = await request(svc.adminUrl).get(path);
      expect(res.status).toBe(403);
      expect(res.text).toContain('CONSOLE_OPERATOR_TOKENS');
    }
    const post = await request(svc.adminUrl)
      .post('/console/sign-in')
      .set(SAME_ORIGIN)
      .type('form')
      .send({ token: 'x' });
    expect(post.status).toBe(403);
    // An order that exists and one that does not answer alike: nothing tells which ids exist.
    for (const path of [`/orders/${orderId}`, '/orders/NOT-THERE', '/refunds/R1']) {
      const res = await svc.admin.get(path);
      expect(res.status).toBe(401);
      expect(res.body.error.message).toContain('set ADMIN_TOKEN');
    }
    expect((await svc.admin.post(`/orders/${orderId}/reconcile`)).status).toBe(401);
    for (const path of ['/livez', '/readyz', '/metrics']) expect((await svc.admin.get(path)).status).toBe(200);
    expect(svc.logs.join('\n')).toContain("the admin port's data routes (/orders, /refunds, reconcile) answer 401");
    expect(svc.logs.find((l) => l.includes('"service started"'))).toContain(
      '"adminDoors":{"dataRoutes":"closed","console":"closed"}',
    );
  });
});

describe('the admin port answers only the Hosts it expects', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService({
      env: { RELAY_ENABLED: 'false', ADMIN_ORIGINS: 'https://console.example.com' },
    });
  });
  afterAll(() => svc.stop());

  it('When a request names another Host (a rebound name), then 421 before any lookup, on the console and the JSON API; probes and metrics answer any Host', async () => {
    const orderId = uniqueId('HOST');
    expect((await svc.post(orderBody({ orderId, status: 'PENDING' }))).status).toBe(200);
    for (const host of [
      'evil.example:9090',
      'evil.example',
      '10.0.0.5:9090',
      'console.example.com:9090',
      '127.0.0.1.evil.example',
    ])
      for (const path of ['/', '/console', `/console/orders/${orderId}`, `/orders/${orderId}`, '/no/such/route']) {
        const res = await svc.admin.get(path).set('Host', host);
        expect({ host, path, status: res.status }).toEqual({ host, path, status: 421 });
        expect(res.text).not.toContain(orderId);
      }
    const posted = await svc.admin.post(`/orders/${orderId}/reconcile`).set('Host', 'evil.example:9090');
    expect(posted.status).toBe(421);
    for (const path of ['/livez', '/readyz', '/metrics'])
      expect((await svc.admin.get(path).set('Host', '10.1.2.3:9090')).status).toBe(200);
    expect(await query(svc.database.url, "SELECT 1 FROM console_audit WHERE action = 'reconcile'")).toEqual([]);
  });

  it('When the Host is loopback (any port: a port-forward picks its own) or an ADMIN_ORIGINS entry, then it is served', async () => {
    for (const host of [
      '127.0.0.1:9090',
      'localhost:18080',
      '[::1]:9090',
      'console.example.com',
      'CONSOLE.example.com:443',
    ])
      expect({ host, status: (await request(svc.adminUrl).get('/console').set('Host', host)).status }).toEqual({
        host,
        status: 200,
      });
  });

  it('When the Host header is given twice, then 400', async () => {
    const res = await fetchRaw(
      svc.service.adminPort,
      'GET /console HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n',
    );
    expect(res).toMatch(/^HTTP\/1\.1 400 /);
  });

  it('When / is asked on the admin port, then it leads to the console', async () => {
    const res = await request(svc.adminUrl).get('/');
    expect(res.status).toBe(303);
    expect(res.headers.location).toBe('/console');
  });

  it("When a form's Origin is the request's own Host but not an origin the port expects, then it is refused", async () => {
    // Open mode (loopback, no token): the console's same-origin check and the JSON API's compare with the expected origin.
    const orderId = uniqueId('ORIGIN');
    expect((await svc.post(orderBody({ orderId, status: 'PENDING' }))).status).toBe(200);
    const consolePost = await request(svc.adminUrl)
      .post(`/console/orders/${orderId}/republish`)
      .set('Host', 'console.example.com')
      .set('Origin', 'http://console.example.com')
      .type('form')
      .send({ confirm: 'yes' });
    expect(consolePost.status).toBe(403);
    const apiPost = await svc.admin.post(`/orders/${orderId}/reconcile`).set('Origin', 'https://evil.example').send({});
    expect(apiPost.status).toBe(403);
    expect(apiPost.body.error.code).toBe('cross_site_request');
    const crossSite = await svc.admin.post(`/orders/${orderId}/reconcile`).set('Sec-Fetch-Site', 'cross-site');
    expect(crossSite.status).toBe(403);
    const sameOrigin = await request(svc.adminUrl)
      .post(`/console/orders/${orderId}/republish`)
      .set('Host', 'console.example.com')
      .set('Origin', 'https://console.example.com')
      .type('form')
      .send({ confirm: 'yes' });
    expect(sameOrigin.status).toBe(200);
  });
});

/** One raw request over a fresh connection: what a client library would not send (a doubled Host). */
async function fetchRaw(port: number, text: string): Promise<string> {
  const net = await import('node:net');
  return new Promise((resolve, reject) => {
    // Written, not ended: a half-closed client waiting in the admission queue counts as one that left.
    const socket = net.connect(port, '127.0.0.1', () => socket.write(text));
    let answer = '';
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString('latin1')));
    socket.on('end', () => resolve(answer));
    socket.on('error', reject);
  });
}

describe('sign-in under guessing', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService({ env: { RELAY_ENABLED: 'false', ADMIN_TOKEN, ...CONSOLE_ENV } });
  });
  afterAll(() => svc.stop());

  it('When one address fails past its limit, then it gets 429 without its token checked (a right one too), while another address still signs in; one row counts the refusals and one the throttled minute, with its source', async () => {
    const { perSource } = SIGN_IN_LIMITS;
    const statuses: number[] = [];
    for (let i = 0; i < perSource; i++)
      statuses.push((await signInFrom(svc.adminUrl, '127.0.0.2', `wrong-${i}`)).status);
    expect(statuses).toEqual(Array.from({ length: perSource }, () => 401));
    const throttled = await signInFrom(svc.adminUrl, '127.0.0.2', 'wrong-again');
    expect(throttled.status).toBe(429);
    expect(Number(throttled.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(Number(throttled.headers['retry-after'])).toBeLessThanOrEqual(60);
    expect(throttled.text).toContain('Too many failed sign-ins');
    const right = await signInFrom(svc.adminUrl, '127.0.0.2', OPERATOR_TOKEN);
    expect(right.status).toBe(429);
    expect(right.headers['set-cookie']).toBeUndefined();
    // The JSON API's bearer token is the same door: not checked from that address either.
    const bearer = await svc.admin
      .get('/orders/ANY')
      .agent(fromAddress('127.0.0.2'))
      .set('Authorization', `Bearer ${ADMIN_TOKEN}`);
    expect(bearer.status).toBe(429);
    expect(bearer.body.error.code).toBe('too_many_failures');
    expect((await signInFrom(svc.adminUrl, '127.0.0.3', VIEWER_TOKEN)).status).toBe(303);

    expect(
      await query(
        svc.database.url,
        `SELECT result, via, count, host(source_address) AS source FROM console_audit
          WHERE action = 'sign_in' AND actor = '(unknown)' ORDER BY id`,
      ),
    ).toEqual([
      { result: 'refused', via: 'console', count: perSource, source: '127.0.0.2' },
      { result: 'throttled', via: 'console', count: 2, source: '127.0.0.2' },
      { result: 'throttled', via: 'api', count: 1, source: '127.0.0.2' },
    ]);
    expect(await metricValue(svc.adminUrl, 'admin_sign_ins_total', ['result="refused"'])).toBe(perSource);
    expect(await metricValue(svc.adminUrl, 'admin_sign_ins_total', ['result="throttled"'])).toBe(3);
    expect(await metricValue(svc.adminUrl, 'admin_sign_ins_total', ['result="signed_in"'])).toBe(1);
  });

  it('When a wrong bearer token is tried on the JSON API, then it counts against its address like a failed sign-in', async () => {
    const wrong = await svc.admin
      .get('/orders/ANY')
      .agent(fromAddress('127.0.0.4'))
      .set('Authorization', 'Bearer not-the-token-at-all');
    expect(wrong.status).toBe(401);
    expect(
      await query(svc.database.url, "SELECT failures FROM console_sign_in_failures WHERE source = '127.0.0.4'"),
    ).toEqual([{ failures: 1 }]);
    const right = await svc.admin
      .get('/orders/ANY')
      .agent(fromAddress('127.0.0.4'))
      .set('Authorization', `Bearer ${ADMIN_TOKEN}`);
    expect(right.status).toBe(404);
  });

  it("When the JSON API acts with ADMIN_TOKEN, then the audit trail records it as admin through the api, and the order's page shows it", async () => {
    const orderId = uniqueId('APIAUD');
    expect((await svc.post(orderBody({ orderId, status: 'PENDING' }))).status).toBe(200);
    const res = await svc.admin.post(`/orders/${orderId}/reconcile`).set('Authorization', `Bearer ${ADMIN_TOKEN}`);
    expect(res.status).toBe(409); // reconciliation is off here: refused, and recorded as refused
    expect(
      await query(svc.database.url, 'SELECT actor, role, via, action, result FROM console_audit WHERE order_id = $1', [
        orderId,
      ]),
    ).toEqual([{ actor: 'admin', role: 'operator', via: 'api', action: 'reconcile', result: 'refused' }]);
    const page = await request(svc.adminUrl)
      .get(`/console/orders/${orderId}`)
      .set('Cookie', await signIn(svc.adminUrl, VIEWER_TOKEN));
    expect(page.text).toMatch(/<td><bdi>admin<\/bdi><\/td>\s*<td>operator<\/td>\s*<td>\s*the admin API/);
  });

  it('When a token field is doubled, too long or missing, then 400 or 401 with a short message, nothing opened, and at most one row per address and minute', async () => {
    const before = await query<{ n: number }>(svc.database.url, 'SELECT count(*)::int AS n FROM console_sessions');
    const doubled = await request(svc.adminUrl)
      .post('/console/sign-in')
      .agent(fromAddress('127.0.0.5'))
      .set(SAME_ORIGIN)
      .type('form')
      .send(`token=${OPERATOR_TOKEN}&token=${OPERATOR_TOKEN}`);
    expect(doubled.status).toBe(400);
    expect(doubled.text).toContain('token is given more than once');
    const long = await signInFrom(svc.adminUrl, '127.0.0.5', 'x'.repeat(600));
    expect(long.status).toBe(400);
    expect(long.text).toContain('token is longer than 512 characters');
    const none = await signInFrom(svc.adminUrl, '127.0.0.5', '');
    expect(none.status).toBe(401);
    expect(await query(svc.database.url, 'SELECT count(*)::int AS n FROM console_sessions')).toEqual(before);
    expect(
      await query(
        svc.database.url,
        "SELECT count, length(detail) < 2000 AS bounded FROM console_audit WHERE source_address = '127.0.0.5'",
      ),
    ).toEqual([{ count: 3, bounded: true }]);
  });

  it('When the same person signs in many times, then the trail holds one row for the hour with the count', async () => {
    for (let i = 0; i < 5; i++) await signIn(svc.adminUrl, OPERATOR_TOKEN);
    expect(
      await query(
        svc.database.url,
        "SELECT count, last_at >= at AS later FROM console_audit WHERE actor = 'olga' AND action = 'sign_in'",
      ),
    ).toEqual([{ count: 5, later: true }]);
    const audit = await request(svc.adminUrl)
      .get('/console/audit?actor=olga&action=sign_in')
      .set('Cookie', await signIn(svc.adminUrl, VIEWER_TOKEN));
    expect(audit.text).toMatch(/signed in\s*<span class="badge">×5<\/span>/);
  });
});

describe('sign-in under guessing from many addresses', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService({ env: { RELAY_ENABLED: 'false', ...CONSOLE_ENV } });
  });
  afterAll(() => svc.stop());

  it('When all sources together fail past the total, then every source gets 429 until the minute ends, recorded once', async () => {
    const { perSource, total } = SIGN_IN_LIMITS;
    // Failures count per minute: start where this minute leaves time for the hundred tries and the check.
    await waitUntil('a minute with 20 s left', () => secondsLeftInMinute(Date.now()) >= 20, 45_000, 250);
    let failed = 0;
    for (let host = 10; failed < total; host++)
      for (let i = 0; i < perSource && failed < total; i++, failed++)
        expect((await signInFrom(svc.adminUrl, `127.0.1.${host}`, `wrong-${i}`)).status).toBe(401);
    const fresh = await signInFrom(svc.adminUrl, '127.0.2.1', VIEWER_TOKEN);
    expect(fresh.status).toBe(429);
    expect(await signInFrom(svc.adminUrl, '127.0.2.2', VIEWER_TOKEN).then((r) => r.status)).toBe(429);
    expect(await query(svc.database.url, "SELECT target, count FROM console_audit WHERE result = 'throttled'")).toEqual(
      [{ target: 'every source', count: 2 }],
    );
  }, 60_000);
});
