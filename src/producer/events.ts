// Engine KV events → pool-state events (hashing-ckf-cbi1.md §1.3-§1.4, §4.3; relay-config.md).
// Canonical hashing input: each stored block's tokens hashed with the pool's query semantics and the
// event's lora_name as salt. The engine's block hashes stay external ids (lineage and removals).
import type { EngineKvEvent, SourceKey } from '../ingest/types';
import { blockHashes, saltSeed, type PoolEvent } from '../native';

export interface PoolSemantics {
  kvBlockSize: number;
  eagle: boolean;
}

export type Conversion = { event: PoolEvent } | { dropped: 'block_size' | 'no_complete_block' };

export function toPoolEvent(source: SourceKey, ev: EngineKvEvent, semantics: PoolSemantics, seeds: SaltCache): Conversion {
  switch (ev.kind) {
    case 'removed':
      return { event: { kind: 'removed', workerId: source.workerId, dpRank: source.dpRank, blockHashes: ev.blockHashes } };
    case 'cleared':
      return { event: { kind: 'cleared', workerId: source.workerId, dpRank: source.dpRank } };
    case 'stored': {
      if (ev.blockSize !== semantics.kvBlockSize) return { dropped: 'block_size' };
      const native = blockHashes(ev.tokenIds, semantics.kvBlockSize, semantics.eagle, seeds.seed(ev.loraName), ev.mmHashes);
      // The addon allocates in the main realm; under a vm realm (jest) the wrapper's instanceof
      // check fails, so such an array is re-wrapped (never in a plain process).
      const hashes = native instanceof BigUint64Array ? native : BigUint64Array.from(native);
      // Too few tokens for some blocks: the event stops at the first incomplete block, like Dynamo.
      const count = Math.min(hashes.length, ev.blockHashes.length);
      if (count === 0) return { dropped: 'no_complete_block' };
      return {
        event: {
          kind: 'stored',
          workerId: source.workerId,
          dpRank: source.dpRank,
          parentHash: ev.parentBlockHash,
          blockHashes: ev.blockHashes.length === count ? ev.blockHashes : ev.blockHashes.slice(0, count),
          tokensHashes: hashes.length === count ? hashes : hashes.subarray(0, count),
        },
      };
    }
  }
}

/** Block-hash seeds per LoRA name (no cache namespace on engine events). */
export class SaltCache {
  private readonly seeds = new Map<string, bigint>();

  seed(loraName: string | null): bigint {
    const key = loraName ?? '';
    const known = this.seeds.get(key);
    if (known !== undefined) return known;
    const seed = saltSeed(null, loraName);
    this.seeds.set(key, seed);
    return seed;
  }
}
