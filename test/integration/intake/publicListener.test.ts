import net from 'node:net';
import pg from 'pg';
import { query } from '../../support/database';
import { startTestService, type TestService } from '../../support/service';
import { exactBytes, orderBody, POS_ID, SECOND_KEY, sign, uniqueId } from '../../support/signing';
import { waitUntil } from '../../support/wait';

// The public edge's trust boundaries: who sent a request (whatever spelling its address comes in),
// how much of unverified bodies is held at once, which algorithms a POS's key accepts; and the admin
// port's guard (a token, a cap) that keeps reading projections from starving the intake.

const services: TestService[] = [];
const start = async (env: Record<string, string>): Promise<TestService> => {
  const svc = await startTestService({ env: { RELAY_ENABLED: 'false', ...env } });
  services.push(svc);
  return svc;
};
afterAll(() => Promise.all(services.map((s) => s.stop())));

describe('one canonical source address', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await start({ ALLOWED_SOURCE_IPS: '127.0.0.1', TRUST_PROXY: '127.0.0.0/8' });
  });

  const deliverFrom = async (forwardedFor: string) => {
    const orderId = uniqueId('ADDR');
    const res = await svc.post(orderBody({ orderId, status: 'PENDING' }), { 'X-Forwarded-For': forwardedFor });
    const [row] = await query<{ source_address: string }>(
      svc.database.url,
      `SELECT host(d.source_address) AS source_address FROM deliveries d
         JOIN notifications n ON n.id = d.notification_id WHERE n.order_id = $1`,
      [orderId],
    );
    return { status: res.status, code: res.body?.error?.code as string | undefined, stored: row?.source_address };
  };

  it.each([
    ['127.0.0.1', '127.0.0.1'],
    [' 127.0.0.1 ', '127.0.0.1'],
    ['127.0.0.1:4567', '127.0.0.1'],
    ['::ffff:127.0.0.1', '127.0.0.1'],
    ['[::ffff:127.0.0.1]:80', '127.0.0.1'],
    ['::ffff:7f00:1', '127.0.0.1'],
  ])('When X-Forwarded-For names the sender as %j, then it is let in and stored as %s', async (entry, stored) => {
    expect(await deliverFrom(entry)).toEqual({ status: 200, code: undefined, stored });
  });

  it.each([
    '127.1',
    '2130706433',
    '0x7f.0.0.1',
    '0177.0.0.1',
    '127.000.000.001',
    '::ffff:0x7f.0.0.1',
    'fe80::1%eth0 x',
  ])(
    'When X-Forwarded-For names the sender as %j, then 400 invalid_source_address and nothing is stored',
    async (entry) => {
      expect(await deliverFrom(entry)).toEqual({ status: 400, code: 'invalid_source_address', stored: undefined });
    },
  );

  it('When an IPv6 sender comes with a zone index, then the zone is dropped and the allowlist decides', async () => {
    expect(await deliverFrom('fe80::1%eth0')).toMatchObject({ status: 403, code: 'source_not_allowed' });
  });
});

describe('bounded memory before verification', () => {
  it('When unverified bodies would hold more than UNVERIFIED_BODIES_LIMIT, then 503 with Retry-After, unread, and room is given back after', async () => {
    const svc = await start({ ALLOWED_SOURCE_IPS: '127.0.0.1', UNVERIFIED_BODIES_LIMIT: '64kb', BODY_LIMIT: '64kb' });
    const { port } = new URL(svc.publicUrl);
    // A slow sender holds 65,500 bytes of the 65,536: headers and a few bytes, then nothing.
    const holder = net.connect(Number(port), '127.0.0.1');
    await new Promise((resolve) => holder.once('connect', resolve));
    holder.write(
      'POST /notifications HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n' +
        `OpenSvc-Signature: ${sign('x', SECOND_KEY)}\r\nContent-Length: 65500\r\n\r\n{"or`,
    );
    const heldBytes = async (): Promise<string | undefined> =>
      /^intake_unverified_body_bytes (\d+)$/m.exec((await svc.admin.get('/metrics')).text)?.[1];
    await waitUntil('the slow sender holding its bytes', async () => (await heldBytes()) === '65500');
    const body = orderBody({ orderId: uniqueId('BUSY'), status: 'PENDING' });
    expect(body.length).toBeGreaterThan(36);
    const refused = await svc.post(body);
    expect(refused.status).toBe(503);
    expect(refused.body.error.code).toBe('busy');
    expect(refused.headers['retry-after']).toBe('5');
    const metrics = (await svc.admin.get('/metrics')).text;
    expect(metrics).toMatch(/^intake_unverified_body_bytes 65500$/m);
    holder.destroy();
    await waitUntil('the bytes of the slow sender given back', async () => (await heldBytes()) === '0');
    expect((await svc.post(body)).status).toBe(200);
    expect((await svc.admin.get('/metrics')).text).toMatch(/^intake_unverified_body_bytes 0$/m);
  });

  it('When a body is larger than the default BODY_LIMIT (64 kB), then 413', async () => {
    const svc = await start({ ALLOWED_SOURCE_IPS: '127.0.0.1' });
    const big = JSON.stringify({ order: { orderId: 'BIG', status: 'PENDING', padding: 'x'.repeat(70_000) } });
    const res = await svc.post(big);
    expect(res.status).toBe(413);
    expect(res.body.error.code).toBe('body_too_large');
  });
});

