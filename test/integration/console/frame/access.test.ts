import path from 'node:path';
import request from 'supertest';
import { SESSIONS_PER_NAME } from '../../../../src/console/sessions/sessionQueries';
import { ROOT } from '../../../support/build';
import {
  CONSOLE_ENV,
  OPERATOR_TOKEN,
  SAME_ORIGIN,
  SESSION_COOKIE,
  signIn,
  signInFrom,
  VIEWER_TOKEN,
} from '../../../support/console';
import { query, testDatabase, type TestDatabase } from '../../../support/database';
import { freePort } from '../../../support/net';
import { startTestService, type TestService } from '../../../support/service';
import { orderBody, POS_ID, SECOND_KEY, sign, uniqueId } from '../../../support/signing';
import { start, stop, waitForStatus, type RunningApp } from '../../../helm/app';
import { pendingEventsOf } from '../../../support/outbox';

const ADMIN_TOKEN = 'admin-token-of-the-replicas-0123';

/** The session row a cookie ("name=value") names, found as the console finds it: by its id's SHA-256. */
const BY_COOKIE = "id_hash = sha256(convert_to($1, 'UTF8'))";
const idOf = (cookie: string): string => cookie.slice(cookie.indexOf('=') + 1);

const get = (url: string, path: string, cookie: string) => request(url).get(path).set('Cookie', cookie);
const post = (url: string, path: string, cookie: string, form: Record<string, string> = { confirm: 'yes' }) =>
  request(url).post(path).set('Cookie', cookie).set(SAME_ORIGIN).type('form').send(form);

const pendingEvents = pendingEventsOf;

/** A replica: the built service (dist/main.js) as its own process, on free ports, against a shared database. */
interface Replica {
  app: RunningApp;
  adminUrl: string;
  publicUrl: string;
}

async function startReplica(db: TestDatabase, env: Record<string, string> = {}): Promise<Replica> {
  const [publicPort, adminPort] = [await freePort(), await freePort()];
  const app = start(['node', path.join(ROOT, 'dist', 'main.js')], ROOT, {
    PORT: String(publicPort),
    ADMIN_PORT: String(adminPort),
    HOST: '127.0.0.1',
    DATABASE_URL: db.url,
    SECOND_KEYS: `${POS_ID}:${SECOND_KEY}`,
    ALLOWED_SOURCE_IPS: '127.0.0.1',
    RELAY_ENABLED: 'false',
    LOG_LEVEL: 'warn',
    ...CONSOLE_ENV,
    ADMIN_TOKEN,
    ...env,
  });
  const adminUrl = `http://127.0.0.1:${adminPort}`;
  await waitForStatus(app, `${adminUrl}/readyz`, 200, 30_000);
  return { app, adminUrl, publicUrl: `http://127.0.0.1:${publicPort}` };
}

async function deliver(replica: Replica, body: string): Promise<void> {
  const res = await request(replica.publicUrl)
    .post('/notifications')
    .set('Content-Type', 'application/json;charset=UTF-8')
    .set('OpenSvc-Signature', sign(body, SECOND_KEY))
    .send(body);
  expect(res.status).toBe(200);
}

