import { fixture, fixtures, signatureHeaderOf, type Fixture } from '../../support/fixtures';
import { query, whileOrderLocked } from '../../support/database';
import { startTestService, type TestService } from '../../support/service';
import { waitUntil } from '../../support/wait';
import { exactBytes, orderBody, POS_ID, SECOND_KEY, OTHER_KEY, sign, uniqueId } from '../../support/signing';

/** Keys that verify the captured fixtures: POS 300746 (public sandbox), 387171, the SHA-256 docs vector, and the
 * unit-test vector signed with the literal key "null". */
const FIXTURE_KEYS =
  '300746:b6ca15b0d1020e8094d9b5f8d163db54,387171:b2819ca65d58837ed30f94273b75dbdf,merchantPosId:sign_key527,unit-test:null';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService({ env: { SECOND_KEYS: FIXTURE_KEYS, RELAY_ENABLED: 'false' } });
});
afterAll(() => svc.stop());

const rowCount = async (table: string): Promise<number> =>
  Number((await query<{ n: string }>(svc.database.url, `SELECT count(*) AS n FROM ${table}`))[0]?.n);

/** Sends a fixture with its captured headers (minus the hop-by-hop ones). */
function sendFixture(f: Fixture) {
  const req = svc.public.post('/notifications').set('Content-Type', f.headers['Content-Type'] ?? 'application/json');
  for (const [name, value] of Object.entries(f.headers)) {
    if (!['content-length', 'connection', 'content-type'].includes(name.toLowerCase())) req.set(name, value);
  }
  return req.serialize(exactBytes).send(Buffer.from(f.body, 'utf8'));
}

/** The values of unlabelled series in one scrape of the service's /metrics (NaN when absent). */
async function metricValues<Name extends string>(...names: Name[]): Promise<Record<Name, number>> {
  const text = (await svc.admin.get('/metrics')).text;
  return Object.fromEntries(
    names.map((name) => [name, Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1])]),
  ) as Record<Name, number>;
}

