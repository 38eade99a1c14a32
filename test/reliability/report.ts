import {
  appendFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * Figures of one run of the reliability suite. Each scenario appends JSON lines to a results file
 * under the OS temp dir keyed by the run id; the orchestrating test file renders them as the
 * markdown table of docs/RELIABILITY.md at the end. The shape of the document is fixed: the same
 * sections, and one row per scenario in scenario order whether or not it ran.
 */
export const RESULTS_DIR = path.join(os.tmpdir(), 'nr-reliability-results');

export interface ScenarioDefinition {
  id: number;
  title: string;
  /** What was done, for the table (parameters included). */
  done: string;
}

type Line =
  | { kind: 'figure'; scenario: number; key: string; value: string | number; at: number }
  | { kind: 'check'; scenario: number; name: string; passed: boolean; error?: string; ms: number; at: number }
  | { kind: 'machine'; key: string; value: string; at: number };

/** Results and service logs of earlier runs are kept for a week, then removed. */
export function pruneOldResults(maxAgeMs = 7 * 86_400_000): void {
  const cutoff = Date.now() - maxAgeMs;
  for (const dir of [RESULTS_DIR, path.join(RESULTS_DIR, 'service-logs')]) {
    if (!existsSync(dir)) continue;
    for (const name of readdirSync(dir)) {
      const file = path.join(dir, name);
      const stat = statSync(file);
      if (stat.isFile() && stat.mtimeMs < cutoff) rmSync(file, { force: true });
    }
  }
}

export function newRunId(): string {
  return `${new Date().toISOString().replace(/[:.]/g, '-')}-${process.pid}`;
}

export class RunReport {
  readonly file: string;

  constructor(readonly runId: string) {
    mkdirSync(RESULTS_DIR, { recursive: true });
    this.file = path.join(RESULTS_DIR, `${runId}.jsonl`);
  }

  private append(line: Line): void {
    appendFileSync(this.file, `${JSON.stringify(line)}\n`);
  }

  figure(scenario: number, key: string, value: string | number): void {
    this.append({ kind: 'figure', scenario, key, value, at: Date.now() });
  }

  check(scenario: number, name: string, passed: boolean, ms: number, error?: string): void {
    this.append({ kind: 'check', scenario, name, passed, ms, at: Date.now(), ...(error ? { error } : {}) });
  }

  hasFigure(scenario: number, key: string): boolean {
    return this.lines().some((l) => l.kind === 'figure' && l.scenario === scenario && l.key === key);
  }

  machine(key: string, value: string): void {
    this.append({ kind: 'machine', key, value, at: Date.now() });
  }

  lines(): Line[] {
    if (!existsSync(this.file)) return [];
    return readFileSync(this.file, 'utf8')
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => JSON.parse(l) as Line);
  }
}

/** The table's figures, in this order; every other figure goes to the scenario's details. */
const TABLE_FIGURES = [
  'requests',
  '200s',
  '503s',
  '5xx',
  'unanswered',
  'rows',
  'events',
  'max latency',
  'peak RSS',
  'log lines scanned',
  'secrets in logs',
];

const cell = (text: string): string => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');

export function renderMarkdown(
  report: RunReport,
  scenarios: readonly ScenarioDefinition[],
  startedAt: Date,
  finishedAt: Date,
): string {
  const lines = report.lines();
  const machine = new Map<string, string>();
  const figures = new Map<number, Map<string, string | number>>();
  const checks = new Map<number, Array<Extract<Line, { kind: 'check' }>>>();
  for (const line of lines) {
    if (line.kind === 'machine') machine.set(line.key, line.value);
    else if (line.kind === 'figure') {
      const map = figures.get(line.scenario) ?? new Map<string, string | number>();
      map.set(line.key, line.value);
      figures.set(line.scenario, map);
    } else {
      const list = checks.get(line.scenario) ?? [];
      list.push(line);
      checks.set(line.scenario, list);
    }
  }

  const out: string[] = [];
  out.push('# Reliability: faults, floods and hostile input');
  out.push('');
  out.push(
    'Written by `npm run test:faults` (with `RELIABILITY_REPORT=temp`, as in `.ci/run`, it leaves this file alone): every row below',
  );
  out.push(
    'is an automated scenario in `test/reliability/`, and its figures are the ones measured in this run. Do not edit by hand.',
  );
  out.push('');
  out.push(
    `- Run: ${startedAt.toISOString()} to ${finishedAt.toISOString()} (${Math.round((finishedAt.getTime() - startedAt.getTime()) / 1000)} s)`,
  );
  out.push(
    `- Machine: ${os.cpus().length} cores (${os.cpus()[0]?.model.trim() ?? 'unknown CPU'}), ${Math.round(os.totalmem() / 1024 ** 3)} GB RAM, ${os.platform()} ${os.arch()}`,
  );
  out.push(
    `- Node.js ${process.version}; ${machine.get('postgres') ?? 'Postgres (version not read)'}; ${machine.get('rabbitmq') ?? 'RabbitMQ (version not read)'}`,
  );
  out.push(`- Service under test: ${machine.get('service') ?? 'node dist/main.js built from src/'}`);
  out.push('');
  out.push('| # | Scenario | What was done | What was measured | Result |');
  out.push('|---|---|---|---|---|');
  for (const scenario of scenarios) {
    const measured = figures.get(scenario.id) ?? new Map<string, string | number>();
    const keys = TABLE_FIGURES.filter((k) => measured.has(k));
    const measuredText =
      keys.length === 0 ? '(nothing recorded)' : keys.map((k) => `${k}: ${measured.get(k)}`).join('; ');
    const ran = checks.get(scenario.id) ?? [];
    const failed = ran.filter((c) => !c.passed);
    let result: string;
    if (ran.length === 0) result = 'not run';
    else if (failed.length === 0) result = `passed (${ran.length}/${ran.length} checks)`;
    else result = `FAILED ${failed.length} of ${ran.length} checks (below)`;
    out.push(
      `| ${scenario.id} | ${cell(scenario.title)} | ${cell(scenario.done)} | ${cell(measuredText)} | ${cell(result)} |`,
    );
  }
  const failures = [...checks.values()].flat().filter((c) => !c.passed);
  out.push('');
  out.push('## Failed checks');
  out.push('');
  if (failures.length === 0) out.push('None.');
  for (const failure of failures) {
    const reason = (failure.error ?? '')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l !== '' && !l.startsWith('at '))
      .slice(0, 8)
      .join(' / ')
      .slice(0, 700);
    out.push(`- Scenario ${failure.scenario}, "${failure.name}": ${cell(reason)}`);
  }
  out.push('');
  out.push('## Details per scenario');
  for (const scenario of scenarios) {
    const measured = figures.get(scenario.id) ?? new Map<string, string | number>();
    const ran = checks.get(scenario.id) ?? [];
    out.push('');
    out.push(`### ${scenario.id}. ${scenario.title}`);
    out.push('');
    const details = [...measured.keys()].filter((k) => !TABLE_FIGURES.includes(k));
    for (const key of details) out.push(`- ${key}: ${cell(String(measured.get(key)))}`);
    if (details.length > 0) out.push('');
    if (ran.length === 0) out.push('- not run');
    for (const c of ran) out.push(`- ${c.passed ? 'passed' : '**FAILED**'}: ${c.name} (${(c.ms / 1000).toFixed(1)} s)`);
  }
  out.push('');
  return out.join('\n');
}

export function writeMarkdown(file: string, text: string): void {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, text);
}
