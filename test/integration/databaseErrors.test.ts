import { query, testDatabase } from '../support/database';
import { startTestService, type TestService } from '../support/service';
import { orderBody, uniqueId } from '../support/signing';
import { FaultProxy } from '../support/faultProxy';

describe('database outage', () => {
  const database = testDatabase();
  let proxy: FaultProxy;
  let svc: TestService;

  beforeAll(async () => {
    proxy = await new FaultProxy(5432).start();
    svc = await startTestService({
      database,
      databaseUrl: `postgres://postgres@127.0.0.1:${proxy.port}/${database.name}`,
      env: { RELAY_ENABLED: 'false', DATABASE_TIMEOUT: '1s' },
    });
  });
  afterAll(async () => {
    proxy.pass();
    await svc.stop();
    await proxy.stop();
    await database.drop();
  });

  it('When the database is cut, then 503 with Retry-After comes quickly, nothing is written, and the same delivery is accepted once it is back', async () => {
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
