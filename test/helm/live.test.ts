/**
 * The chart against the real app: the migration Job's command and environment migrate a
 * fresh database, the purge CronJob's command and environment run against it (exit 0; a
 * usage error exits 2, which its podFailurePolicy does not retry), the server container's environment (ConfigMap + Secret, as rendered)
 * starts the app with MIGRATE_ON_START=false, the probe paths answer, and every metric (and
 * label value) the PrometheusRule and the Grafana dashboard query is one the app exports.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { IDeployment } from 'kubernetes-models/apps/v1/Deployment';
import type { ICronJob } from 'kubernetes-models/batch/v1/CronJob';
import type { IJob } from 'kubernetes-models/batch/v1/Job';
import type { IConfigMap } from 'kubernetes-models/v1/ConfigMap';
import type { IContainer } from 'kubernetes-models/v1/Container';
import type { ISecret } from 'kubernetes-models/v1/Secret';
import type { IPrometheusRule } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule';
import { dropDatabase, freePort, start, stop, throwawayDatabaseUrl, waitForStatus, type RunningApp } from './app';
import { ALL_FEATURES_VALUES, MONITORING_API_VERSIONS, REPO_ROOT, only, render, type K8sObject } from './helm';
import { exactMatchersIn, exportedNames, metricNamesIn, parseExposition, type Exposition } from './promql';

/** Series the alerts read from outside the app: Prometheus itself and kube-state-metrics. */
const EXTERNAL_METRICS = new Set([
  'up',
  'kube_deployment_status_replicas_unavailable',
  'kube_job_status_failed',
  'kube_cronjob_status_last_successful_time',
]);
/** Labels Prometheus adds at scrape time; the app's exposition does not have them. */
const TARGET_LABELS = new Set(['namespace', 'job', 'pod', 'instance', 'service', 'deployment']);

const objects = render({ valuesFiles: [ALL_FEATURES_VALUES], apiVersions: MONITORING_API_VERSIONS });
const as = <T>(object: K8sObject): T => object as unknown as T;

function firstContainer(containers: IContainer[] | undefined): IContainer {
  const [container] = containers ?? [];
  if (!container) throw new Error('no container');
  return container;
}

/** A container's environment as the kubelet would build it from the rendered ConfigMaps and Secrets. */
function environmentOf(container: IContainer): Record<string, string> {
  const env: Record<string, string> = {};
  for (const source of container.envFrom ?? []) {
    const name = source.configMapRef?.name;
    if (!name) throw new Error('only configMapRef envFrom is resolved here');
    const configMap = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === name);
    if (!configMap) throw new Error(`envFrom names ConfigMap ${name}, which the chart does not render`);
    Object.assign(env, as<IConfigMap>(configMap).data);
  }
  for (const variable of container.env ?? []) {
    if (variable.value !== undefined) {
      env[variable.name] = variable.value;
      continue;
    }
    const ref = variable.valueFrom?.secretKeyRef;
    if (!ref) throw new Error(`${variable.name}: only value and secretKeyRef are resolved here`);
    const secret = objects.find((o) => o.kind === 'Secret' && o.metadata.name === ref.name);
    const data = secret ? as<ISecret>(secret).data?.[ref.key] : undefined;
    if (data === undefined) {
      if (ref.optional) continue;
      throw new Error(`${variable.name}: Secret ${ref.name} key ${ref.key} is not rendered`);
    }
    env[variable.name] = Buffer.from(data, 'base64').toString('utf8');
  }
  return env;
}

/** The image's command with its relative script resolved against this checkout. */
function commandIn(command: string[]): string[] {
  return command.map((arg, i) => (i > 0 && arg.startsWith('dist/') ? path.join(REPO_ROOT, arg) : arg));
}

/** Runs a command to its end (killed after 45 s, so it never outlives the test). */
async function runToEnd(command: string[], cwd: string, env: Record<string, string>): Promise<{ code: number | string; output: string }> {
  const run = start(commandIn(command), cwd, env);
  const killer = setTimeout(() => run.child.kill('SIGKILL'), 45_000);
  const code = await run.exited;
  clearTimeout(killer);
  return { code, output: run.output() };
}

function alertExpressions(): string[] {
  const rule = as<IPrometheusRule>(only(objects, 'PrometheusRule'));
  return rule.spec.groups?.flatMap((g) => (g.rules ?? []).map((r) => String(r.expr))) ?? [];
}

interface Panel {
  targets?: { expr?: string }[];
  panels?: Panel[];
}

function dashboardExpressions(): string[] {
  const configMap = as<IConfigMap>(only(objects, 'ConfigMap', '-dashboard'));
  const dashboard = JSON.parse(Object.values(configMap.data ?? {})[0] ?? '{}') as {
    panels?: Panel[];
    templating?: { list?: { query?: string | { query?: string } }[] };
  };
  const fromPanels = (panels: Panel[] | undefined): string[] =>
    (panels ?? []).flatMap((p) => [...(p.targets ?? []).flatMap((t) => (t.expr ? [t.expr] : [])), ...fromPanels(p.panels)]);
  const fromVariables = (dashboard.templating?.list ?? []).flatMap((v) => {
    const query = typeof v.query === 'string' ? v.query : v.query?.query;
    return query && query.includes('(') ? [query] : [];
  });
  return [...fromPanels(dashboard.panels), ...fromVariables];
}

