// Realistic vLLM KV event batches (#8): map-encoded events, 16 events × 32 blocks of 16 tokens per
// ZMQ message, 20 % of the events removals of an earlier store. Tokens and engine hashes are random,
// so every chain is new to the pool. Besides that growing mix, the shape of engines whose KV caches
// are full: every store evicts as many blocks, the oldest the source stored (equilibrium), so the
// pool keeps the size a pre-fill gave it and its tables do not grow.
import { saltSeed, sequenceHashes } from '../../src/native';
import { encodeBatch, type SimEvent } from '../../src/sim';
import { Rng } from '../../src/sim/rng';

export const BLOCK_SIZE = 16;
export const EVENTS_PER_MESSAGE = 16;
export const BLOCKS_PER_EVENT = 32;
export const BLOCKS_PER_MESSAGE = EVENTS_PER_MESSAGE * BLOCKS_PER_EVENT;
/** Token ids below Qwen2's vocabulary size. */
const VOCABULARY = 152_064;

export interface VllmBatches {
  payloads: Buffer[];
  /**
   * Per message, the canonical sequence hash (no LoRA salt) of the last block of its first store:
   * a delta showing it carries the message. Markers are never removed later, so a delta that also
   * carries a later message still shows them.
   */
  markers: bigint[];
}

/**
 * What a batch set stores and removes. growing: random engine block ids, 20 % of the events remove an
 * earlier store of the same set, so the pool grows by the rest. The other two number a source's
 * blocks in the order it stores them (numberedBlock), so that a batch set built apart from the
 * earlier ones (fresh-batches.ts builds chunks on worker threads) can evict their blocks: prefill
 * stores blocks from `firstStored` on; equilibrium alternates a store of the next BLOCKS_PER_EVENT
 * blocks from `firstStored` on with a removal of the next BLOCKS_PER_EVENT from `firstEvicted` on, so
 * removals match stores block for block. Tokens stay random either way: every chain is new to the pool.
 */
export type Mix = { kind: 'growing' } | { kind: 'prefill'; source: number; firstStored: number } | { kind: 'equilibrium'; source: number; firstStored: number; firstEvicted: number };

/** How a row's note names a mix's removals. */
export const REMOVALS: Record<'growing' | 'equilibrium', string> = {
  growing: '20 % removals',
  equilibrium: "every other event a removal of the source's 32 oldest blocks",
};

/** Engine block id of the `index`-th block source `source` stored: a range of its own, apart from random ids. */
export function numberedBlock(source: number, index: number): bigint {
  return (BigInt(0x7e00_0000 + source) << 32n) | BigInt(index);
}

export function vllmBatches(seed: number, count: number, mix: Mix = { kind: 'growing' }): VllmBatches {
  const rng = new Rng(seed);
  const next = () => rng.int(2 ** 32);
  const hash = () => (BigInt(next()) << 32n) | BigInt(next());
  const canonicalSeed = saltSeed(null, null);
  const payloads: Buffer[] = [];
  const markers: bigint[] = [];
  const removable: bigint[][] = [];
  let stored = mix.kind === 'growing' ? 0 : mix.firstStored;
  let evicted = mix.kind === 'equilibrium' ? mix.firstEvicted : 0;
  const numbered = (source: number, first: number): bigint[] => Array.from({ length: BLOCKS_PER_EVENT }, (_, i) => numberedBlock(source, first + i));
  for (let m = 0; m < count; m++) {
    const events: SimEvent[] = [];
    let marker: bigint | undefined;
    for (let e = 0; e < EVENTS_PER_MESSAGE; e++) {
      if (mix.kind === 'equilibrium' && e % 2 === 1) {
        events.push({ type: 'BlockRemoved', blockHashes: numbered(mix.source, evicted) });
        evicted += BLOCKS_PER_EVENT;
        continue;
      }
      if (mix.kind === 'growing' && removable.length > 0 && next() % 5 === 0) {
        events.push({ type: 'BlockRemoved', blockHashes: removable.shift()! });
        continue;
      }
      const blockHashes = mix.kind === 'growing' ? Array.from({ length: BLOCKS_PER_EVENT }, hash) : numbered(mix.source, stored);
      stored += BLOCKS_PER_EVENT;
      const tokenIds = new Uint32Array(BLOCKS_PER_EVENT * BLOCK_SIZE);
      for (let t = 0; t < tokenIds.length; t++) tokenIds[t] = next() % VOCABULARY;
      if (marker === undefined) marker = sequenceHashes(tokenIds, BLOCK_SIZE, false, canonicalSeed)[BLOCKS_PER_EVENT - 1];
      else if (mix.kind === 'growing') removable.push(blockHashes);
      events.push({ type: 'BlockStored', blockHashes, parentBlockHash: null, tokenIds, blockSize: BLOCK_SIZE });
    }
    payloads.push(encodeBatch(1_700_000_000 + m, events, 0, { events: 'map' }));
    // A message of removals only (p = 0.2^16) has no marker; it repeats the previous one.
    markers.push(marker ?? markers[m - 1] ?? 0n);
  }
  return { payloads, markers };
}