describe('console sessions across two replicas (two service processes, one database)', () => {
  const db = testDatabase();
  let a: Replica;
  let b: Replica;
  beforeAll(async () => {
    a = await startReplica(db);
    b = await startReplica(db);
  }, 60_000);
  afterAll(async () => {
    await Promise.all([a && stop(a.app), b && stop(b.app)]);
    await db.drop();
  });

  it('When a person signs out on one replica, then the same cookie is refused on the other at once, and an action sent with it is not carried out', async () => {
    const orderId = uniqueId('SOUT');
    await deliver(a, orderBody({ orderId, status: 'PENDING' }));
    await query(db.url, 'UPDATE outbox_events SET published_at = now() WHERE order_id = $1', [orderId]);
    const cookie = await signIn(a.adminUrl, OPERATOR_TOKEN);
    expect((await get(b.adminUrl, `/console/orders/${orderId}`, cookie)).status).toBe(200);

    const out = await post(a.adminUrl, '/console/sign-out', cookie, {});
    expect(out.status).toBe(303);
    expect(out.headers.location).toBe('/console/signed-out');
    expect(String(out.headers['set-cookie'])).toContain(`${SESSION_COOKIE}=; Path=/;`);

    const page = await get(b.adminUrl, `/console/orders/${orderId}`, cookie);
    expect(page.status).toBe(401);
    expect(page.text).toContain('Your session has ended');
    expect(page.text).not.toContain(orderId);
    const republish = await post(b.adminUrl, `/console/orders/${orderId}/republish`, cookie);
    expect(republish.status).toBe(401);
    expect(await pendingEvents(db.url, orderId)).toBe(0);
    expect(
      await query(db.url, "SELECT action FROM console_audit WHERE actor = 'olga' AND action <> 'sign_in' ORDER BY id"),
    ).toEqual([{ action: 'sign_out' }]);
  });

  it('When a session a replica has just seen stand ends elsewhere, then that replica, which reads pages ahead of the check, answers only 401: no data, and no 404, 400 or redirect telling what exists', async () => {
    const orderId = uniqueId('AHEAD');
    await deliver(a, orderBody({ orderId, status: 'PENDING' }));
    const cookie = await signIn(a.adminUrl, OPERATOR_TOKEN);
    expect((await get(b.adminUrl, '/console', cookie)).status).toBe(200);
    expect((await get(b.adminUrl, `/console/search?q=${orderId}`, cookie)).status).toBe(303);
    expect((await post(a.adminUrl, '/console/sign-out', cookie, {})).status).toBe(303);

    for (const path of [
      `/console/search?q=${orderId}`,
      `/console/orders/${orderId}`,
      '/console/orders/NO-SUCH-ORDER',
      '/console/deliveries?outcome=bogus',
      '/console/sessions',
      `/console/orders/${orderId}/republish`,
    ]) {
      const page = await get(b.adminUrl, path, cookie);
      expect({ path, status: page.status }).toEqual({ path, status: 401 });
      expect(page.text).not.toContain(orderId);
    }
  });

  it('When a viewer whose session a replica has just seen stand asks for an operator page, then 403 and none of its data', async () => {
    const olga = await signIn(a.adminUrl, OPERATOR_TOKEN);
    const victor = await signIn(a.adminUrl, VIEWER_TOKEN);
    expect((await get(b.adminUrl, '/console', olga)).status).toBe(200);
    expect((await get(b.adminUrl, '/console', victor)).status).toBe(200);
    const page = await get(b.adminUrl, '/console/sessions', victor);
    expect(page.status).toBe(403);
    expect(page.text).not.toContain('<bdi>olga</bdi>');
  });

  it('When the admin signs in with ADMIN_TOKEN on one replica, then the session serves on the other (no per-process secret)', async () => {
    const admin = await signIn(a.adminUrl, ADMIN_TOKEN);
    const page = await get(b.adminUrl, '/console', admin);
    expect(page.status).toBe(200);
    expect(page.text).toContain('admin (operator)');
  });

  it('When one address fails on both replicas, then the failures count together and both throttle it', async () => {
    for (let i = 0; i < 5; i++) expect((await signInFrom(a.adminUrl, '127.0.0.2', `wrong-a-${i}`)).status).toBe(401);
    for (let i = 0; i < 5; i++) expect((await signInFrom(b.adminUrl, '127.0.0.2', `wrong-b-${i}`)).status).toBe(401);
    expect((await signInFrom(a.adminUrl, '127.0.0.2', OPERATOR_TOKEN)).status).toBe(429);
    expect((await signInFrom(b.adminUrl, '127.0.0.2', OPERATOR_TOKEN)).status).toBe(429);
    expect((await signInFrom(b.adminUrl, '127.0.0.3', OPERATOR_TOKEN)).status).toBe(303);
  });

  it('When an operator ends all sessions of a name on one replica, then that person is signed out on the other', async () => {
    const victor = await signIn(a.adminUrl, VIEWER_TOKEN);
    const olga = await signIn(b.adminUrl, OPERATOR_TOKEN);
    const list = await get(a.adminUrl, '/console/sessions', olga);
    expect(list.status).toBe(200);
    expect(list.text).toContain('<td><bdi>victor</bdi></td>');
    expect(list.text).toContain('href="/console/sessions/victor/end"');
    expect((await get(a.adminUrl, '/console/sessions', victor)).status).toBe(403);
    const confirm = await get(a.adminUrl, '/console/sessions/victor/end', olga);
    expect(confirm.text).toMatch(/<button[^>]*>Confirm/);
    const ended = await post(a.adminUrl, '/console/sessions/victor/end', olga);
    expect(ended.status).toBe(200);
    expect(ended.text).toMatch(/[1-9]\d* session\(s\) ended/);
    const after = await get(b.adminUrl, '/console/attention', victor);
    expect(after.status).toBe(401);
    expect(
      await query(db.url, "SELECT actor, target, result FROM console_audit WHERE action = 'end_sessions'"),
    ).toEqual([{ actor: 'olga', target: 'victor', result: 'done' }]);
  });
});

