import { spawn } from 'node:child_process';
import path from 'node:path';
import { EventConsumer } from '../support/broker';
import { contractFetch } from '../support/contracts';
import { freePort } from '../support/net';
import { startTestService, type TestService } from '../support/service';
import { orderBody, uniqueId } from '../support/signing';
import { waitUntil } from '../support/wait';
import { cliEnv, ROOT } from './cliSupport';

let svc: TestService;
beforeAll(async () => {
  // The service records (its own relay off); `npm run relay` publishes.
  svc = await startTestService({ env: { RELAY_ENABLED: 'false' } });
}, 180_000);
afterAll(() => svc.stop());

describe('npm run relay (the relay alone)', () => {
  it('When it runs, then it publishes what the service recorded and serves metrics and probes on ADMIN_PORT until SIGTERM', async () => {
    const consumer = await new EventConsumer(svc.exchange).start();
    const adminPort = await freePort();
    const child = spawn(process.execPath, [path.join(ROOT, 'dist', 'cli', 'relay.js')], {
      cwd: ROOT,
      env: cliEnv({
        DATABASE_URL: svc.database.url,
        AMQP_EXCHANGE: svc.exchange,
        ADMIN_PORT: String(adminPort),
        HOST: '127.0.0.1',
      }),
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      const admin = `http://127.0.0.1:${adminPort}`;
      // Until the relay listens: a refused connection is a not yet.
      await waitUntil('the relay ready', () =>
        contractFetch(`${admin}/readyz`, 'admin').then(
          (r) => r.status === 200,
          () => false,
        ),
      );
      expect((await contractFetch(`${admin}/livez`, 'admin')).status).toBe(200);
      // No data routes in the relay alone: 404 not_found, as docs/openapi.yaml says.
      expect((await contractFetch(`${admin}/orders/1`, 'admin')).status).toBe(404);

      const orderId = uniqueId('RELAYCLI');
      await svc.post(orderBody({ orderId, status: 'PENDING' })).expect(200);
      const [message] = await consumer.waitFor(1);
      expect(JSON.parse(message?.content.toString('utf8') ?? '{}')).toMatchObject({
        type: 'order.pending',
        subject: orderId,
      });

      const metrics = await waitUntil('order.pending counted as published', async () => {
        const text = await (await contractFetch(`${admin}/metrics`, 'admin')).text();
        return /outbox_events_published_total\{type="order\.pending"\} [1-9]/.test(text) ? text : undefined;
      });
      expect(metrics).toMatch(/^outbox_relay_active 1$/m);
      expect(metrics).toMatch(/^outbox_pending_events 0$/m);
      expect(metrics).toMatch(/^nodejs_eventloop_active_seconds_total /m);
      // The relay alone receives and records nothing: no intake or recorder series that would read 0.
      expect(metrics).not.toMatch(
        /^(payment_notifications_total|payment_notification_variants_total|recorder_\w+)[{ ]/m,
      );
    } finally {
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      await consumer.stop();
    }
  }, 60_000);
});