describe('a POS may pin its key to a stronger algorithm', () => {
  it('When SECOND_KEYS pins POS to SHA-256, then an MD5 signature with its key is refused and a SHA-256 one accepted', async () => {
    const svc = await start({ ALLOWED_SOURCE_IPS: '127.0.0.1', SECOND_KEYS: `${POS_ID}:${SECOND_KEY}:SHA-256` });
    const body = orderBody({ orderId: uniqueId('PIN'), status: 'PENDING' });
    const md5 = await svc.post(body);
    expect(md5.status).toBe(401);
    expect(md5.body.error.code).toBe('algorithm_not_allowed');
    expect((await svc.post(body, { 'OpenSvc-Signature': sign(body, SECOND_KEY, 'SHA-256') })).status).toBe(200);
  });
});

describe('the admin port', () => {
  const TOKEN = 'admin-token-of-the-test-0123456789';
  let svc: TestService;
  let orderId: string;
  beforeAll(async () => {
    svc = await start({ ALLOWED_SOURCE_IPS: '127.0.0.1', ADMIN_TOKEN: TOKEN, ADMIN_CONCURRENCY: '1' });
    orderId = uniqueId('ADMIN');
    await svc.post(orderBody({ orderId, status: 'PENDING' })).expect(200);
  });

  it('When ADMIN_TOKEN is set, then the data routes need it and the probes and metrics do not', async () => {
    const admin = svc.admin;
    for (const auth of [undefined, 'Bearer wrong-token-wrong-token', `Basic ${TOKEN}`]) {
      const req = admin.get(`/orders/${orderId}`);
      const res = await (auth ? req.set('Authorization', auth) : req);
      expect(res.status).toBe(401);
      expect(res.body.error.code).toBe('unauthorized');
      expect(res.headers['www-authenticate']).toBe('Bearer realm="admin"');
    }
    expect((await admin.get(`/orders/${orderId}`).set('Authorization', `Bearer ${TOKEN}`)).status).toBe(200);
    expect((await admin.get('/refunds/NOPE').set('Authorization', `Bearer ${TOKEN}`)).status).toBe(404);
    for (const path of ['/livez', '/readyz', '/metrics']) expect((await admin.get(path)).status).toBe(200);
  });

  it('When more data requests arrive at once than ADMIN_CONCURRENCY, then the others get 503 at once, and intake is not held', async () => {
    // The orders table locked by another transaction: the first admin request waits on its own pool.
    const blocker = new pg.Client({ connectionString: svc.database.url });
    await blocker.connect();
    try {
      await blocker.query('BEGIN');
      await blocker.query('LOCK TABLE orders IN ACCESS EXCLUSIVE MODE');
      const slow = svc.admin.get(`/orders/${orderId}`).set('Authorization', `Bearer ${TOKEN}`).then();
      // Its query waiting on the lock means it holds the one place.
      await waitUntil('the first request waiting on the lock', async () => {
        const [waiting] = await query<{ n: number }>(
          svc.database.url,
          `SELECT count(*)::int AS n FROM pg_stat_activity
            WHERE datname = current_database() AND wait_event_type = 'Lock'`,
        );
        return waiting?.n === 1;
      });
      const refused = await svc.admin.get(`/orders/${orderId}`).set('Authorization', `Bearer ${TOKEN}`);
      expect(refused.status).toBe(503);
      expect(refused.body.error.code).toBe('admin_busy');
      expect(refused.headers['retry-after']).toBe('1');
      expect((await svc.admin.get('/readyz')).status).toBe(200);
      await blocker.query('ROLLBACK');
      expect((await slow).status).toBe(200);
    } finally {
      await blocker.end();
    }
    expect((await svc.admin.get(`/orders/${orderId}`).set('Authorization', `Bearer ${TOKEN}`)).status).toBe(200);
  });
});

it('When the public port is asked with any method but POST, then 405; any other path, 404; neither touches the body', async () => {
  const svc = await start({ ALLOWED_SOURCE_IPS: '127.0.0.1' });
  const res = await svc.public.put('/notifications').serialize(exactBytes).send('{}');
  expect(res.status).toBe(405);
  expect(res.headers.allow).toBe('POST');
  expect((await svc.public.post('/notifications/extra').send('{}')).status).toBe(404);
});