describe('console sessions after the tokens change (a restart with other lists)', () => {
  const db = testDatabase();
  let replica: Replica | null = null;
  afterAll(async () => {
    if (replica) await stop(replica.app);
    await db.drop();
  });

  it('When the operator is moved to the viewers and a viewer removed, then their old cookies no longer act or read, on a replica of the old lists too', async () => {
    replica = await startReplica(db);
    const orderId = uniqueId('DEMOTE');
    await deliver(replica, orderBody({ orderId, status: 'PENDING' }));
    await query(db.url, 'UPDATE outbox_events SET published_at = now() WHERE order_id = $1', [orderId]);
    const olga = await signIn(replica.adminUrl, OPERATOR_TOKEN);
    const victor = await signIn(replica.adminUrl, VIEWER_TOKEN);
    await stop(replica.app);

    // olga keeps her token but is a viewer now; victor is gone. An old replica still runs the old lists.
    const old = await startReplica(db);
    replica = await startReplica(db, { CONSOLE_OPERATOR_TOKENS: '', CONSOLE_VIEWER_TOKENS: `olga:${OPERATOR_TOKEN}` });
    try {
      const acted = await post(replica.adminUrl, `/console/orders/${orderId}/republish`, olga);
      expect(acted.status).toBe(401);
      expect(acted.text).toContain('Your access has changed since you signed in');
      expect(await pendingEvents(db.url, orderId)).toBe(0);
      const read = await get(replica.adminUrl, `/console/orders/${orderId}`, victor);
      expect(read.status).toBe(401);
      expect(read.text).not.toContain(orderId);
      // The new lists ended those sessions for every replica: the old one refuses them too.
      expect((await post(old.adminUrl, `/console/orders/${orderId}/republish`, olga)).status).toBe(401);
      expect(await pendingEvents(db.url, orderId)).toBe(0);
      expect(await query(db.url, "SELECT 1 FROM console_audit WHERE action = 'republish'")).toEqual([]);
      // Signing in again, she is what the lists say now.
      const again = await signIn(replica.adminUrl, OPERATOR_TOKEN);
      expect((await get(replica.adminUrl, '/console', again)).text).toContain('olga (viewer)');
    } finally {
      await stop(old.app);
    }
  }, 90_000);
});

