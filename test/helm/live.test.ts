/**
 * The chart against the real app: the migration Job's command and environment migrate a fresh database, the
 * purge command the install notes give runs in the server container's environment, the server container's
 * environment (ConfigMap + Secret, as rendered) starts the app with MIGRATE_ON_START=false and its history
 * maintainer, and the probe paths answer. A real Prometheus over the same workloads: liveDashboard.test.ts
 * (`npm run test:tools`).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort, stop, type RunningApp } from './app';
import { testDatabase } from '../support/database';
import { environmentOf, notesExecCommands, runMigrationJob, runToEnd, serverContainer, startServer } from './chartApp';
import { contractFetch } from '../support/contracts';
import { waitUntil } from '../support/wait';

describe('the chart against the running app', () => {
  const database = testDatabase('helm_metrics_check');
  let workdir: string;
  let app: RunningApp | undefined;
  let publicPort: number;

  beforeAll(() => {
    // An empty working directory, so no developer .env is picked up.
    workdir = mkdtempSync(path.join(tmpdir(), 'chart-live-'));
  });

  afterAll(async () => {
    if (app) await stop(app);
    await database.drop();
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
    const server = await startServer(workdir, database.url);
    app = server.app;
    publicPort = server.publicPort;
    expect(server.chartEnv.MIGRATE_ON_START).toBe('false');
    // The retentions the chart sets are the service's to apply: its history maintainer runs, with them.
    expect(server.chartEnv).toMatchObject({ HISTORY_RETENTION: '4320h', BODY_RETENTION: '14d' });
    await waitUntil('the history maintainer active, its first round done', async () => {
      const metrics = await (await contractFetch(`http://127.0.0.1:${server.adminPort}/metrics`, 'admin')).text();
      return /^history_maintainer_active 1$/m.test(metrics) && /^history_partition_days_ahead 7$/m.test(metrics);
    });
    const { container, adminPort } = server;
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
