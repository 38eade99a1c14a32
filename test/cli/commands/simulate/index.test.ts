import { spawn } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createLogger } from '../../../../src/observability/logger';
import { EVENT_TYPES } from '../../../../src/outbox/cloudEvents';
import { createPaymentApi } from '../../../../src/paymentApi/paymentApi';
import type { NotificationDelivery, SimulationReport } from '../../../../src/simulator';
import { query } from '../../../support/database';
import { startTestService, type TestService } from '../../../support/service';
import { POS_ID, SECOND_KEY } from '../../../support/signing';
import { freePort } from '../../../support/net';
import { CLI, cliEnv, parseJson, runCli, startCli } from '../../cliSupport';

type Report = SimulationReport & { seed: number; posId: string; algorithm: string };

let svc: TestService;
let env: Record<string, string>;
beforeAll(async () => {
  svc = await startTestService({ env: { NOTIFY_BASIC_AUTH: 'shop:s3cret', RELAY_ENABLED: 'false' } });
  // The CLI reads the service's own configuration: SECOND_KEYS and NOTIFY_BASIC_AUTH.
  env = cliEnv({ DATABASE_URL: svc.database.url, NOTIFY_BASIC_AUTH: 'shop:s3cret' });
}, 180_000);
afterAll(() => svc.stop());

const url = (): string => `${svc.publicUrl}/notifications`;
/** A client of the double on `apiPort`, as the receiver's reconciler is. */
const apiAt = (apiPort: number) =>
  createPaymentApi({
    baseUrl: `http://127.0.0.1:${apiPort}`,
    credentials: [{ posId: POS_ID, clientId: `client-${POS_ID}`, clientSecret: 'client-secret-value' }],
    timeoutMs: 5000,
    maxInFlight: 2,
    maxPerSecond: 100,
    logger: createLogger('silent'),
  });
const statuses = (deliveries: NotificationDelivery[]): string[] => deliveries.map((d) => `${d.kind}:${d.status}`);

