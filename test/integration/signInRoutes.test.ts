import request from 'supertest';
import { FAILED_SIGN_INS_PER_MINUTE } from '../../src/console/signInRoutes';
import { CONSOLE_ENV, SAME_ORIGIN, VIEWER_TOKEN } from '../support/console';
import { query } from '../support/database';
import { startTestService, type TestService } from '../support/service';

describe('console without tokens', () => {
  let svc: TestService | null = null;
  afterEach(async () => {
    await svc?.stop();
    svc = null;
  });

  it('When the admin port is bound to loopback, then the console is open, as the operator local', async () => {
    svc = await startTestService({ env: { RELAY_ENABLED: 'false' } });
    const res = await request(svc.adminUrl).get('/console');
    expect(res.status).toBe(200);
    expect(res.text).toContain('local (operator)');
  });

  it('When the admin port is bound to every address, then every console page answers 403 saying what to set', async () => {
    svc = await startTestService({ env: { RELAY_ENABLED: 'false', HOST: '0.0.0.0' } });
    for (const path of ['/console', '/console/sign-in', '/console/orders/X']) {
      const res = await request(svc.adminUrl).get(path);
      expect(res.status).toBe(403);
      expect(res.text).toContain('CONSOLE_OPERATOR_TOKENS');
    }
    const post = await request(svc.adminUrl)
      .post('/console/sign-in')
      .set('Sec-Fetch-Site', 'same-origin')
      .type('form')
      .send({ token: 'x' });
    expect(post.status).toBe(403);
  });
});

describe('console sign-in under a flood of wrong tokens', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService({ env: { RELAY_ENABLED: 'false', ...CONSOLE_ENV } });
  });
  afterAll(() => svc.stop());

  const signIn = (token: string) =>
    request(svc.adminUrl).post('/console/sign-in').set(SAME_ORIGIN).type('form').send({ token });

  it('When more wrong tokens come in a minute than are recorded, then the rest get 429 with Retry-After, one row says so, and a valid token still signs in', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < FAILED_SIGN_INS_PER_MINUTE + 5; i++) statuses.push((await signIn(`wrong-${i}`)).status);
    expect(statuses).toEqual([
      ...Array.from({ length: FAILED_SIGN_INS_PER_MINUTE }, () => 401),
      ...Array.from({ length: 5 }, () => 429),
    ]);
    const throttled = await signIn('wrong-again');
    expect(throttled.status).toBe(429);
    expect(Number(throttled.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(Number(throttled.headers['retry-after'])).toBeLessThanOrEqual(60);
    expect(throttled.text).toContain('Too many failed sign-ins');
    expect(
      await query(
        svc.database.url,
        'SELECT result, count(*)::int AS n FROM console_audit GROUP BY result ORDER BY result',
      ),
    ).toEqual([
      { result: 'refused', n: FAILED_SIGN_INS_PER_MINUTE },
      { result: 'throttled', n: 1 },
    ]);
    expect((await signIn(VIEWER_TOKEN)).status).toBe(303);
  });
});
