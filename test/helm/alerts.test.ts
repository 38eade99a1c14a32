/**
 * The chart's alerts, checked by Prometheus's own tool: `promtool check rules` on the PrometheusRule each
 * ci/ values file renders, and `promtool test rules` on the unit tests in test/helm/alerts/, which give every
 * alert series that make it fire and series that must not.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse } from 'yaml';
import { ALL_FEATURES_VALUES, CI_VALUES, MONITORING_API_VERSIONS, render } from './helm';
import { alertRulesOf, ruleGroupsOf, withBoolComparison, writeRulesFile } from './prometheus';
import { toolPath } from '../support/tools';

const UNIT_TESTS = path.join(__dirname, 'alerts', 'alerts.test.yaml');

interface UnitTests {
  rule_files: string[];
  tests: Array<{ alert_rule_test?: Array<{ alertname: string; exp_alerts?: unknown[] }> }>;
}

let workdir: string;
beforeAll(() => {
  workdir = mkdtempSync(path.join(tmpdir(), 'chart-alerts-'));
});
afterAll(() => rmSync(workdir, { recursive: true, force: true }));

function promtool(args: string[]): { status: number | null; output: string } {
  const result = spawnSync(toolPath('promtool'), args, { cwd: workdir, encoding: 'utf8' });
  if (result.error) throw result.error;
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

test.each(CI_VALUES)('promtool check rules passes on the PrometheusRule %s renders', (name, file) => {
  const objects = render({ valuesFiles: [file], apiVersions: MONITORING_API_VERSIONS });
  const rules = path.join(workdir, `${path.basename(file, '.yaml')}.rules.yaml`);
  writeRulesFile(rules, ruleGroupsOf(objects));
  const result = promtool(['check', 'rules', rules]);
  expect([name, result.status, result.output]).toEqual([name, 0, expect.stringContaining('SUCCESS')]);
});

describe('promtool test rules', () => {
  const objects = render({ valuesFiles: [ALL_FEATURES_VALUES], apiVersions: MONITORING_API_VERSIONS });
  const unitTests = parse(readFileSync(UNIT_TESTS, 'utf8')) as UnitTests;

  test('every alert has a case where it fires and one where it must not', () => {
    const cases = unitTests.tests.flatMap((t) => t.alert_rule_test ?? []);
    const missing = alertRulesOf(objects).flatMap(({ alert }) => {
      const mine = cases.filter((c) => c.alertname === alert);
      return [
        ...(mine.some((c) => (c.exp_alerts ?? []).length > 0) ? [] : [`${alert}: no case where it fires`]),
        ...(mine.some((c) => (c.exp_alerts ?? []).length === 0) ? [] : [`${alert}: no case where it stays quiet`]),
      ];
    });
    expect(missing).toEqual([]);
    expect(alertRulesOf(objects).length).toBeGreaterThanOrEqual(13);
  });

  test('the unit tests pass against the rules the chart renders', () => {
    expect(unitTests.rule_files).toEqual(['rules.yaml']);
    writeRulesFile(path.join(workdir, 'rules.yaml'), ruleGroupsOf(objects), { withoutAnnotations: true });
    copyFileSync(UNIT_TESTS, path.join(workdir, 'alerts.test.yaml'));
    const result = promtool(['test', 'rules', 'alerts.test.yaml']);
    expect(result.output).toContain('SUCCESS');
    expect(result.status).toBe(0);
  });
});

// live.test.ts queries each alert with `bool` on its outermost comparison, so that it has a value either way.
test.each([
  ['up{job="x"} == 0', 'up{job="x"} == bool 0'],
  ['sum(a{code=~"5..",b!="c"}) / sum(a) > 0.05', 'sum(a{code=~"5..",b!="c"}) / sum(a) > bool 0.05'],
  ['max(time() - (x > 0)) > 300', 'max(time() - (x > 0)) > bool 300'],
  ['(max(y) or vector(0)) < 1', '(max(y) or vector(0)) < bool 1'],
  ['time() - max(z{l=">"}) >= 10', 'time() - max(z{l=">"}) >= bool 10'],
])('withBoolComparison(%j) is %j', (expr, expected) => {
  expect(withBoolComparison(expr)).toBe(expected);
});
