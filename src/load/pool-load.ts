// Pool load of one window (identity-topology-load.md §4.1, wire-contract.md §6.4). Pure.
//
// Expected ranks are every declared rank of the pool's workers. A rank is observed when its worker's
// last scrape reported a usage for it and its capacity is known: without a capacity, usage cannot
// become blocks, and counting it as 0 would read as zero load. Sums are published only for complete
// coverage; otherwise the wire carries 0 with observed < expected (or zero total capacity).
import type { KvPoolLoadEntry } from '../wire/types';
import type { LoadPool } from './inputs';
import type { UsageObservations } from './scraper';
import { usedBlocks } from './ranks';
import { saturateU32, saturatingSum } from './saturating';

export function buildPoolLoad(pools: readonly LoadPool[], usage: UsageObservations): KvPoolLoadEntry[] {
  return pools.map((pool) => {
    let expected = 0;
    const capacities: bigint[] = [];
    const used: bigint[] = [];
    for (const w of pool.workers) {
      expected += w.dpSize;
      const capacity = w.totalKvBlocks ?? 0;
      if (capacity === 0) continue;
      const ranks = usage.get(w.id);
      for (let rank = w.dpStartRank; rank < w.dpStartRank + w.dpSize; rank++) {
        capacities.push(BigInt(capacity));
        const u = ranks?.get(rank);
        if (u !== undefined) used.push(usedBlocks(u, capacity));
      }
    }
    const complete = (n: number): boolean => expected > 0 && n === expected;
    return {
      producer: pool.producer,
      kvUsedBlocks: complete(used.length) ? saturatingSum(used) : 0n,
      totalKvBlocks: complete(capacities.length) ? saturatingSum(capacities) : 0n,
      kvObservedRanks: saturateU32(used.length),
      kvExpectedRanks: saturateU32(expected),
    };
  });
}
