/**
 * The chart against the real app: the migration Job's command and environment migrate a fresh database, the
 * purge command the install notes give runs in the server container's environment, the server container's
 * environment (ConfigMap + Secret, as rendered) starts the app with MIGRATE_ON_START=false and its history
 * maintainer, its journal is declared on the vhost of JOURNAL_AMQP_URL as the chart configures it, and the probe
 * paths answer. A real Prometheus over the same workloads: liveDashboard.test.ts
 * (`npm run test:tools`).
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import amqp from 'amqplib';
import bytes from 'bytes';
import { freePort, stop, type RunningApp } from './app';
import { testDatabase } from '../support/database';
import { environmentOf, notesExecCommands, runMigrationJob, runToEnd, serverContainer, startServer } from './chartApp';
import { contractFetch } from '../support/contracts';
import { waitUntil } from '../support/wait';
import { AMQP_URL } from '../support/broker';
import { orderBody, sign, uniqueId } from '../support/signing';
import { parseDuration } from '../../src/config';
import { journalQueueArguments } from '../../src/failover/notificationJournal';

const run = promisify(execFile);

describe('the chart against the running app', () => {
  const database = testDatabase('helm_metrics_check');
  // The journal's vhost of its own and its user, with the permissions the chart's README gives (declare and read
  // its queue, publish through the default exchange), on this machine's broker.
  const journalVhost = `test-chart-journal-${randomBytes(4).toString('hex')}`;
  const journalUser = journalVhost;
  const journalPassword = randomBytes(12).toString('hex');
  const journalQueue = environmentOf(serverContainer()).JOURNAL_QUEUE ?? '';
  const journalUrl = Object.assign(new URL(AMQP_URL), {
    username: journalUser,
    password: journalPassword,
    pathname: `/${journalVhost}`,
  }).toString();
  let workdir: string;
  let app: RunningApp | undefined;
  let publicPort: number;
  let adminPort: number;
  let chartEnv: Record<string, string>;

  beforeAll(async () => {
    // An empty working directory, so no developer .env is picked up.
    workdir = mkdtempSync(path.join(tmpdir(), 'chart-live-'));
    await run('rabbitmqctl', ['-q', 'add_vhost', journalVhost]);
    await run('rabbitmqctl', ['-q', 'add_user', journalUser, journalPassword]);
    const queue = `^${journalQueue.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`;
    await run('rabbitmqctl', [
      '-q',
      'set_permissions',
      '-p',
      journalVhost,
      journalUser,
      queue,
      '^amq\\.default$',
      queue,
    ]);
  });

  afterAll(async () => {
    if (app) await stop(app);
    await database.drop();
    await run('rabbitmqctl', ['-q', 'delete_user', journalUser]);
    await run('rabbitmqctl', ['-q', 'delete_vhost', journalVhost]);
    rmSync(workdir, { recursive: true, force: true });
  });

  test("the migration Job's command and environment migrate a fresh database", async () => {
    const job = await runMigrationJob(workdir, database.url);
    expect(Object.keys(job.env).sort()).toEqual(['DATABASE_TIMEOUT', 'DATABASE_URL', 'LOG_LEVEL']);
    expect({ code: job.code, output: job.code === 0 ? '' : job.output }).toEqual({ code: 0, output: '' });
  }, 60_000);

  test("the install notes' purge command runs in the server container's environment; without a retention it exits 2", async () => {
    // The chart runs no purge of its own (the service applies BODY_RETENTION and HISTORY_RETENTION); its notes
    // give the command that applies them now, in a server pod (kubectl exec: the container's environment).
    const command = notesExecCommands().find((c) => c.includes('purge')) ?? [];
    expect(command).toEqual([
      'node',
      'dist/cli/index.js',
      'purge',
      '--days',
      '14',
      '--history-days',
      '180',
      '--dry-run',
    ]);
    const env = { ...environmentOf(serverContainer()), DATABASE_URL: database.url };

    const counted = await runToEnd(command, workdir, env);
    expect({ code: counted.code, output: counted.code === 0 ? '' : counted.output }).toEqual({ code: 0, output: '' });
    expect(counted.output).toContain('Dry run: would purge raw bodies of 0 day(s)');
    expect(counted.output).toContain('older than 180 day(s)');
    const applied = await runToEnd(command.slice(0, -1), workdir, env);
    expect({ code: applied.code, output: applied.code === 0 ? '' : applied.output }).toEqual({ code: 0, output: '' });
    expect(applied.output).toContain('Removed the history of 0 day(s)');

    expect((await runToEnd(command.slice(0, 3), workdir, env)).code).toBe(2);
    const unreachable = await runToEnd(command, workdir, {
      ...env,
      DATABASE_URL: `postgres://postgres@127.0.0.1:${await freePort()}/x`,
    });
    expect(unreachable.code).toBe(1);
  }, 90_000);

  test("the server container's environment starts the app, and its probe paths answer 200", async () => {
    const server = await startServer(workdir, database.url, { JOURNAL_AMQP_URL: journalUrl });
    app = server.app;
    ({ publicPort, adminPort, chartEnv } = server);
    expect(server.chartEnv.MIGRATE_ON_START).toBe('false');
    // The retentions the chart sets are the service's to apply: its history maintainer runs, with them.
    expect(server.chartEnv).toMatchObject({ HISTORY_RETENTION: '4320h', BODY_RETENTION: '14d' });
    await waitUntil('the history maintainer active, its first round done', async () => {
      const metrics = await (await contractFetch(`http://127.0.0.1:${server.adminPort}/metrics`, 'admin')).text();
      return /^history_maintainer_active 1$/m.test(metrics) && /^history_partition_days_ahead 7$/m.test(metrics);
    });
    const { container } = server;
    const probes = [container.startupProbe, container.livenessProbe, container.readinessProbe];
    for (const probe of probes) {
      expect(probe?.httpGet?.port).toBe('admin');
      const response = await contractFetch(
        `http://127.0.0.1:${adminPort}${probe?.httpGet?.path ?? '/missing'}`,
        'admin',
      );
      expect([probe?.httpGet?.path, response.status]).toEqual([probe?.httpGet?.path, 200]);
    }
  }, 60_000);

  test("the journal is declared as the chart configures it, on JOURNAL_AMQP_URL's vhost, and keeps what is recorded", async () => {
    const metrics = async (): Promise<string> =>
      (await contractFetch(`http://127.0.0.1:${adminPort}/metrics`, 'admin')).text();
    await waitUntil('the journal connected', async () => /^notification_journal_up 1$/m.test(await metrics()));
    const queue = chartEnv.JOURNAL_QUEUE ?? '';
    const retentionMs = parseDuration(chartEnv.JOURNAL_RETENTION ?? '');
    const maxBytes = bytes.parse(chartEnv.JOURNAL_MAX_BYTES ?? '');
    expect([queue, retentionMs, maxBytes]).toEqual(['payments.notification-journal', 2 * 3_600_000, 512 * 1024 * 1024]);
    const connection = await amqp.connect(journalUrl);
    try {
      const channel = await connection.createChannel();
      await channel.checkQueue(queue); // the app's, not one made here
      // Declaring it again with other arguments would fail (406): these are the ones the queue has.
      const args = journalQueueArguments({
        url: journalUrl,
        queue,
        retentionMs: retentionMs ?? 0,
        maxBytes: maxBytes ?? 0,
      });
      await expect(channel.assertQueue(queue, { durable: true, arguments: args })).resolves.toMatchObject({ queue });
    } finally {
      await connection.close().catch(() => undefined);
    }
    // A notification signed with the chart's second key is recorded, and its broker confirms the entry.
    const [posId = '', secondKey = ''] = (chartEnv.SECOND_KEYS ?? '').split(',')[0]?.split(':') ?? [];
    const body = orderBody({ orderId: uniqueId('CHARTJOURNAL'), status: 'PENDING', merchantPosId: posId });
    const answer = await contractFetch(`http://127.0.0.1:${publicPort}/notifications`, 'public', {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        Authorization: `Basic ${Buffer.from(chartEnv.NOTIFY_BASIC_AUTH ?? '').toString('base64')}`,
        'OpenSvc-Signature': sign(body, secondKey),
      },
      body,
    });
    expect(answer.status).toBe(200);
    await waitUntil('the journal entry confirmed', async () =>
      /^notification_journal_entries_total\{outcome="confirmed"\} 1$/m.test(await metrics()),
    );
  });

  test('the public port serves POST /notifications and nothing of the admin port', async () => {
    const base = `http://127.0.0.1:${publicPort}`;
    const post = await contractFetch(`${base}/notifications`, 'public', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect([404, 405]).not.toContain(post.status);
    expect((await contractFetch(`${base}/notifications`, 'public')).status).toBe(405);
    for (const adminPath of ['/metrics', '/livez', '/readyz', '/orders/1', '/refunds/1']) {
      expect([adminPath, (await contractFetch(`${base}${adminPath}`, 'public')).status]).toEqual([adminPath, 404]);
    }
  });
});
