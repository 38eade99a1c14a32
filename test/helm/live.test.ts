/**
 * The chart against the real app: the migration Job's command and environment migrate a
 * fresh database, the purge CronJob's command and environment run against it (exit 0; a
 * usage error exits 2, which its podFailurePolicy does not retry), the server container's environment (ConfigMap + Secret, as rendered)
 * starts the app with MIGRATE_ON_START=false, the probe paths answer, and a real Prometheus that
 * scrapes the app and a relay running apart, while the simulator sends traffic, evaluates every
 * Grafana panel's and every alert's expression to series, without an error.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { IDeployment } from 'kubernetes-models/apps/v1/Deployment';
import type { ICronJob } from 'kubernetes-models/batch/v1/CronJob';
import type { IJob } from 'kubernetes-models/batch/v1/Job';
import type { IConfigMap } from 'kubernetes-models/v1/ConfigMap';
import type { IContainer } from 'kubernetes-models/v1/Container';
import type { ISecret } from 'kubernetes-models/v1/Secret';
import { freePort, start, stop, waitForStatus, type RunningApp } from './app';
import { testDatabase } from '../support/database';
import { AMQP_URL, EventConsumer, uniqueExchange } from '../support/broker';
import { contractFetch } from '../support/contracts';
import { sleep } from '../support/wait';
import { ALL_FEATURES_VALUES, MONITORING_API_VERSIONS, REPO_ROOT, only, render, type K8sObject } from './helm';
import {
  alertRulesOf,
  instantQuery,
  prometheusBinary,
  ruleGroupsOf,
  withBoolComparison,
  writeRulesFile,
} from './prometheus';

/** The release as rendered: `helm template receiver ... --namespace payments`. */
const NAMESPACE = 'payments';

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
async function runToEnd(
  command: string[],
  cwd: string,
  env: Record<string, string>,
): Promise<{ code: number | string; output: string }> {
  const run = start(commandIn(command), cwd, env);
  const killer = setTimeout(() => run.child.kill('SIGKILL'), 45_000);
  const code = await run.exited;
  clearTimeout(killer);
  return { code, output: run.output() };
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
    (panels ?? []).flatMap((p) => [
      ...(p.targets ?? []).flatMap((t) => (t.expr ? [t.expr] : [])),
      ...fromPanels(p.panels),
    ]);
  // A variable's label_values(selector, label) is Grafana's; the series it lists are the selector's.
  const fromVariables = (dashboard.templating?.list ?? []).flatMap((v) => {
    const query = typeof v.query === 'string' ? v.query : v.query?.query;
    const selector = query ? /^\s*label_values\((.+),\s*\w+\s*\)\s*$/s.exec(query)?.[1] : undefined;
    return selector ? [selector] : [];
  });
  return [...fromPanels(dashboard.panels), ...fromVariables];
}

