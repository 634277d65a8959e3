// Small summaries for the report.

/** Nearest-rank percentile (q in [0, 1]) of unsorted values; NaN when empty. */
export function percentile(values: readonly number[], q: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

/** max / mean of the values (1 = perfectly even); NaN without any. */
export function imbalance(values: readonly number[]): number {
  const total = values.reduce((a, b) => a + b, 0);
  if (values.length === 0 || total === 0) return NaN;
  return Math.max(...values) / (total / values.length);
}

/** Two-sided 95 % Student t quantiles by degrees of freedom (1..30); above 30 the normal's 1.96 is close enough. */
const T95 = [NaN, 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.16, 2.145, 2.131, 2.12, 2.11, 2.101, 2.093, 2.086, 2.08, 2.074, 2.069, 2.064, 2.06, 2.056, 2.052, 2.048, 2.045, 2.042];

export interface MeanCi {
  mean: number;
  /** Half-width of the 95 % confidence interval of the mean (NaN with fewer than two samples). */
  ci95: number;
  n: number;
}

export function meanCi(values: readonly number[]): MeanCi {
  const n = values.length;
  if (n === 0) return { mean: NaN, ci95: NaN, n };
  const mean = values.reduce((a, b) => a + b, 0) / n;
  if (n < 2) return { mean, ci95: NaN, n };
  const variance = values.reduce((a, v) => a + (v - mean) ** 2, 0) / (n - 1);
  return { mean, ci95: (T95[n - 1] ?? 1.96) * Math.sqrt(variance / n), n };
}
