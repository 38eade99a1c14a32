/**
 * The reliability suite (issue 4): the service attacked and broken on purpose, each scenario an
 * automated check with figures. One orchestrating file so the scenarios run one after another
 * (faults and floods must not overlap) and the report is rendered once, at the end, to
 * docs/RELIABILITY.md. Run alone with `npm run test:faults`.
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import amqp from 'amqplib';
import { AMQP_URL } from '../support/broker';
import { PG_SERVER } from '../support/database';
import { newRunId, pruneOldResults, renderMarkdown, RunReport, writeMarkdown, type ScenarioDefinition } from './report';
import { brokerOutageScenario, BROKER_OUTAGE } from './scenarios/brokerOutage';
import { databaseOutageScenario, DATABASE_OUTAGE } from './scenarios/databaseOutage';
import { floodScenario, FLOOD } from './scenarios/flood';
import { gracefulStopScenario, GRACEFUL_STOP } from './scenarios/gracefulStop';
import { hostileScenario, HOSTILE } from './scenarios/hostile';
import { killedScenario, KILLED } from './scenarios/killed';
import { orderingScenario, ORDERING } from './scenarios/ordering';
import { secretsScenario, SECRETS } from './scenarios/secretsInLogs';
import { ensureBuilt, REPO_ROOT } from './support/build';
import { sql } from './support/store';

const SCENARIOS: ScenarioDefinition[] = [DATABASE_OUTAGE, BROKER_OUTAGE, KILLED, GRACEFUL_STOP, FLOOD, ORDERING, HOSTILE, SECRETS];

const report = new RunReport(process.env.RELIABILITY_RUN_ID ?? newRunId());
const startedAt = new Date();

function describeSource(): string {
  try {
    const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: REPO_ROOT, encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'src', 'sql'], { cwd: REPO_ROOT, encoding: 'utf8' }).trim() !== '';
    return `node dist/main.js built from src/ at commit ${commit}${dirty ? ' plus uncommitted changes' : ''}`;
  } catch {
    return 'node dist/main.js built from src/';
  }
}

beforeAll(async () => {
  pruneOldResults();
  await ensureBuilt();
  report.machine('service', describeSource());
  const [pgVersion] = await sql<{ v: string }>(`${PG_SERVER}/postgres`, `SELECT current_setting('server_version') AS v`);
  report.machine('postgres', `PostgreSQL ${pgVersion?.v ?? '?'}`);
  const connection = await amqp.connect(AMQP_URL);
  const properties = (connection.connection as unknown as { serverProperties?: Record<string, unknown> }).serverProperties ?? {};
  report.machine('rabbitmq', `RabbitMQ ${String(properties.version ?? '?')}`);
  await connection.close();
}, 120_000);

databaseOutageScenario(report);
brokerOutageScenario(report);
killedScenario(report);
gracefulStopScenario(report);
floodScenario(report);
orderingScenario(report);
hostileScenario(report);
secretsScenario(report);

afterAll(() => {
  const text = renderMarkdown(report, SCENARIOS, startedAt, new Date());
  const ranAll = SCENARIOS.every((s) => report.lines().some((l) => l.kind === 'check' && l.scenario === s.id));
  // A partial run (jest -t) must not replace the committed report of a full one.
  const target = ranAll ? path.join(REPO_ROOT, 'docs', 'RELIABILITY.md') : report.file.replace(/\.jsonl$/, '.md');
  writeMarkdown(target, text);
  process.stdout.write(`reliability report: ${target}\n`);
});
