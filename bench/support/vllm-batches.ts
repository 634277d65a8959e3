// Realistic vLLM KV event batches (#8): map-encoded events, 16 events × 32 blocks of 16 tokens per
// ZMQ message, 20 % of the events removals of an earlier store. Tokens and engine hashes are random,
// so every chain is new to the pool.
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

export function vllmBatches(seed: number, count: number): VllmBatches {
  const rng = new Rng(seed);
  const next = () => rng.int(2 ** 32);
  const hash = () => (BigInt(next()) << 32n) | BigInt(next());
  const canonicalSeed = saltSeed(null, null);
  const payloads: Buffer[] = [];
  const markers: bigint[] = [];
  const removable: bigint[][] = [];
  for (let m = 0; m < count; m++) {
    const events: SimEvent[] = [];
    let marker: bigint | undefined;
    for (let e = 0; e < EVENTS_PER_MESSAGE; e++) {
      if (removable.length > 0 && next() % 5 === 0) {
        events.push({ type: 'BlockRemoved', blockHashes: removable.shift()! });
        continue;
      }
      const blockHashes = Array.from({ length: BLOCKS_PER_EVENT }, hash);
      const tokenIds = new Uint32Array(BLOCKS_PER_EVENT * BLOCK_SIZE);
      for (let t = 0; t < tokenIds.length; t++) tokenIds[t] = next() % VOCABULARY;
      if (marker === undefined) marker = sequenceHashes(tokenIds, BLOCK_SIZE, false, canonicalSeed)[BLOCKS_PER_EVENT - 1];
      else removable.push(blockHashes);
      events.push({ type: 'BlockStored', blockHashes, parentBlockHash: null, tokenIds, blockSize: BLOCK_SIZE });
    }
    payloads.push(encodeBatch(1_700_000_000 + m, events, 0, { events: 'map' }));
    // A message of removals only (p = 0.2^16) has no marker; it repeats the previous one.
    markers.push(marker ?? markers[m - 1] ?? 0n);
  }
  return { payloads, markers };
}
