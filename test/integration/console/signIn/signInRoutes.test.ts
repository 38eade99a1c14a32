import request from 'supertest';
import { SIGN_IN_LIMITS } from '../../../../src/console/signIn/signInThrottle';
import {
  CONSOLE_ENV,
  fromAddress,
  metricValue,
  OPERATOR_TOKEN,
  SAME_ORIGIN,
  signIn,
  signInFrom,
  VIEWER_TOKEN,
} from '../../../support/console';
import { query, testDatabase } from '../../../support/database';
import { DrivenClock } from '../../../support/drivenClock';
import { startTestService, type TestService } from '../../../support/service';
import { orderBody, uniqueId } from '../../../support/signing';

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
    expect(svc.logs.join('\n')).toContain(
      "the admin port's data routes (/orders, /refunds, reconcile, /events) answer 401",
    );
    expect(svc.logs.find((l) => l.includes('"service started"'))).toContain(
      '"adminDoors":{"dataRoutes":"closed","events":"closed","console":"closed"}',
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
  const clock = new DrivenClock();
  beforeAll(async () => {
    svc = await startTestService({ env: { RELAY_ENABLED: 'false', ADMIN_TOKEN, ...CONSOLE_ENV }, clock });
  });
  afterAll(() => svc.stop());

  it('When one address fails past its limit, then it gets 429 without its token checked (a right one too), while another address still signs in; one row counts the refusals and one the throttled minute, with its source', async () => {
    const { perSource } = SIGN_IN_LIMITS;
    // Failures count per minute: the tries and the throttled one fall in the same minute.
    clock.startNextMinute();
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
  }, 60_000);

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

describe('sign-in under a flood from many addresses, on two replicas', () => {
  const database = testDatabase();
  let a: TestService;
  let b: TestService;
  const clock = new DrivenClock();
  // The tests' sources are told by X-Forwarded-For from this machine's proxy: any IPv4 or IPv6 address.
  const env = { RELAY_ENABLED: 'false', ADMIN_TOKEN, ...CONSOLE_ENV, TRUST_PROXY: '127.0.0.1' };
  beforeAll(async () => {
    a = await startTestService({ database, env, clock });
    b = await startTestService({ database, env, clock });
  }, 60_000);
  afterAll(async () => {
    await a?.stop();
    await b?.stop();
    await database.drop();
  });
  // Each test starts from a minute without failures, whichever minute it is.
  beforeEach(() => query(database.url, 'DELETE FROM console_sign_in_failures'));

  const apiFrom = (svc: TestService, source: string, token: string) =>
    svc.admin.get('/orders/ANY').set('X-Forwarded-For', source).set('Authorization', `Bearer ${token}`);
  const consoleFrom = (svc: TestService, source: string, token: string) =>
    request(svc.adminUrl)
      .post('/console/sign-in')
      .set(SAME_ORIGIN)
      .set('X-Forwarded-For', source)
      .type('form')
      .send({ token });

  /** `perSource` wrong tokens from each source: the API on replica a, the console on replica b, by turns. */
  async function flood(sources: readonly string[]): Promise<void> {
    for (const [n, source] of sources.entries())
      for (let i = 0; i < SIGN_IN_LIMITS.perSource; i++) {
        const res = n % 2 === 0 ? await apiFrom(a, source, `wrong-${i}`) : await consoleFrom(b, source, `wrong-${i}`);
        expect(res.status).toBe(401);
      }
  }

  it('When ten addresses send a hundred wrong tokens in a minute, then the right token from an address that has not failed is checked and let in, on either replica and door, while a flooded one gets 429 saying what is true of it', async () => {
    const { perSource, total } = SIGN_IN_LIMITS;
    // Failures count per minute: start a minute, with time for the flood and the checks.
    clock.startNextMinute();
    const flooded = Array.from({ length: total / perSource }, (_, i) => `198.51.100.${i + 1}`);
    await flood(flooded);

    // A clean address: its right tokens are checked and let in (the API answers the order's 404; the console
    // signs in), and so are its wrong ones (401, not 429): the check is the same for both.
    expect((await apiFrom(a, '198.51.100.200', ADMIN_TOKEN)).status).toBe(404);
    expect((await apiFrom(b, '198.51.100.200', ADMIN_TOKEN)).status).toBe(404);
    expect((await consoleFrom(b, '198.51.100.201', VIEWER_TOKEN)).status).toBe(303);
    expect((await consoleFrom(a, '198.51.100.202', OPERATOR_TOKEN)).status).toBe(303);
    expect((await apiFrom(a, '198.51.100.203', 'wrong-but-checked')).status).toBe(401);

    // A flooded address: 429 on both replicas, saying what this address did.
    const limited = await apiFrom(b, flooded[0] ?? '', ADMIN_TOKEN);
    expect(limited.status).toBe(429);
    expect(limited.body.error.code).toBe('too_many_failures');
    expect(limited.body.error.message).toMatch(
      /^10 failed tokens from this address this minute \(10 are allowed\); retry in \d+ s$/,
    );
    const limitedConsole = await consoleFrom(a, flooded[1] ?? '', OPERATOR_TOKEN);
    expect(limitedConsole.status).toBe(429);
    expect(limitedConsole.text).toContain('10 failed tokens from this address this minute');
    // The address that failed once, while all of them are past the total: it waits too, and is told why.
    const once = await apiFrom(a, '198.51.100.203', ADMIN_TOKEN);
    expect(once.status).toBe(429);
    expect(once.body.error.message).toMatch(
      /^10\d failed tokens this minute from all addresses \(100 are allowed\), 1 of them from this one; retry in \d+ s$/,
    );

    // Each throttled answer is on the record under its own address; nothing is recorded for "every source".
    const throttled = await query<{ source: string }>(
      database.url,
      "SELECT host(source_address) AS source FROM console_audit WHERE result = 'throttled' ORDER BY id",
    );
    expect(throttled.map((r) => r.source)).toEqual([flooded[0], flooded[1], '198.51.100.203']);
  }, 60_000);

  it('When IPv6 addresses flood from ten /64s, then a /64 that has not failed is let in, and any address of a flooded /64 is throttled with it', async () => {
    const { perSource, total } = SIGN_IN_LIMITS;
    clock.startNextMinute();
    const flooded = Array.from({ length: total / perSource }, (_, i) => `2001:db8:0:${i + 1}::1`);
    await flood(flooded);
    expect((await apiFrom(a, '2001:db8:0:99::5', ADMIN_TOKEN)).status).toBe(404);
    expect((await consoleFrom(b, '2001:db8:0:98::5', VIEWER_TOKEN)).status).toBe(303);
    const neighbour = await apiFrom(b, '2001:db8:0:1:ffff::abcd', ADMIN_TOKEN);
    expect(neighbour.status).toBe(429);
    expect(neighbour.body.error.message).toMatch(/^10 failed tokens from this address this minute/);
  }, 60_000);

  it('When one address sends its wrong tokens all at once, then no more than its limit are checked: the rest get 429', async () => {
    const { perSource } = SIGN_IN_LIMITS;
    clock.startNextMinute();
    const statuses = await Promise.all(
      Array.from({ length: 3 * perSource }, (_, i) =>
        apiFrom(a, '203.0.113.7', `wrong-at-once-${i}`).then((r) => r.status),
      ),
    );
    expect(statuses.filter((s) => s === 401)).toHaveLength(perSource);
    expect(statuses.filter((s) => s === 429)).toHaveLength(2 * perSource);
  }, 60_000);
});