describe('console sessions on one replica', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService({ env: { RELAY_ENABLED: 'false', ...CONSOLE_ENV, CONSOLE_SESSION_IDLE: '10m' } });
  });
  afterAll(() => svc.stop());

  it('When a session is not used for longer than CONSOLE_SESSION_IDLE, then it ends', async () => {
    const cookie = await signIn(svc.adminUrl, VIEWER_TOKEN);
    expect((await get(svc.adminUrl, '/console', cookie)).status).toBe(200);
    await query(
      svc.database.url,
      `UPDATE console_sessions SET last_seen_at = now() - interval '11 minutes' WHERE ${BY_COOKIE}`,
      [idOf(cookie)],
    );
    const res = await get(svc.adminUrl, '/console', cookie);
    expect(res.status).toBe(401);
    expect(res.text).toContain('Your session ended after a time without use');
    expect(await query(svc.database.url, `SELECT 1 FROM console_sessions WHERE ${BY_COOKIE}`, [idOf(cookie)])).toEqual(
      [],
    );
  });

  it('When a session is used, then its last use is written at most once a minute', async () => {
    const cookie = await signIn(svc.adminUrl, VIEWER_TOKEN);
    const lastSeen = async () =>
      (
        await query<{ t: string }>(
          svc.database.url,
          `SELECT last_seen_at::text AS t FROM console_sessions WHERE ${BY_COOKIE}`,
          [idOf(cookie)],
        )
      )[0]?.t;
    const first = await lastSeen();
    for (let i = 0; i < 3; i++) expect((await get(svc.adminUrl, '/console', cookie)).status).toBe(200);
    expect(await lastSeen()).toBe(first);
    await query(
      svc.database.url,
      `UPDATE console_sessions SET last_seen_at = now() - interval '61 seconds' WHERE ${BY_COOKIE}`,
      [idOf(cookie)],
    );
    const backdated = await lastSeen();
    expect((await get(svc.adminUrl, '/console', cookie)).status).toBe(200);
    expect(await lastSeen()).not.toBe(backdated);
  });

  it('When a browser sends two session cookies (one planted by a sibling site), then 400 and nothing is done', async () => {
    const orderId = uniqueId('TWOCK');
    expect((await svc.post(orderBody({ orderId, status: 'PENDING' }))).status).toBe(200);
    await query(svc.database.url, 'UPDATE outbox_events SET published_at = now() WHERE order_id = $1', [orderId]);
    const mine = await signIn(svc.adminUrl, OPERATOR_TOKEN);
    const planted = await signIn(svc.adminUrl, VIEWER_TOKEN);
    const both = `${planted}; ${mine}`;
    const res = await post(svc.adminUrl, `/console/orders/${orderId}/republish`, both);
    expect(res.status).toBe(400);
    expect(res.text).toContain('two console session cookies');
    expect(await pendingEvents(svc.database.url, orderId)).toBe(0);
    expect((await get(svc.adminUrl, '/console', both)).status).toBe(400);
  });

  it('When one name signs in again and again, then it holds at most SESSIONS_PER_NAME sessions, the newest', async () => {
    const cookies: string[] = [];
    for (let i = 0; i < SESSIONS_PER_NAME + 5; i++) cookies.push(await signIn(svc.adminUrl, OPERATOR_TOKEN));
    const [row] = await query<{ n: number }>(
      svc.database.url,
      "SELECT count(*)::int AS n FROM console_sessions WHERE name = 'olga'",
    );
    expect(row?.n).toBe(SESSIONS_PER_NAME);
    expect((await get(svc.adminUrl, '/console', cookies[0] ?? '')).status).toBe(401);
    expect((await get(svc.adminUrl, '/console', cookies.at(-1) ?? '')).status).toBe(200);
  });

  it('When anyone signs in, then every session that ended (expired or idle) is deleted, the standing ones kept', async () => {
    const standing = await signIn(svc.adminUrl, VIEWER_TOKEN);
    const expired = await signIn(svc.adminUrl, VIEWER_TOKEN);
    const idle = await signIn(svc.adminUrl, VIEWER_TOKEN);
    await query(
      svc.database.url,
      `UPDATE console_sessions SET expires_at = now() - interval '1 second' WHERE ${BY_COOKIE}`,
      [idOf(expired)],
    );
    await query(
      svc.database.url,
      `UPDATE console_sessions SET last_seen_at = now() - interval '11 minutes' WHERE ${BY_COOKIE}`,
      [idOf(idle)],
    );
    await signIn(svc.adminUrl, OPERATOR_TOKEN);
    for (const ended of [expired, idle])
      expect(await query(svc.database.url, `SELECT 1 FROM console_sessions WHERE ${BY_COOKIE}`, [idOf(ended)])).toEqual(
        [],
      );
    expect(
      await query(svc.database.url, `SELECT 1 AS one FROM console_sessions WHERE ${BY_COOKIE}`, [idOf(standing)]),
    ).toEqual([{ one: 1 }]);
  });

  it('When someone signs out, then the signed-out page says so and the cookie is cleared', async () => {
    const cookie = await signIn(svc.adminUrl, VIEWER_TOKEN);
    const out = await post(svc.adminUrl, '/console/sign-out', cookie, {});
    expect(out.status).toBe(303);
    const page = await request(svc.adminUrl).get(out.headers.location as string);
    expect(page.status).toBe(200);
    expect(page.text).toContain('You are signed out');
    expect(page.text).toContain('href="/console/sign-in"');
    expect((await get(svc.adminUrl, '/console', cookie)).status).toBe(401);
  });
});

describe('the same name in two roles', () => {
  it('When a name is both an operator and a viewer, then the service does not start: exit 78 naming the setting', async () => {
    const app = start(['node', path.join(ROOT, 'dist', 'main.js')], ROOT, {
      CONSOLE_OPERATOR_TOKENS: `olga:${OPERATOR_TOKEN}`,
      CONSOLE_VIEWER_TOKENS: `olga:${VIEWER_TOKEN}`,
      SECOND_KEYS: `${POS_ID}:${SECOND_KEY}`,
      DATABASE_URL: 'postgres://nobody@127.0.0.1:1/never',
    });
    expect(await app.exited).toBe(78);
    expect(app.output()).toContain(
      'CONSOLE_VIEWER_TOKENS: entry 1 (olga): the name is also in CONSOLE_OPERATOR_TOKENS',
    );
    expect(app.output()).not.toContain(OPERATOR_TOKEN);
    expect(app.output()).not.toContain(VIEWER_TOKEN);
  });
});