describe('POST /notifications: verification', () => {
  // Each captured order is another order, or the next status of one: accepted. The one without a status, the
  // unit-test vector {"order": { "orderId": "orderId"}}, is authentic but of no known shape: quarantined.
  it.each(
    fixtures
      .filter((f) => f.signatureVerifies === true)
      .map((f) => [f.id, f.status === null ? 'quarantined' : 'accepted', f] as const),
  )(
    'When the captured notification %s is delivered, then it is answered 200 %s and its body kept byte for byte',
    async (_id, outcome, f) => {
      const res = await sendFixture(f);
      expect([res.status, res.body.outcome]).toEqual([200, outcome]);
      const sent = Buffer.from(f.body, 'utf8');
      const stored = await query<{ body: Buffer }>(
        svc.database.url,
        `SELECT body FROM ${outcome === 'accepted' ? 'notifications' : 'quarantined_notifications'}
         WHERE body_sha256 = sha256($1)`,
        [sent],
      );
      expect(stored.map(({ body }) => body.equals(sent))).toEqual([true]);
    },
  );

  it.each([
    ['real-02', 'wrong key'],
    ['real-03', 'wrong key'],
    ['real-10', 'pretty-printed copy'],
    ['real-18', 'wrong signature'],
  ])(
    'When the captured notification %s (%s) is delivered, then it is refused with 401 and nothing is stored',
    async (id) => {
      const before = await rowCount('deliveries');
      const res = await sendFixture(fixture(id));
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ error: { code: 'invalid_signature', message: expect.any(String) } });
      expect(await rowCount('deliveries')).toBe(before);
    },
  );

  it('When the signature header has no signature field (real-19), then 401 missing_signature', async () => {
    const res = await sendFixture(fixture('real-19'));
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('missing_signature');
  });

  it('When no signature header is sent, then 401 and the answer echoes nothing secret', async () => {
    const body = orderBody({ orderId: uniqueId('NOSIG'), status: 'PENDING' });
    const res = await svc.public.post('/notifications').set('Content-Type', 'application/json').send(body);
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('missing_signature_header');
    expect(JSON.stringify(res.body)).not.toContain(SECOND_KEY);
  });

  it.each(['MD5', 'SHA-1', 'SHA1', 'SHA-256', 'SHA256', 'sha-384', 'SHA-512', 'SHA'])(
    'When signed with %s under either header spelling, then it is accepted',
    async (algorithm) => {
      for (const headerName of ['OpenSvc-Signature', 'X-OpenSvc-Signature', 'x-opensvc-signature']) {
        const body = orderBody({ orderId: uniqueId('ALG'), status: 'PENDING' });
        const res = await svc.public
          .post('/notifications')
          .set('Content-Type', 'application/json;charset=UTF-8')
          .set(headerName, sign(body, SECOND_KEY, algorithm))
          .send(body);
        expect({ headerName, status: res.status }).toEqual({ headerName, status: 200 });
      }
    },
  );

  it('When one byte of a signed body is flipped, then 401', async () => {
    const body = Buffer.from(orderBody({ orderId: uniqueId('FLIP'), status: 'PENDING' }));
    const header = sign(body, SECOND_KEY);
    body[10] = (body[10] as number) ^ 0x01;
    const res = await svc.public
      .post('/notifications')
      .set('Content-Type', 'application/json')
      .set('OpenSvc-Signature', header)
      .serialize(exactBytes)
      .send(body);
    expect(res.status).toBe(401);
  });

  it('When the key of another configured POS signs an order naming POS 300746, then 401 pos_mismatch', async () => {
    const body = orderBody({ orderId: uniqueId('POS'), status: 'PENDING', merchantPosId: POS_ID });
    const res = await svc.post(body, { 'OpenSvc-Signature': sign(body, OTHER_KEY) });
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('pos_mismatch');
  });

  it('When a verified body is not UTF-8, then it is quarantined (200) with its exact bytes kept', async () => {
    const body = Buffer.concat([
      Buffer.from('{"order":{"orderId":"'),
      Buffer.from([0xc3, 0x28, 0xff]),
      Buffer.from('","status":"PENDING"}}'),
    ]);
    const res = await svc.post(body);
    expect(res.status).toBe(200);
    expect(res.body.outcome).toBe('quarantined');
    const [row] = await query<{ reason: string; body: Buffer; pos_id: string }>(
      svc.database.url,
      'SELECT reason, body, pos_id FROM quarantined_notifications WHERE body = $1',
      [body],
    );
    expect(row).toMatchObject({ reason: 'invalid_utf8', pos_id: POS_ID });
  });

  it.each(['..', 'a/b', `${uniqueId('LONG')}${'x'.repeat(128)}`])(
    'When a signed order id is %s, which the admin API refuses, then it is quarantined (200) with the reason and no order is recorded',
    async (orderId) => {
      const body = orderBody({ orderId, status: 'PENDING' });
      const res = await svc.post(body);
      expect(res.status).toBe(200);
      expect(res.body.outcome).toBe('quarantined');
      const [row] = await query<{ reason: string; detail: string }>(
        svc.database.url,
        'SELECT reason, detail FROM quarantined_notifications WHERE body = $1',
        [Buffer.from(body)],
      );
      expect(row?.reason).toBe('invalid_field');
      expect(row?.detail).toMatch(/^order\.orderId (is not an id the admin API takes: the id |is longer than 128)/);
      expect(await query(svc.database.url, 'SELECT 1 FROM orders WHERE order_id = $1', [orderId])).toEqual([]);
    },
  );

  it('When a signed extOrderId or order id holds a bidirectional or invisible format character, then it is quarantined (200) and the admin API refuses to look it up', async () => {
    const orderId = uniqueId('FMT');
    for (const [fields, detail] of [
      [
        { orderId, extOrderId: `shop-\u202e1-fer` },
        'order.extOrderId contains an invisible or bidirectional format character',
      ],
      [{ orderId: `${orderId}\u200b` }, 'order.orderId is not an id the admin API takes: the id contains an invisible'],
    ] as const) {
      const body = orderBody({ ...fields, status: 'PENDING' });
      const res = await svc.post(body);
      expect(res.status).toBe(200);
      expect(res.body.outcome).toBe('quarantined');
      const [row] = await query<{ detail: string }>(
        svc.database.url,
        'SELECT detail FROM quarantined_notifications WHERE body = $1',
        [Buffer.from(body)],
      );
      expect(row?.detail).toContain(detail);
    }
    expect(await query(svc.database.url, 'SELECT 1 FROM orders WHERE order_id LIKE $1', [`${orderId}%`])).toEqual([]);
    const lookup = await svc.admin.get(`/orders/${encodeURIComponent(`${orderId}\u200b`)}`);
    expect(lookup.status).toBe(400);
    expect(lookup.body.error.code).toBe('invalid_order_id');
  });

  it('When a verified body is JSON of no known shape, then it is quarantined with the reason and counted', async () => {
    const res = await sendFixture(fixture('real-17')); // {"order": {"orderId": "orderId"}}: no status
    expect(res.status).toBe(200);
    expect(res.body.outcome).toBe('quarantined');
    const metrics = await svc.admin.get('/metrics');
    expect(metrics.text).toMatch(/payment_notifications_total\{kind="unknown",outcome="quarantined"\} [1-9]/);
  });
});

