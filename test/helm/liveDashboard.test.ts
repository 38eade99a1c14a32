/**
 * The chart's monitoring against the real app: a real Prometheus (Debian's `prometheus`, `npm run
 * test:tools`) scrapes the server and a relay running apart, both with the environment the chart renders,
 * while the simulator sends traffic, and evaluates every Grafana panel's and every alert's expression to
 * series, without an error.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { IDeployment } from 'kubernetes-models/apps/v1/Deployment';
import type { IConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { freePort, start, stop, waitForStatus } from './app';
import { testDatabase } from '../support/database';
import { as, NAMESPACE, objects, runMigrationJob, runToEnd, startServer, type RunningServer } from './chartApp';
import amqp from 'amqplib';
import { AMQP_URL, EventConsumer, uniqueExchange, journalQueueOf } from '../support/broker';
import { contractFetch } from '../support/contracts';
import { sleep } from '../support/wait';
import { only, REPO_ROOT } from './helm';
import { alertRulesOf, instantQuery, ruleGroupsOf, withBoolComparison, writeRulesFile } from './prometheus';
import { toolPath } from '../support/tools';

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

describe('the chart against the running app, watched by Prometheus', () => {
  const database = testDatabase('helm_dashboard_check');
  let workdir: string;
  let server: RunningServer | undefined;

  beforeAll(async () => {
    // An empty working directory, so no developer .env is picked up.
    workdir = mkdtempSync(path.join(tmpdir(), 'chart-dashboard-'));
    const migrated = await runMigrationJob(workdir, database.url);
    if (migrated.code !== 0) throw new Error(`the migration Job failed (${migrated.code}):\n${migrated.output}`);
    server = await startServer(workdir, database.url);
  }, 120_000);

  afterAll(async () => {
    if (server) await stop(server.app);
    await database.drop();
    rmSync(workdir, { recursive: true, force: true });
  });

  test('a real Prometheus scraping the app and a relay apart, under simulated traffic, evaluates every dashboard panel and alert to series', async () => {
    if (!server) throw new Error('the server did not start');
    const { publicPort, adminPort, chartEnv: serverEnv } = server;
    const deployment = as<IDeployment>(only(objects, 'Deployment'));
    const job = only(objects, 'Service').metadata.name; // the ServiceMonitor's targets get the Service's name as job
    const exchange = uniqueExchange();
    // Completed orders find a queue; the orders' other events find none and are published unrouted (the unrouted
    // count has series); refund events find a full queue that refuses them (the broker nacks: a publish failure)
    // and stay pending, so the backlog, its age, the publish failures and the published counts all have series.
    const consumer = await new EventConsumer(exchange, 'order.completed').start();
    const full = await amqp.connect(AMQP_URL);
    const refusing = await full.createChannel();
    const { queue: fullQueue } = await refusing.assertQueue('', {
      exclusive: true,
      arguments: { 'x-max-length': 0, 'x-overflow': 'reject-publish' },
    });
    await refusing.bindQueue(fullQueue, exchange, 'refund.*');
    const relayAdminPort = await freePort();
    const relay = start(['node', path.join(REPO_ROOT, 'dist', 'cli', 'relay.js')], workdir, {
      ...serverEnv,
      HOST: '127.0.0.1',
      ADMIN_PORT: String(relayAdminPort),
      DATABASE_URL: database.url,
      AMQP_URL,
      AMQP_EXCHANGE: exchange,
      JOURNAL_QUEUE: journalQueueOf(exchange),
    });
    // kube-state-metrics' series the alerts read, as it would expose them for this release.
    const kubeStateMetrics = http.createServer((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/plain; version=0.0.4' });
      res.end(
        [
          `kube_deployment_status_replicas_unavailable{namespace="${NAMESPACE}",deployment="${deployment.metadata?.name ?? ''}"} 0`,
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
        toolPath('prometheus'),
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
      await full.close();
      await consumer.stop();
    }
  }, 180_000);
});
