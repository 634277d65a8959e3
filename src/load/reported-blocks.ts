// Usage reported as blocks (Dynamo workers' `kv_used_blocks`, identity-topology-load.md §5.3) turned
// into the usage fractions pool load works with, over each worker's per-rank capacity; merged with
// the scraped usage (a worker reported both ways keeps its reported blocks). Pure.
import type { LoadPool } from './inputs';
import type { UsageObservations } from './scraper';

/** Worker id -> absolute rank -> kv_used_blocks (the latest report). */
export type ReportedBlocks = ReadonlyMap<bigint, ReadonlyMap<number, number>>;

export function withReportedBlocks(usage: UsageObservations, reported: ReportedBlocks, pools: readonly LoadPool[]): UsageObservations {
  if (reported.size === 0) return usage;
  const merged = new Map(usage);
  for (const pool of pools) {
    for (const w of pool.workers) {
      const ranks = reported.get(w.id);
      const capacity = w.totalKvBlocks ?? 0;
      // Without a capacity a report cannot become a fraction: the rank stays unobserved, as a scrape's would.
      if (!ranks || capacity === 0) continue;
      merged.set(w.id, new Map([...ranks].map(([rank, blocks]) => [rank, blocks / capacity])));
    }
  }
  return merged;
}