describe('POST /notifications: request checks before the signature', () => {
  it('When the Content-Type is not JSON, then 415 and nothing is stored', async () => {
    const before = await rowCount('deliveries');
    const body = orderBody({ orderId: uniqueId('CT'), status: 'PENDING' });
    const res = await svc.post(body, { 'Content-Type': 'text/plain' });
    expect(res.status).toBe(415);
    expect(res.body.error.code).toBe('unsupported_media_type');
    expect(await rowCount('deliveries')).toBe(before);
  });

  it('When Content-Length declares more than BODY_LIMIT, then 413 before the body is read', async () => {
    const body = Buffer.alloc(2 * 1024 * 1024, 0x20);
    const res = await svc.post(body);
    expect(res.status).toBe(413);
    expect(res.body.error.code).toBe('body_too_large');
  });

  it('When GET /notifications is tried, then 405 with Allow: POST', async () => {
    const res = await svc.public.get('/notifications');
    expect(res.status).toBe(405);
    expect(res.headers.allow).toBe('POST');
  });

  it('When the path has a trailing slash, other letter case or a query string, then it is the same endpoint', async () => {
    for (const path of ['/notifications/', '/Notifications', '/notifications?source=retry']) {
      const body = orderBody({ orderId: uniqueId('PATH'), status: 'PENDING' });
      const res = await svc.public
        .post(path)
        .set({ 'Content-Type': 'application/json', 'OpenSvc-Signature': sign(body, SECOND_KEY) })
        .send(body);
      expect([path, res.status, res.body.outcome]).toEqual([path, 200, 'accepted']);
    }
  });

  it('When a request is answered, then it carries a request id (the sane one sent, else a new one) and its duration is counted by route', async () => {
    const sent = await svc.public.get('/notifications').set('X-Request-Id', 'ingress-abc.1');
    expect(sent.headers['x-request-id']).toBe('ingress-abc.1');
    const made = await svc.public.get('/nowhere').set('X-Request-Id', 'not sane!');
    expect(made.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    const text = (await svc.admin.get('/metrics')).text;
    expect(text).toMatch(
      /http_request_duration_seconds_count\{server="public",method="GET",route="\/notifications",status_code="405"\} [1-9]/,
    );
    expect(text).toMatch(
      /http_request_duration_seconds_count\{server="public",method="GET",route="unmatched",status_code="404"\} [1-9]/,
    );
  });

  it('When the admin routes are asked on the public port, then 404', async () => {
    expect((await svc.public.get('/metrics')).status).toBe(404);
    expect((await svc.public.get('/orders/X')).status).toBe(404);
  });

  it('When notifications are recorded, then the recorder counts its transactions, their sizes and its busy time, and the event loop its active time', async () => {
    const counters = () =>
      metricValues(
        'recorder_batch_notifications_count',
        'recorder_batch_notifications_sum',
        'recorder_busy_seconds_total',
        'recorder_queued_notifications',
        'nodejs_eventloop_active_seconds_total',
      );
    const before = await counters();
    const bodies = [0, 1, 2].map(() => orderBody({ orderId: uniqueId('REC'), status: 'PENDING' }));
    for (const body of bodies) expect((await svc.post(body)).status).toBe(200);
    const after = await counters();
    expect(after.recorder_batch_notifications_sum - before.recorder_batch_notifications_sum).toBe(3);
    expect(after.recorder_batch_notifications_count - before.recorder_batch_notifications_count).toBe(3);
    expect(after.recorder_busy_seconds_total).toBeGreaterThan(before.recorder_busy_seconds_total);
    expect(after.recorder_queued_notifications).toBe(0);
    expect(after.nodejs_eventloop_active_seconds_total).toBeGreaterThan(before.nodejs_eventloop_active_seconds_total);
  });

  it("When an order's later statuses arrive, then the recorder decides them from the state it kept, one statement each, and counts it", async () => {
    const kept = async (): Promise<number> => {
      const text = (await svc.admin.get('/metrics')).text;
      return Number(/^recorder_kept_state_total\{result="kept"\} (\S+)$/m.exec(text)?.[1]);
    };
    const orderId = uniqueId('KEPT');
    expect((await svc.post(orderBody({ orderId, status: 'PENDING' }))).status).toBe(200);
    const before = await kept();
    for (const status of ['WAITING_FOR_CONFIRMATION', 'COMPLETED'])
      expect((await svc.post(orderBody({ orderId, status }))).status).toBe(200);
    expect((await kept()) - before).toBe(2);
    expect((await svc.admin.get(`/orders/${orderId}`)).body).toMatchObject({ status: 'COMPLETED' });
  });

  it('When notifications wait behind a running recording transaction, then recorder_queued_notifications counts them, and 0 once they are answered', async () => {
    const queued = async () => (await metricValues('recorder_queued_notifications')).recorder_queued_notifications;
    // Another transaction holds the first order's lock, so the one lane's transaction waits on it.
    const held = uniqueId('HELD');
    // The answers come after the lock is released: wrapped, so that the lock's holder does not wait for them.
    const { answers } = await whileOrderLocked(svc.service.pool, held, async () => {
      const first = svc.post(orderBody({ orderId: held, status: 'PENDING' })).then((r) => r.status);
      const waiting = [0, 1, 2].map(() =>
        svc.post(orderBody({ orderId: uniqueId('WAIT'), status: 'PENDING' })).then((r) => r.status),
      );
      const seen = await waitUntil('three notifications queued', async () => {
        const now = await queued();
        return now >= 3 && now;
      });
      expect(seen).toBe(3);
      return { answers: Promise.all([first, ...waiting]) };
    });
    expect(await answers).toEqual([200, 200, 200, 200]);
    expect(await queued()).toBe(0);
  });

  it('When refusals happen, then each is counted under its outcome', async () => {
    const text = (await svc.admin.get('/metrics')).text;
    for (const outcome of ['rejected_signature', 'unsupported_media_type', 'too_large']) {
      expect(text).toMatch(new RegExp(`payment_notifications_total\\{kind="unknown",outcome="${outcome}"\\} [1-9]`));
    }
  });
});

describe('source address', () => {
  const deliver = async (env: Record<string, string>, headers: Record<string, string>) => {
    const s = await startTestService({ env: { RELAY_ENABLED: 'false', ...env } });
    try {
      const body = orderBody({ orderId: uniqueId('SRC'), status: 'PENDING' });
      const res = await s.post(body, headers);
      const stored = await query(s.database.url, 'SELECT 1 FROM deliveries');
      return { status: res.status, code: res.body?.error?.code as string | undefined, stored: stored.length };
    } finally {
      await s.stop();
    }
  };

  it('When the socket peer is not allowed, then 403 and nothing is stored', async () => {
    expect(await deliver({ ALLOWED_SOURCE_IPS: 'production' }, {})).toEqual({
      status: 403,
      code: 'source_not_allowed',
      stored: 0,
    });
  });

  it('When no proxy is trusted, then a forged X-Forwarded-For, Forwarded or X-Real-IP changes nothing', async () => {
    const forged = { 'X-Forwarded-For': '185.68.12.10', Forwarded: 'for=185.68.12.10', 'X-Real-IP': '185.68.12.10' };
    expect(await deliver({ ALLOWED_SOURCE_IPS: 'production' }, forged)).toMatchObject({ status: 403 });
  });

  it('When one proxy hop is trusted, then the client address it forwards is the one checked', async () => {
    expect(
      await deliver({ ALLOWED_SOURCE_IPS: 'production', TRUST_PROXY: '1' }, { 'X-Forwarded-For': '185.68.12.27' }),
    ).toEqual({
      status: 200,
      code: undefined,
      stored: 1,
    });
    expect(
      await deliver(
        { ALLOWED_SOURCE_IPS: 'production', TRUST_PROXY: '1' },
        { 'X-Forwarded-For': '185.68.12.27, 9.9.9.9' },
      ),
    ).toMatchObject({
      status: 403,
    });
  });

  it('When the trusted proxy is named by CIDR, then an address spoofed before it is not believed', async () => {
    const env = { ALLOWED_SOURCE_IPS: 'production', TRUST_PROXY: '127.0.0.0/8' };
    expect(await deliver(env, { 'X-Forwarded-For': '185.68.12.10' })).toMatchObject({ status: 200 });
    expect(await deliver(env, { 'X-Forwarded-For': '185.68.12.10, 8.8.8.8' })).toMatchObject({ status: 403 });
  });
});

describe('Basic auth', () => {
  let basic: TestService;
  beforeAll(async () => {
    basic = await startTestService({ env: { RELAY_ENABLED: 'false', NOTIFY_BASIC_AUTH: 'shop:s3cret:pass' } });
  });
  afterAll(() => basic.stop());

  it('When the right credentials come with a valid signature, then 200', async () => {
    const body = orderBody({ orderId: uniqueId('BA'), status: 'PENDING' });
    const res = await basic.post(body, {
      Authorization: `Basic ${Buffer.from('shop:s3cret:pass').toString('base64')}`,
    });
    expect(res.status).toBe(200);
  });

  it.each([undefined, 'Basic ' + Buffer.from('shop:wrong').toString('base64'), 'Bearer abc', 'Basic !!!'])(
    'When Authorization is %p, then 401 invalid_basic_auth and nothing is stored',
    async (authorization) => {
      const body = orderBody({ orderId: uniqueId('BA'), status: 'PENDING' });
      const res = await basic.post(body, authorization ? { Authorization: authorization } : {});
      expect(res.status).toBe(401);
      expect(res.body.error.code).toBe('invalid_basic_auth');
      expect(res.headers['www-authenticate']).toContain('Basic');
      const rows = await query(basic.database.url, 'SELECT 1 FROM notifications WHERE subject_id = $1', [
        JSON.parse(body).order.orderId,
      ]);
      expect(rows).toHaveLength(0);
    },
  );

  it('When requests were refused, then no log line holds the password or the key', () => {
    const all = basic.logs.join('\n');
    expect(all).not.toContain('s3cret');
    expect(all).not.toContain(SECOND_KEY);
  });
});

describe('logs', () => {
  it('When fixtures with buyer data were recorded, then no log line holds a key, signature or buyer data', () => {
    const all = svc.logs.join('\n');
    for (const f of fixtures) {
      const header = signatureHeaderOf(f);
      const signature = header && /signature=([0-9a-f]+)/i.exec(header)?.[1];
      if (signature) expect(all).not.toContain(signature);
      if (f.secondKey && f.secondKey !== 'null') expect(all).not.toContain(f.secondKey);
    }
    for (const personal of ['test@test.com', 'johnny@example.com', 'john.doe@example.org', 'Tester', '111111111']) {
      expect(all).not.toContain(personal);
    }
    expect(svc.logs.length).toBeGreaterThan(0);
  });
});
