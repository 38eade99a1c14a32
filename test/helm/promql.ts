/**
 * Just enough PromQL and Prometheus text-format reading to check that alert and dashboard
 * expressions only name metrics (and label values) the app really exports. The extraction
 * errs towards reporting too many names, so a mistake shows as a failure, never a pass.
 */

const KEYWORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'and', 'or', 'unless', 'bool', 'offset', 'inf', 'nan']);

/** Metric names an expression reads (functions, keywords, labels, durations and strings removed). */
export function metricNamesIn(expr: string): string[] {
  const labelValues = /^\s*label_values\((.*),\s*[a-zA-Z_]\w*\s*\)\s*$/s.exec(expr);
  if (labelValues?.[1] !== undefined) return metricNamesIn(labelValues[1]); // a Grafana variable query
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""') // string literals
    .replace(/\{[^}]*\}/g, ' ') // label matchers
    .replace(/\[[^\]]*\]/g, ' ') // ranges and subqueries
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ') // grouping labels
    .replace(/\$\{?\w+\}?/g, ' '); // Grafana variables
  const names = new Set<string>();
  for (const match of stripped.matchAll(/(?<![\w.:$])[a-zA-Z_:][\w:]*/g)) {
    const rest = stripped.slice((match.index ?? 0) + match[0].length);
    if (/^\s*\(/.test(rest)) continue; // a function call
    if (KEYWORDS.has(match[0].toLowerCase())) continue;
    names.add(match[0]);
  }
  return [...names];
}

export interface ExactMatcher {
  metric: string;
  label: string;
  value: string;
}

/** `metric{label="value"}` equality matchers in an expression (regex and negative ones skipped). */
export function exactMatchersIn(expr: string): ExactMatcher[] {
  const matchers: ExactMatcher[] = [];
  for (const selector of expr.matchAll(/([a-zA-Z_:][\w:]*)\s*\{([^}]*)\}/g)) {
    const [, metric = '', body = ''] = selector;
    for (const matcher of body.matchAll(/([a-zA-Z_]\w*)\s*=\s*"((?:[^"\\]|\\.)*)"/g)) {
      const start = matcher.index ?? 0;
      const operator = body.slice(start).match(/^[a-zA-Z_]\w*\s*(=~|!=|!~|=)/)?.[1];
      if (operator !== '=') continue;
      matchers.push({ metric, label: matcher[1] ?? '', value: matcher[2] ?? '' });
    }
  }
  return matchers;
}

export interface Sample {
  name: string;
  labels: Record<string, string>;
}

export interface Exposition {
  /** Metric families from `# TYPE` lines, with their type. */
  families: Map<string, string>;
  samples: Sample[];
}

/** Parses the Prometheus text exposition format (what prom-client's /metrics answers). */
export function parseExposition(text: string): Exposition {
  const families = new Map<string, string>();
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    const type = /^# TYPE (\S+) (\S+)/.exec(line);
    if (type?.[1] && type[2]) {
      families.set(type[1], type[2]);
      continue;
    }
    if (line.startsWith('#') || line.trim() === '') continue;
    const sample = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+\S+/.exec(line);
    if (!sample?.[1]) throw new Error(`unreadable exposition line: ${line}`);
    const labels: Record<string, string> = {};
    for (const label of (sample[2] ?? '').matchAll(/([a-zA-Z_]\w*)="((?:[^"\\]|\\.)*)"/g)) {
      if (label[1] !== undefined && label[2] !== undefined) labels[label[1]] = label[2];
    }
    samples.push({ name: sample[1], labels });
  }
  return { families, samples };
}

const SERIES_SUFFIXES: Record<string, string[]> = {
  histogram: ['_bucket', '_sum', '_count'],
  summary: ['_sum', '_count'],
};

/** Every name a query may use: families, their histogram/summary series, and sample names. */
export function exportedNames(exposition: Exposition): Set<string> {
  const names = new Set(exposition.samples.map((s) => s.name));
  for (const [family, type] of exposition.families) {
    names.add(family);
    for (const suffix of SERIES_SUFFIXES[type] ?? []) names.add(family + suffix);
  }
  return names;
}
