/**
 * Test support for checking the chart's monitoring with Prometheus itself (the `promtool` and `prometheus`
 * binaries: test/support/tools.ts): the PrometheusRule's rule groups as a plain Prometheus rules file, and
 * instant queries.
 */
import { writeFileSync } from 'node:fs';
import type { IPrometheusRule } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule';
import { stringify } from 'yaml';
import { only, type K8sObject } from './helm';

type RuleGroups = NonNullable<IPrometheusRule['spec']['groups']>;

/** The rule groups of the one PrometheusRule among rendered objects. */
export function ruleGroupsOf(objects: K8sObject[]): RuleGroups {
  const rule = only(objects, 'PrometheusRule') as unknown as IPrometheusRule;
  return rule.spec.groups ?? [];
}

/** Every alert rule, flattened. */
export function alertRulesOf(objects: K8sObject[]): Array<{ alert: string; expr: string }> {
  return ruleGroupsOf(objects).flatMap((group) =>
    (group.rules ?? []).flatMap((rule) => (rule.alert ? [{ alert: rule.alert, expr: String(rule.expr) }] : [])),
  );
}

/**
 * Writes the groups as a Prometheus rules file. `withoutAnnotations` drops the alerts' annotations: promtool's
 * unit tests compare them whole, and they are prose (their templates are checked by `promtool check rules`).
 */
export function writeRulesFile(file: string, groups: RuleGroups, { withoutAnnotations = false } = {}): void {
  const plain = groups.map((group) => ({
    ...group,
    rules: (group.rules ?? []).map((rule) => {
      if (!withoutAnnotations) return rule;
      const { annotations: _annotations, ...rest } = rule;
      return rest;
    }),
  }));
  writeFileSync(file, stringify({ groups: plain }));
}

/** One instant query's outcome: an error, or how many series it returned. */
export type QueryOutcome = { ok: true; series: number } | { ok: false; error: string };

/** An instant query through Prometheus's HTTP API (/api/v1/query). */
export async function instantQuery(baseUrl: string, expr: string): Promise<QueryOutcome> {
  const response = await fetch(`${baseUrl}/api/v1/query`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ query: expr }),
  });
  const answer = (await response.json()) as {
    status: string;
    error?: string;
    data?: { resultType: string; result: unknown[] | [number, string] };
  };
  if (answer.status !== 'success') return { ok: false, error: answer.error ?? `HTTP ${response.status}` };
  const result = answer.data?.result ?? [];
  // A scalar result is one value; a vector or matrix, one entry per series.
  return { ok: true, series: answer.data?.resultType === 'scalar' ? 1 : result.length };
}

const COMPARISONS = ['==', '!=', '>=', '<=', '>', '<'];

/**
 * The expression with `bool` on its outermost comparison (`a > 5` becomes `a > bool 5`): the alert's
 * value whether or not it fires, so a query shows the series it reads exist. Only operators outside
 * parentheses, brackets, braces and strings count; the last one binds loosest.
 */
export function withBoolComparison(expr: string): string {
  let depth = 0;
  let quote: string | null = null;
  let last: { at: number; length: number } | null = null;
  for (let i = 0; i < expr.length; i += 1) {
    const c = expr.charAt(i);
    if (quote) {
      if (c === '\\') i += 1;
      else if (c === quote) quote = null;
      continue;
    }
    if (c === '"' || c === "'" || c === '`') quote = c;
    else if ('([{'.includes(c)) depth += 1;
    else if (')]}'.includes(c)) depth -= 1;
    else if (depth === 0) {
      const operator = COMPARISONS.find((op) => expr.startsWith(op, i));
      if (operator) {
        last = { at: i, length: operator.length };
        i += operator.length - 1;
      }
    }
  }
  if (!last) throw new Error(`no comparison outside parentheses in: ${expr}`);
  const end = last.at + last.length;
  return `${expr.slice(0, end)} bool${expr.slice(end)}`;
}
