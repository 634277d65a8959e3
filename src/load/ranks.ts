// Maps a worker's parsed usage samples onto its declared data-parallel ranks, and usage onto blocks.
import type { UsageSample } from './prometheus';

/** Usage fraction (0..1) per absolute rank of one worker. */
export type RankUsage = ReadonlyMap<number, number>;

/**
 * Samples count only for declared ranks [dpStartRank, dpStartRank + dpSize) and only with a usage in
 * 0..1. An unlabelled sample stands for the rank of a single-rank worker. A rank with more than one
 * sample is ambiguous and stays unobserved rather than picking one.
 */
export function usageByRank(samples: readonly UsageSample[], dpStartRank: number, dpSize: number): Map<number, number> {
  const byRank = new Map<number, number[]>();
  for (const s of samples) {
    const rank = s.engine === undefined ? (dpSize === 1 ? dpStartRank : undefined) : parseRank(s.engine);
    if (rank === undefined || rank < dpStartRank || rank >= dpStartRank + dpSize) continue;
    if (!(s.value >= 0 && s.value <= 1)) continue;
    byRank.set(rank, [...(byRank.get(rank) ?? []), s.value]);
  }
  const usage = new Map<number, number>();
  for (const [rank, values] of byRank) if (values.length === 1) usage.set(rank, values[0]);
  return usage;
}

function parseRank(label: string): number | undefined {
  return /^\d{1,10}$/.test(label) ? Number(label) : undefined;
}

/** kv_used_blocks of one rank = round(usage × capacity). */
export function usedBlocks(usage: number, totalKvBlocks: number): bigint {
  return BigInt(Math.round(usage * totalKvBlocks));
}