describe('the chart against the running app', () => {
  const database = testDatabase('helm_metrics_check');
  let workdir: string;
  let app: RunningApp | undefined;
  let publicPort: number;
  let adminPort: number;

  beforeAll(async () => {
    // An empty working directory, so no developer .env is picked up.
    workdir = mkdtempSync(path.join(tmpdir(), 'chart-live-'));
  }, 120_000);

  afterAll(async () => {
    if (app) await stop(app);
    await database.drop();
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
    const deployment = as<IDeployment>(only(objects, 'Deployment'));
    const container = firstContainer(deployment.spec?.template.spec?.containers);
    const chartEnv = environmentOf(container);
    expect(chartEnv.MIGRATE_ON_START).toBe('false');
    publicPort = await freePort();
    adminPort = await freePort();
    app = start(['node', path.join(REPO_ROOT, 'dist', 'main.js')], workdir, {
      ...chartEnv,
      // This machine, not a pod: loopback, free ports, the local database, no broker (a relay runs apart below).
      HOST: '127.0.0.1',
      PORT: String(publicPort),
      ADMIN_PORT: String(adminPort),
      DATABASE_URL: database.url,
      RELAY_ENABLED: 'false',
      ALLOWED_SOURCE_IPS: 'any',
      // So that one slow sender fills it, and the Prometheus test below gets a public 5xx (503 busy).
      UNVERIFIED_BODIES_LIMIT: '64kb',
    });
    await waitForStatus(app, `http://127.0.0.1:${adminPort}/readyz`, 200, 30_000);
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

  test('a real Prometheus scraping the app and a relay apart, under simulated traffic, evaluates every dashboard panel and alert to series', async () => {
    const deployment = as<IDeployment>(only(objects, 'Deployment'));
    const serverEnv = environmentOf(firstContainer(deployment.spec?.template.spec?.containers));
    const job = only(objects, 'Service').metadata.name; // the ServiceMonitor's targets get the Service's name as job
    const purge = only(objects, 'CronJob').metadata.name;
    const exchange = uniqueExchange();
    // Order events find a queue; refund events are returned unroutable and stay pending, so the backlog,
    // the publish failures and the published counts all have series.
    const consumer = await new EventConsumer(exchange, 'order.*').start();
    const relayAdminPort = await freePort();
    const relay = start(['node', path.join(REPO_ROOT, 'dist', 'cli', 'relay.js')], workdir, {
      ...serverEnv,
      HOST: '127.0.0.1',
      ADMIN_PORT: String(relayAdminPort),
      DATABASE_URL: database.url,
      AMQP_URL,
      AMQP_EXCHANGE: exchange,
    });
    // kube-state-metrics' series the alerts read, as it would expose them for this release.
    const kubeStateMetrics = http.createServer((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/plain; version=0.0.4' });
      res.end(
        [
          `kube_deployment_status_replicas_unavailable{namespace="${NAMESPACE}",deployment="${deployment.metadata?.name ?? ''}"} 0`,
          `kube_job_status_failed{namespace="${NAMESPACE}",job_name="${purge}-29381040"} 0`,
          `kube_cronjob_status_last_successful_time{namespace="${NAMESPACE}",cronjob="${purge}"} ${Math.floor(Date.now() / 1000)}`,
          '',
        ].join('\n'),
      );
    });
    await new Promise<void>((resolve) => kubeStateMetrics.listen(0, '127.0.0.1', resolve));
    const kubeStatePort = (kubeStateMetrics.address() as net.AddressInfo).port;
    const prometheusPort = await freePort();
    const prometheusUrl = `http://127.0.0.1:${prometheusPort}`;
    writeRulesFile(path.join(workdir, 'rules.yaml'), ruleGroupsOf(objects));
    writeFileSync(
      path.join(workdir, 'prometheus.yml'),
      JSON.stringify({
        global: { scrape_interval: '1s', evaluation_interval: '1s' },
        rule_files: ['rules.yaml'],
        scrape_configs: [
          {
            job_name: job,
            static_configs: [
              { targets: [`127.0.0.1:${adminPort}`], labels: { namespace: NAMESPACE, pod: 'receiver-server' } },
              { targets: [`127.0.0.1:${relayAdminPort}`], labels: { namespace: NAMESPACE, pod: 'receiver-relay' } },
            ],
          },
          {
            job_name: 'kube-state-metrics',
            honor_labels: true,
            static_configs: [{ targets: [`127.0.0.1:${kubeStatePort}`] }],
          },
        ],
      }),
    );
    const prometheus = start(
      [
        prometheusBinary('prometheus'),
        `--config.file=${path.join(workdir, 'prometheus.yml')}`,
        `--storage.tsdb.path=${path.join(workdir, 'tsdb')}`,
        `--web.listen-address=127.0.0.1:${prometheusPort}`,
        '--log.level=warn',
      ],
      workdir,
      {},
    );
    const holders: net.Socket[] = [];
    try {
      await waitForStatus(relay, `http://127.0.0.1:${relayAdminPort}/readyz`, 200, 30_000);
      await waitForStatus(prometheus, `${prometheusUrl}/-/ready`, 200, 30_000);

      // Traffic: the simulator plays the payment service with the chart's keys and Basic auth.
      const simulated = await runToEnd(
        [
          'node',
          'dist/cli/index.js',
          'simulate',
          '--url',
          `http://127.0.0.1:${publicPort}/notifications`,
          '--orders',
          '3',
          '--no-auto-receive',
          '--refund',
          'partial',
          '--time-scale',
          '1000',
        ],
        workdir,
        {
          DATABASE_URL: database.url,
          SECOND_KEYS: serverEnv.SECOND_KEYS ?? '',
          NOTIFY_BASIC_AUTH: serverEnv.NOTIFY_BASIC_AUTH ?? '',
        },
      );
      expect({ code: simulated.code, output: simulated.code === 0 ? '' : simulated.output }).toEqual({
        code: 0,
        output: '',
      });
      // A public 5xx for the error-ratio alert: one slow sender holds the whole unverified-body budget
      // (UNVERIFIED_BODIES_LIMIT, 64 kB here), so the next notification is refused with 503 busy.
      const basic = `Basic ${Buffer.from(serverEnv.NOTIFY_BASIC_AUTH ?? '').toString('base64')}`;
      const headers = `Host: x\r\nContent-Type: application/json\r\nAuthorization: ${basic}\r\nOpenSvc-Signature: signature=${'0'.repeat(32)}\r\n`;
      const holder = net.connect(publicPort, '127.0.0.1');
      holders.push(holder);
      await new Promise((resolve) => holder.once('connect', resolve));
      holder.write(`POST /notifications HTTP/1.1\r\n${headers}Content-Length: 65500\r\n\r\n{"or`);
      let busy = 0;
      for (let attempt = 0; attempt < 50 && busy !== 503; attempt += 1) {
        await sleep(50);
        busy = (
          await contractFetch(`http://127.0.0.1:${publicPort}/notifications`, 'public', {
            method: 'POST',
            headers: {
              'Content-Type': 'application/json',
              Authorization: basic,
              'OpenSvc-Signature': `signature=${'0'.repeat(32)}`,
            },
            body: JSON.stringify({ padding: 'x'.repeat(100) }), // more than the 36 bytes the holder leaves
          })
        ).status;
      }
      expect(busy).toBe(503);

      // A reconciliation asked for on the admin port, so the payment-API panels have series: the chart's
      // PAYMENT_API_URL does not resolve here, and the client's attempts count as network errors (not awaited).
      void fetch(`http://127.0.0.1:${adminPort}/orders/LIVE-ORDER-1/reconcile`, {
        method: 'POST',
        headers: {
          'Content-Type': 'application/json',
          ...(serverEnv.ADMIN_TOKEN ? { Authorization: `Bearer ${serverEnv.ADMIN_TOKEN}` } : {}),
        },
        body: JSON.stringify({ posId: '145227' }),
      }).catch(() => undefined);

      const panels = dashboardExpressions().map((expr) =>
        expr
          .replace(/\$namespace\b/g, NAMESPACE)
          .replace(/\$job\b/g, job)
          .replace(/\$__rate_interval\b/g, '15s'),
      );
      const alerts = alertRulesOf(objects).map(({ alert, expr }) => ({ alert, expr: withBoolComparison(expr) }));
      expect(alerts.length).toBeGreaterThanOrEqual(13);
      const queries = [
        ...panels.map((expr) => ({ what: 'panel', expr })),
        ...alerts.map(({ alert, expr }) => ({ what: alert, expr })),
      ];

      // Until every query returns series (scrapes come every second), then report what still does not.
      const problems = async (): Promise<string[]> => {
        const found: string[] = [];
        for (const { what, expr } of queries) {
          const outcome = await instantQuery(prometheusUrl, expr);
          if (!outcome.ok) found.push(`${what}: ${expr}: error ${outcome.error}`);
          else if (outcome.series === 0) found.push(`${what}: ${expr}: no series`);
        }
        const rules = (await (await fetch(`${prometheusUrl}/api/v1/rules`)).json()) as {
          data: { groups: Array<{ rules: Array<{ name: string; health: string; lastError?: string }> }> };
        };
        const evaluated = rules.data.groups.flatMap((g) => g.rules);
        if (evaluated.length !== alerts.length)
          found.push(`Prometheus loaded ${evaluated.length} rules, the chart has ${alerts.length}`);
        for (const rule of evaluated)
          if (rule.health !== 'ok') found.push(`${rule.name}: health ${rule.health} ${rule.lastError ?? ''}`);
        return found;
      };
      let remaining = await problems();
      for (let round = 0; round < 60 && remaining.length > 0; round += 1) {
        await sleep(1000);
        remaining = await problems();
      }
      expect(remaining).toEqual([]);
    } finally {
      for (const holder of holders) holder.destroy();
      await stop(prometheus);
      await stop(relay);
      await new Promise<void>((resolve) => kubeStateMetrics.close(() => resolve()));
      await consumer.stop();
    }
  }, 180_000);
});