describe('simulate', () => {
  it('When a card order with auto-receive off and a partial refund is simulated, then every notification is accepted and the projections end COMPLETED and FINALIZED', async () => {
    const run = await runCli(
      [
        'simulate',
        '--url',
        url(),
        '--pay-method',
        'card',
        '--no-auto-receive',
        '--refund',
        'partial',
        '--time-scale',
        '10',
        '--seed',
        '7',
        '--json',
      ],
      env,
    );
    expect(run.code).toBe(0);
    const report = parseJson<Report>(run);
    expect(report).toMatchObject({ seed: 7, posId: POS_ID, algorithm: 'MD5' });
    const order = report.orders[0];
    if (!order) throw new Error('no order in the report');
    expect(order).toMatchObject({ payMethod: 'card', autoReceive: false, expectedStatus: 'COMPLETED' });
    const byTime = [...report.deliveries].sort((a, b) => a.firstAttemptAtMs - b.firstAttemptAtMs);
    expect(statuses(byTime)).toEqual([
      'order:PENDING',
      'order:WAITING_FOR_CONFIRMATION',
      'order:COMPLETED',
      'refund:FINALIZED',
    ]);
    for (const d of byTime) {
      expect(d.delivered).toBe(true);
      expect(d.attempts).toHaveLength(1);
      expect(d.attempts[0]).toMatchObject({ attempt: 1, status: 200, answer: 'accepted' });
    }

    const res = await svc.admin.get(`/orders/${order.orderId}`);
    expect(res.body).toMatchObject({
      status: 'COMPLETED',
      payMethodType: 'CARD_TOKEN',
      merchantPosId: POS_ID,
      totalAmount: '15000',
    });
    expect(res.body.history.map((h: { status: string; outcome: string }) => `${h.status}:${h.outcome}`)).toEqual([
      'PENDING:applied',
      'WAITING_FOR_CONFIRMATION:applied',
      'COMPLETED:applied',
    ]);
    expect(res.body.refunds).toEqual([
      expect.objectContaining({ refundId: order.refunds[0]?.refundId, status: 'FINALIZED', amount: '4500' }),
    ]);
    // Svc-Processing-Time is sent for the statuses after PENDING, as the real sender does.
    const deliveries = await query<{ status: string; processing_time_ms: number | null }>(
      svc.database.url,
      `SELECT n.status, d.processing_time_ms FROM deliveries d JOIN notifications n ON n.id = d.notification_id WHERE n.order_id = $1 AND n.kind = 'order' ORDER BY d.id`,
      [order.orderId],
    );
    expect(deliveries.map((d) => [d.status, d.processing_time_ms === null])).toEqual([
      ['PENDING', true],
      ['WAITING_FOR_CONFIRMATION', false],
      ['COMPLETED', false],
    ]);
  });

  it('When --every-type is simulated, then the receiver records a conflict and a disagreement and writes every event type', async () => {
    const run = await runCli(['simulate', '--url', url(), '--every-type', '--time-scale', '20', '--json'], env);
    expect(run.code).toBe(0);
    const report = parseJson<Report>(run);
    const orderIds = report.orders.map((o) => o.orderId);
    expect(report.orders.map((o) => o.expectedStatus)).toEqual(['COMPLETED', 'CANCELED']);
    const events = await query<{ type: string; message: string }>(
      svc.database.url,
      'SELECT type, message FROM outbox_events WHERE order_id = ANY($1) ORDER BY order_id, sequence',
      [orderIds],
    );
    expect(new Set(events.map((e) => e.type))).toEqual(new Set(EVENT_TYPES));
    const completed = events.find((e) => e.type === 'order.completed');
    expect(JSON.parse(completed?.message ?? '{}')).toMatchObject({
      data: { disagreements: [{ field: 'totalAmount', kept: '15000', received: '15100' }] },
    });
    const orders = await query<{ order_id: string; status: string }>(
      svc.database.url,
      'SELECT order_id, status FROM orders WHERE order_id = ANY($1)',
      [orderIds],
    );
    expect(new Map(orders.map((o) => [o.order_id, o.status]))).toEqual(
      new Map([
        [orderIds[0], 'COMPLETED'],
        [orderIds[1], 'CANCELED'],
      ]),
    );
  });

  it('When --every-type is combined with a lifecycle option, then it is a usage error', async () => {
    const run = await runCli(['simulate', '--url', url(), '--every-type', '--orders', '3'], env);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('--every-type plays two orders of its own');
  });

  it('When blik is paid with SHA-256 and only X-OpenSvc-Signature, then the receiver accepts it and the human report names each status and the admin URL', async () => {
    const run = await runCli(
      [
        'simulate',
        '--url',
        url(),
        '--pay-method',
        'blik',
        '--algorithm',
        'sha256',
        '--signature-header',
        'X-OpenSvc-Signature',
        '--refund',
        'full',
        '--time-scale',
        '10',
      ],
      env,
    );
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/order +\S+ +PENDING +-> accepted +\(1 attempt\)/);
    expect(run.stdout).toMatch(/order +\S+ +COMPLETED +-> accepted/);
    expect(run.stdout).toMatch(/refund \d+ of \S+ +FINALIZED +-> accepted/);
    expect(run.stdout).toMatch(/SHA-256/);
    const orderId = /Order (\S+) \(blik, auto-receive on\): should end COMPLETED; refund \d+ 15000 FINALIZED/.exec(
      run.stdout,
    )?.[1];
    expect(orderId).toBeDefined();
    expect(run.stdout).toContain(`/orders/${orderId}`);
    const res = await svc.admin.get(`/orders/${orderId}`);
    expect(res.body).toMatchObject({ status: 'COMPLETED', payMethodType: 'PBL' });
    expect(res.body.refunds[0]).toMatchObject({ status: 'FINALIZED', amount: '15000' });
  });

  it('When every notification is sent twice and reordered, then the receiver counts duplicates and stale ones and the order still ends as planned', async () => {
    const run = await runCli(
      [
        'simulate',
        '--url',
        url(),
        '--orders',
        '3',
        '--duplicates',
        '1',
        '--reorder',
        '1',
        '--cancel',
        '--time-scale',
        '500',
        '--seed',
        '11',
        '--json',
      ],
      env,
    );
    expect(run.code).toBe(0);
    const report = parseJson<Report>(run);
    expect(report.summary.deliveries).toBe(2 * report.summary.notifications);
    expect(report.summary.outcomes.duplicate).toBeGreaterThanOrEqual(report.summary.notifications);
    // Reordered: CANCELED went out before PENDING, so PENDING arrives stale.
    expect(report.summary.outcomes.stale).toBeGreaterThan(0);
    for (const order of report.orders) {
      const res = await svc.admin.get(`/orders/${order.orderId}`);
      expect(res.body.status).toBe('CANCELED');
    }
  });

  it('When the key is wrong, then each notification is attempted 20 times over 72 simulated hours, given up, and the exit code is 1', async () => {
    const run = await runCli(
      ['simulate', '--url', url(), '--pos-id', POS_ID, '--key', 'not-the-key', '--time-scale', '2000000', '--json'],
      env,
    );
    expect(run.code).toBe(1);
    const report = parseJson<Report>(run);
    expect(report.summary).toMatchObject({ delivered: 0, gaveUp: 2, attempts: 40 });
    for (const d of report.deliveries) {
      expect(d.delivered).toBe(false);
      expect(d.attempts.map((a) => a.answer)).toEqual(Array(20).fill('invalid_signature'));
      expect((d.attempts[19]?.scheduledAtMs ?? 0) - d.firstAttemptAtMs).toBe(72 * 3_600_000);
    }
    expect(run.stdout).not.toContain('not-the-key');
    const orders = await query(svc.database.url, 'SELECT 1 FROM orders WHERE order_id = $1', [
      report.orders[0]?.orderId,
    ]);
    expect(orders).toHaveLength(0);
  });

  it('When Basic auth is overridden with a wrong password, then the receiver refuses it and the run fails after --max-attempts', async () => {
    const run = await runCli(
      [
        'simulate',
        '--url',
        url(),
        '--basic-auth',
        'shop:wrong',
        '--max-attempts',
        '2',
        '--time-scale',
        '100000',
        '--json',
      ],
      env,
    );
    expect(run.code).toBe(1);
    const report = parseJson<Report>(run);
    expect(report.deliveries.flatMap((d) => d.attempts.map((a) => `${a.status} ${a.answer}`))).toEqual(
      Array(4).fill('401 invalid_basic_auth'),
    );
  });

  it('When neither --key nor SECOND_KEYS gives a key in production, then it is a usage error', async () => {
    const run = await runCli(
      ['simulate', '--url', url()],
      cliEnv({ SECOND_KEYS: undefined, NODE_ENV: 'production', DATABASE_URL: 'postgres://u@h/d' }),
    );
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('SECOND_KEYS');
    expect(run.stderr).not.toContain(SECOND_KEY);
  });

  it('When SECOND_KEYS is unset outside production, then it signs with the public sandbox key, as the service expects by default', async () => {
    const run = await runCli(
      ['simulate', '--url', url(), '--time-scale', '10'],
      cliEnv({ SECOND_KEYS: undefined, NOTIFY_BASIC_AUTH: 'shop:s3cret' }),
    );
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/as POS 300746/);
  });

  it('When nothing listens at the very first attempt, then it stops at once, saying so and how to keep retrying', async () => {
    const closed = `http://127.0.0.1:${await freePort()}/notifications`;
    const run = await runCli(['simulate', '--url', closed], env);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/cannot connect to .*: connection refused \(ECONNREFUSED\).*npm start.*--keep-retrying/);
  });

  it('When --keep-retrying is given and nothing listens, then each failed attempt is reported as it happens with the next one', async () => {
    const closed = `http://127.0.0.1:${await freePort()}/notifications`;
    const run = await runCli(
      ['simulate', '--url', closed, '--keep-retrying', '--max-attempts', '3', '--time-scale', '100000'],
      env,
    );
    expect(run.code).toBe(1);
    const pending = run.stdout.split('\n').filter((line) => /order +\S+ +PENDING/.test(line));
    // One time format in the first column: +H:MM:SS.
    expect(pending).toEqual([
      expect.stringMatching(
        /^ +\+\d+:\d\d:\d\d +order +\S+ +PENDING +attempt 1 failed: connection refused \(ECONNREFUSED\); next attempt at \+0:01:00$/,
      ),
      expect.stringMatching(
        /^ +\+\d+:\d\d:\d\d +order .* attempt 2 failed: connection refused .*; next attempt at \+0:02:00$/,
      ),
      expect.stringMatching(/^ +\+\d+:\d\d:\d\d +order .* attempt 3 failed: connection refused .*; no more attempts$/),
      expect.stringMatching(/^ +\+\d+:\d\d:\d\d +order +\S+ +PENDING +-> GAVE UP/),
    ]);
  });

  it('When --drop loses notifications for good with the double beside (--api-port), then the lost ones never reach the receiver while the double answers their statuses', async () => {
    const apiPort = await freePort();
    const credentials = `${POS_ID}:client-${POS_ID}:client-secret-value`;
    const child = spawn(
      process.execPath,
      [
        CLI,
        'simulate',
        '--url',
        url(),
        '--orders',
        '8',
        '--drop',
        '0.4',
        '--api-port',
        String(apiPort),
        '--api-hold',
        '60s',
        '--time-scale',
        '1000',
        '--seed',
        '5',
        '--json',
      ],
      {
        cwd: os.tmpdir(),
        env: cliEnv({
          DATABASE_URL: svc.database.url,
          NOTIFY_BASIC_AUTH: 'shop:s3cret',
          PAYMENT_API_URL: `http://127.0.0.1:${apiPort}`,
          PAYMENT_API_CREDENTIALS: credentials,
        }),
      },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    try {
      // The report is printed when the last notification is done; the double keeps answering after it.
      const report = await new Promise<Report>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no report\nstdout: ${stdout}\nstderr: ${stderr}`)), 60_000);
        child.stdout.on('data', () => {
          try {
            resolve(JSON.parse(stdout) as Report);
            clearTimeout(timer);
          } catch {
            // not complete yet
          }
        });
      });
      expect(report.summary.dropped).toBeGreaterThan(0);
      expect(report.summary.dropped + report.summary.deliveries).toBe(report.summary.notifications);
      expect(report.summary.gaveUp).toBe(0);

      const api = apiAt(apiPort);
      for (const lost of report.dropped.filter((d) => d.kind === 'order')) {
        const expected = report.orders.find((o) => o.orderId === lost.orderId)?.expectedStatus;
        const answer = await api.retrieveOrder(POS_ID, lost.orderId);
        expect(answer.value.status).toBe(expected);
        // Delivered statuses aside, the receiver never heard of the lost one.
        const res = await svc.admin.get(`/orders/${lost.orderId}`);
        const heard = res.status === 200 ? (res.body.history as Array<{ status: string }>).map((h) => h.status) : [];
        expect(heard).not.toContain(lost.status);
      }
    } finally {
      child.kill('SIGINT');
    }
    expect(await exited).toBe(0);
  });

  it('When --api-port is asked for without PAYMENT_API_CREDENTIALS, then it is a usage error', async () => {
    const run = await runCli(['simulate', '--url', url(), '--api-port', '0', '--api-hold', '0s'], env);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('PAYMENT_API_CREDENTIALS');
  });

  describe('the double alone (simulate api) with its state in a file', () => {
    const credentials = `${POS_ID}:client-${POS_ID}:client-secret-value`;
    const apiEnv = (apiPort: number): Record<string, string> =>
      cliEnv({
        DATABASE_URL: svc.database.url,
        NOTIFY_BASIC_AUTH: 'shop:s3cret',
        PAYMENT_API_URL: `http://127.0.0.1:${apiPort}`,
        PAYMENT_API_CREDENTIALS: credentials,
      });

    it('When a run kept the double’s state in a file, then the double alone answers the same statuses, restart after restart', async () => {
      const state = path.join(await mkdtemp(path.join(os.tmpdir(), 'double-state-')), 'double.json');
      const sendPort = await freePort();
      const sent = await runCli(
        [
          'simulate',
          '--url',
          url(),
          '--orders',
          '4',
          '--drop',
          '0.5',
          '--api-port',
          String(sendPort),
          '--api-state',
          state,
          '--api-hold',
          '0s',
          '--time-scale',
          '1000',
          '--seed',
          '11',
          '--json',
        ],
        apiEnv(sendPort),
      );
      expect(sent.code).toBe(0);
      const report = parseJson<Report>(sent);
      for (let restart = 0; restart < 2; restart++) {
        const apiPort = await freePort();
        const alone = startCli(['simulate', 'api', '--port', String(apiPort), '--state', state], apiEnv(apiPort));
        try {
          await alone.stderrIncludes('Payment-service double answering at');
          await alone.stderrIncludes('knowing 4 order(s)');
          const api = apiAt(apiPort);
          for (const order of report.orders) {
            const answer = await api.retrieveOrder(POS_ID, order.orderId);
            expect(answer.value.status).toBe(order.expectedStatus);
          }
        } finally {
          alone.child.kill('SIGINT');
        }
        expect((await alone.result).code).toBe(0);
      }
    });

    it('When the state file is not one, then it is a usage error naming the file, and nothing listens', async () => {
      const bad = path.join(await mkdtemp(path.join(os.tmpdir(), 'double-state-')), 'bad.json');
      await writeFile(
        bad,
        JSON.stringify({ version: 1, orders: [['O1', [{ atMs: -1, order: {}, paymentId: null }]]] }),
      );
      const run = await runCli(['simulate', 'api', '--port', '0', '--state', bad], apiEnv(1));
      expect(run.code).toBe(2);
      expect(run.stderr).toContain(`${bad}: not a state file of the double`);
      expect(run.stderr).toContain('orders.0.1.0.atMs');
    });

    it('When --api-state is given without --api-port, then it is a usage error', async () => {
      const run = await runCli(['simulate', '--url', url(), '--api-state', '/tmp/x.json'], env);
      expect(run.code).toBe(2);
      expect(run.stderr).toContain('--api-state needs --api-port');
    });
  });
});
