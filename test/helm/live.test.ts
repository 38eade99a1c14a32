/**
 * The chart against the real app: the migration Job's command and environment migrate a fresh database, the
 * purge CronJob's command and environment run against it (exit 0; a usage error exits 2, which its
 * podFailurePolicy does not retry), the server container's environment (ConfigMap + Secret, as rendered)
 * starts the app with MIGRATE_ON_START=false, and the probe paths answer. A real Prometheus over the same
 * workloads: liveDashboard.test.ts (`npm run test:tools`).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { ICronJob } from 'kubernetes-models/batch/v1/CronJob';
import { freePort, stop, type RunningApp } from './app';
import { testDatabase } from '../support/database';
import { as, environmentOf, firstContainer, objects, runMigrationJob, runToEnd, startServer } from './chartApp';
import { contractFetch } from '../support/contracts';
import { only } from './helm';

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

  test("the purge CronJob's command and environment purge the migrated database; usage errors exit 2, failures 1", async () => {
    const cronJob = as<ICronJob>(only(objects, 'CronJob'));
    const container = firstContainer(cronJob.spec?.jobTemplate.spec?.template.spec?.containers);
    const chartEnv = environmentOf(container);
    expect(Object.keys(chartEnv).sort()).toEqual(['DATABASE_URL', 'LOG_LEVEL', 'RETENTION_DAYS']);
    const env: Record<string, string> = { ...chartEnv, DATABASE_URL: database.url };
    const command = container.command ?? [];

    const purged = await runToEnd(command, workdir, env);
    expect({ code: purged.code, output: purged.code === 0 ? '' : purged.output }).toEqual({ code: 0, output: '' });
    expect(purged.output).toContain(`older than ${chartEnv.RETENTION_DAYS} day(s)`); // RETENTION_DAYS was read

    // The podFailurePolicy fails the Job at once on exit code 2 and retries anything else.
    const exitCodes = cronJob.spec?.jobTemplate.spec?.podFailurePolicy?.rules?.flatMap(
      (r) => r.onExitCodes?.values ?? [],
    );
    const withoutRetention = Object.fromEntries(Object.entries(env).filter(([name]) => name !== 'RETENTION_DAYS'));
    const usage = await runToEnd(command, workdir, withoutRetention);
    expect(usage.code).toBe(2);
    expect(exitCodes).toEqual([usage.code]);
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
