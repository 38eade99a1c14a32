/** The few statistics the benchmark reports: medians over rounds, quantiles of latencies. */

export const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
};

export const quantile = (sorted: number[], q: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;

export function round2(value: number): number {
  return Math.round(value * 100) / 100;
}

/**
 * Student's t distribution's 97.5th percentile for `df` degrees of freedom: the factor of a two-sided 95 %
 * confidence interval of a mean. Exact to three decimals from the table up to 30; beyond, the Cornish-Fisher
 * expansion around the normal's 1.96 (off by less than 0.001 there).
 */
export function t975(df: number): number {
  const table = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.16, 2.145, 2.131, 2.12, 2.11,
    2.101, 2.093, 2.086, 2.08, 2.074, 2.069, 2.064, 2.06, 2.056, 2.052, 2.048, 2.045, 2.042,
  ];
  if (!Number.isInteger(df) || df < 1) throw new RangeError(`t975: ${df} degrees of freedom`);
  if (df <= table.length) return table[df - 1] as number;
  const z = 1.959964;
  return z + (z ** 3 + z) / (4 * df) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * df ** 2);
}

/** What paired ratios say (each a round's B / A): their centre, how sure it is, and how they scatter. */
export interface PairedRatios {
  pairs: number;
  /** exp(mean of the log-ratios). */
  geometricMean: number;
  /** The 95 % confidence interval of the geometric mean: t on the log-ratios. */
  low: number;
  high: number;
  median: number;
  /** Rounds where B came out ahead (ratio above 1), behind, and even. */
  above: number;
  below: number;
  even: number;
  /** The standard deviation of the log-ratios: about the share by which a single pair scatters. */
  spread: number;
  min: number;
  max: number;
  /** Pairs that would make the interval's half-width `resolution` (3 %) at this spread, about. */
  pairsToResolve: number;
}

/** Summarizes paired ratios (at least two) on the log scale, where a ratio and its inverse weigh the same. */
export function pairedRatios(ratios: readonly number[], resolution = 0.03): PairedRatios {
  if (ratios.length < 2 || ratios.some((r) => !(r > 0) || !Number.isFinite(r))) {
    throw new RangeError(`pairedRatios: need two or more positive ratios, got ${ratios.join(', ')}`);
  }
  const logs = ratios.map(Math.log);
  const n = logs.length;
  const mean = logs.reduce((a, b) => a + b, 0) / n;
  const spread = Math.sqrt(logs.reduce((a, b) => a + (b - mean) ** 2, 0) / (n - 1));
  const half = (t975(n - 1) * spread) / Math.sqrt(n);
  return {
    pairs: n,
    geometricMean: Math.exp(mean),
    low: Math.exp(mean - half),
    high: Math.exp(mean + half),
    median: median([...ratios]),
    above: ratios.filter((r) => r > 1).length,
    below: ratios.filter((r) => r < 1).length,
    even: ratios.filter((r) => r === 1).length,
    spread,
    min: Math.min(...ratios),
    max: Math.max(...ratios),
    pairsToResolve: Math.max(2, Math.ceil(((1.96 * spread) / Math.log(1 + resolution)) ** 2)),
  };
}
