// Small summaries for the report.

/** Nearest-rank percentile (q in [0, 1]) of unsorted values; NaN when empty. */
export function percentile(values: readonly number[], q: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

/** max / mean of the counts (1 = perfectly even); NaN without traffic. */
export function imbalance(counts: readonly number[]): number {
  const total = counts.reduce((a, b) => a + b, 0);
  if (counts.length === 0 || total === 0) return NaN;
  return Math.max(...counts) / (total / counts.length);
}