describe('the chart against the running app', () => {
  const database = throwawayDatabaseUrl('helm_metrics_check');
  let workdir: string;
  let app: RunningApp | undefined;
  let publicPort: number;
  let adminPort: number;
  let exposition: Exposition;

  beforeAll(async () => {
    // An empty working directory, so no developer .env is picked up.
    workdir = mkdtempSync(path.join(tmpdir(), 'chart-live-'));
  }, 120_000);

  afterAll(async () => {
    if (app) await stop(app);
    await dropDatabase(database.name);
    rmSync(workdir, { recursive: true, force: true });
  });

  test("the migration Job's command and environment migrate a fresh database", async () => {
    const container = firstContainer(as<IJob>(only(objects, 'Job')).spec?.template.spec?.containers);
    const env = { ...environmentOf(container), DATABASE_URL: database.url };
    expect(Object.keys(env).sort()).toEqual(['DATABASE_TIMEOUT', 'DATABASE_URL', 'LOG_LEVEL']);
    const job = start(commandIn(container.command ?? []), workdir, env);
    const killer = setTimeout(() => job.child.kill('SIGKILL'), 45_000); // never outlive the test
    const code = await job.exited;
    clearTimeout(killer);
    expect({ code, output: code === 0 ? '' : job.output() }).toEqual({ code: 0, output: '' });
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
    const exitCodes = cronJob.spec?.jobTemplate.spec?.podFailurePolicy?.rules?.flatMap((r) => r.onExitCodes?.values ?? []);
    const withoutRetention = Object.fromEntries(Object.entries(env).filter(([name]) => name !== 'RETENTION_DAYS'));
    const usage = await runToEnd(command, workdir, withoutRetention);
    expect(usage.code).toBe(2);
    expect(exitCodes).toEqual([usage.code]);
    const unreachable = await runToEnd(command, workdir, { ...env, DATABASE_URL: `postgres://postgres@127.0.0.1:${await freePort()}/x` });
    expect(unreachable.code).toBe(1);
  }, 90_000);

  test("the server container's environment starts the app, and its probe paths answer 200", async () => {
    const deployment = as<IDeployment>(only(objects, 'Deployment'));
    const container = firstContainer(deployment.spec?.template.spec?.containers);
    const chartEnv = environmentOf(container);
    expect(chartEnv.MIGRATE_ON_START).toBe('false');
    publicPort = await freePort();
    adminPort = await freePort();
    app = start(['node', path.join(REPO_ROOT, 'dist', 'main.js')], workdir, {
      ...chartEnv,
      // This machine, not a pod: loopback, free ports, the local database, no broker.
      HOST: '127.0.0.1',
      PORT: String(publicPort),
      ADMIN_PORT: String(adminPort),
      DATABASE_URL: database.url,
      RELAY_ENABLED: 'false',
      ALLOWED_SOURCE_IPS: 'any',
    });
    await waitForStatus(app, `http://127.0.0.1:${adminPort}/readyz`, 200, 30_000);
    const probes = [container.startupProbe, container.livenessProbe, container.readinessProbe];
    for (const probe of probes) {
      expect(probe?.httpGet?.port).toBe('admin');
      const response = await fetch(`http://127.0.0.1:${adminPort}${probe?.httpGet?.path ?? '/missing'}`);
      expect([probe?.httpGet?.path, response.status]).toEqual([probe?.httpGet?.path, 200]);
    }
  }, 60_000);

  test('the public port serves POST /notifications and nothing of the admin port', async () => {
    const base = `http://127.0.0.1:${publicPort}`;
    const post = await fetch(`${base}/notifications`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect([404, 405]).not.toContain(post.status);
    expect((await fetch(`${base}/notifications`)).status).toBe(405);
    for (const adminPath of ['/metrics', '/livez', '/readyz', '/orders/1', '/refunds/1']) {
      expect([adminPath, (await fetch(`${base}${adminPath}`)).status]).toEqual([adminPath, 404]);
    }
  });

  test('every metric the alerts and the dashboard query is exported by the app', async () => {
    const response = await fetch(`http://127.0.0.1:${adminPort}/metrics`);
    expect(response.status).toBe(200);
    exposition = parseExposition(await response.text());
    const exported = exportedNames(exposition);
    const expressions = [...alertExpressions(), ...dashboardExpressions()];
    expect(expressions.length).toBeGreaterThan(20);
    const used = new Set(expressions.flatMap(metricNamesIn));
    expect(used.size).toBeGreaterThan(10);
    const unknown = [...used].filter((name) => !exported.has(name) && !EXTERNAL_METRICS.has(name));
    expect(unknown).toEqual([]);
  });

  test('every label value the alerts and the dashboard select on occurs in the app’s series', () => {
    const problems: string[] = [];
    for (const expr of [...alertExpressions(), ...dashboardExpressions()]) {
      for (const { metric, label, value } of exactMatchersIn(expr)) {
        if (TARGET_LABELS.has(label) || EXTERNAL_METRICS.has(metric)) continue;
        const family = metric.replace(/_(bucket|sum|count)$/, '');
        const samples = exposition.samples.filter((s) => s.name === metric || s.name.startsWith(`${family}_`) || s.name === family);
        const withLabel = samples.filter((s) => label in s.labels);
        if (withLabel.length === 0) {
          problems.push(`${metric}: no exported series has label ${label}`);
        } else if (!withLabel.some((s) => s.labels[label] === value)) {
          problems.push(`${metric}{${label}="${value}"}: no such series`);
        }
      }
    }
    expect(problems).toEqual([]);
  });
});
