import request from 'supertest';
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
