import { query, testDatabase } from '../../support/database';
import { startTestService, type TestService } from '../../support/service';
import { orderBody, uniqueId } from '../../support/signing';
import { FaultProxy } from '../../support/faultProxy';

interface BehindProxy {
  database: ReturnType<typeof testDatabase>;
  proxy: FaultProxy;
  svc: TestService;
}

/** A service (relay off) on its own database, reached through a fault proxy, for the tests of one describe block. */
function behindProxy(databaseTimeout: string): () => BehindProxy {
  const database = testDatabase();
  let world: BehindProxy | null = null;
  beforeAll(async () => {
    const proxy = await new FaultProxy(5432).start();
    const svc = await startTestService({
      database,
      databaseUrl: `postgres://postgres@127.0.0.1:${proxy.port}/${database.name}`,
      env: { RELAY_ENABLED: 'false', DATABASE_TIMEOUT: databaseTimeout },
    });
    world = { database, proxy, svc };
  });
  afterAll(async () => {
    if (world) {
      world.proxy.pass();
      await world.svc.stop();
      await world.proxy.stop();
    }
    await database.drop();
  });
  return () => {
    if (!world) throw new Error('the service behind the proxy did not start');
    return world;
  };
}

describe('database outage', () => {
  const outage = behindProxy('1s');

  it('When the database is cut, then 503 with Retry-After comes quickly, nothing is written, and the same delivery is accepted once it is back', async () => {
    const { database, proxy, svc } = outage();
    const orderId = uniqueId('DOWN');
    const body = orderBody({ orderId, status: 'PENDING' });
    await svc.post(orderBody({ orderId: uniqueId('WARM'), status: 'PENDING' })).expect(200);

    proxy.reset();
    const started = Date.now();
    const refused = await svc.post(body);
    const elapsed = Date.now() - started;
    expect(refused.status).toBe(503);
    expect(refused.headers['retry-after']).toMatch(/^\d+$/);
    expect(refused.body.error.code).toBe('database_unavailable');
    expect(elapsed).toBeLessThan(5000); // the sender's patience, not a performance goal
    expect((await svc.admin.get('/readyz')).status).toBe(503);
    expect(await query(database.url, 'SELECT 1 FROM notifications WHERE subject_id = $1', [orderId])).toHaveLength(0);

    proxy.pass();
    const accepted = await svc.post(body);
    expect(accepted.status).toBe(200);
    expect(accepted.body.outcome).toBe('accepted');
    expect(await query(database.url, 'SELECT 1 FROM notifications WHERE subject_id = $1', [orderId])).toHaveLength(1);
    expect((await svc.admin.get('/readyz')).status).toBe(200);
  });
});

describe('metrics during a database outage', () => {
  // Longer than Prometheus's default scrape timeout (10 s).
  const outage = behindProxy('30s');

  const gauge = (text: string, name: string): string | undefined =>
    text
      .split('\n')
      .find((line) => line.startsWith(`${name} `))
      ?.split(' ')[1];

  it('When the database does not answer and DATABASE_TIMEOUT is long, then a scrape still answers in time, with the figures it read last', async () => {
    const { proxy, svc } = outage();
    await svc.post(orderBody({ orderId: uniqueId('SCRAPE'), status: 'PENDING' })).expect(200);
    const before = (await svc.admin.get('/metrics').expect(200)).text;
    expect(gauge(before, 'outbox_pending_events')).toBe('1');
    expect(gauge(before, 'history_partition_days_ahead')).toBe('7');

    proxy.silent();
    // Within Prometheus's default scrape timeout: the scrape's own bound, not a performance goal.
    const during = (await svc.admin.get('/metrics').timeout(9_000).expect(200)).text;
    expect(gauge(during, 'outbox_pending_events')).toBe('1');
    expect(gauge(during, 'history_partition_days_ahead')).toBe('7');
    // Later scrapes share the reads still waiting rather than add theirs to the intake's pool: one per figure.
    for (let scrape = 0; scrape < 3; scrape += 1) await svc.admin.get('/metrics').timeout(9_000).expect(200);
    const { pool } = svc.service;
    expect(pool.totalCount - pool.idleCount + pool.waitingCount).toBe(2);
  });
});
