/**
 * The reliability suite (issue 4): the service attacked and broken on purpose, each scenario an
 * automated check with figures. One orchestrating file so the scenarios run one after another
 * (faults and floods must not overlap) and the report is rendered once, at the end. Only
 * `npm run test:faults` (RELIABILITY_REPORT=write, its default) replaces the tracked docs/RELIABILITY.md;
 * any other run (`.ci/run` sets RELIABILITY_REPORT=temp, a partial run with `jest -t`) writes its report
 * under the OS temp dir.
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import amqp from 'amqplib';
import { AMQP_URL } from '../support/broker';
import { PG_SERVER, query } from '../support/database';
import { newRunId, pruneOldResults, renderMarkdown, RunReport, writeMarkdown, type ScenarioDefinition } from './report';
import { brokerOutageScenario, BROKER_OUTAGE } from './scenarios/brokerOutage';
import { consoleFloodScenario, CONSOLE_FLOOD } from './scenarios/consoleFlood';
import { databaseOutageScenario, DATABASE_OUTAGE } from './scenarios/databaseOutage';
import { failoverScenario, FAILOVER } from './scenarios/failover';
import { floodScenario, FLOOD } from './scenarios/flood';
import { gracefulStopScenario, GRACEFUL_STOP } from './scenarios/gracefulStop';
import { hostileScenario, HOSTILE } from './scenarios/hostile';
import { killedScenario, KILLED } from './scenarios/killed';
import { orderingScenario, ORDERING } from './scenarios/ordering';
import { reconciliationScenario, RECONCILIATION } from './scenarios/reconciliation';
import { replicasScenario, REPLICAS_SCENARIO } from './scenarios/replicas';
import { secretsScenario, SECRETS } from './scenarios/secretsInLogs';
import { trustBoundariesScenario, TRUST_BOUNDARIES } from './scenarios/trustBoundaries';
import { ROOT } from '../support/build';
import { ensureBuilt } from './support/build';

const SCENARIOS: ScenarioDefinition[] = [
  DATABASE_OUTAGE,
  BROKER_OUTAGE,
  KILLED,
  GRACEFUL_STOP,
  FLOOD,
  ORDERING,
  HOSTILE,
  TRUST_BOUNDARIES,
  REPLICAS_SCENARIO,
  RECONCILIATION,
  CONSOLE_FLOOD,
  FAILOVER,
  // Last: it scans the logs of every service the scenarios above started.
  SECRETS,
];

const report = new RunReport(process.env.RELIABILITY_RUN_ID ?? newRunId());
const startedAt = new Date();

function describeSource(): string {
  try {
    const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
    const dirty =
      execFileSync('git', ['status', '--porcelain', '--', 'src', 'sql'], {
        cwd: ROOT,
        encoding: 'utf8',
      }).trim() !== '';
    return `node dist/main.js built from src/ at commit ${commit}${dirty ? ' plus uncommitted changes' : ''}`;
  } catch {
    return 'node dist/main.js built from src/';
  }
}

beforeAll(async () => {
  pruneOldResults();
  await ensureBuilt();
  report.machine('service', describeSource());
  const [pgVersion] = await query<{ v: string }>(
    `${PG_SERVER}/postgres`,
    `SELECT current_setting('server_version') AS v`,
  );
  report.machine('postgres', `PostgreSQL ${pgVersion?.v ?? '?'}`);
  const connection = await amqp.connect(AMQP_URL);
  const properties =
    (connection.connection as unknown as { serverProperties?: Record<string, unknown> }).serverProperties ?? {};
  report.machine('rabbitmq', `RabbitMQ ${typeof properties.version === 'string' ? properties.version : '?'}`);
  await connection.close();
}, 120_000);

databaseOutageScenario(report);
brokerOutageScenario(report);
killedScenario(report);
gracefulStopScenario(report);
floodScenario(report);
orderingScenario(report);
hostileScenario(report);
trustBoundariesScenario(report);
replicasScenario(report);
reconciliationScenario(report);
consoleFloodScenario(report);
failoverScenario(report);
secretsScenario(report);

afterAll(() => {
  const text = renderMarkdown(report, SCENARIOS, startedAt, new Date());
  const ranAll = SCENARIOS.every((s) => report.lines().some((l) => l.kind === 'check' && l.scenario === s.id));
  // Tests never change tracked files: the committed report is replaced only when asked for
  // (npm run test:faults), and never by a partial run (jest -t).
  const target =
    ranAll && process.env.RELIABILITY_REPORT === 'write'
      ? path.join(ROOT, 'docs', 'RELIABILITY.md')
      : report.file.replace(/\.jsonl$/, '.md');
  writeMarkdown(target, text);
  process.stdout.write(`reliability report: ${target}\n`);
});
