// Small engine messages (#8's small-message target): 1 event × 4 blocks of 16 tokens per ZMQ message,
// array-encoded like bench/e2e.ts's frames. A firehose repeats its messages, so they come in pairs
// that cancel out: a store of a fresh 4-block chain, and later its removal. Every message then changes
// the filter (a repeated store alone is a no-op re-offer after the first round), as engine traffic does.
import { encodeBatch } from '../../src/sim';

export const SMALL_BLOCK_SIZE = 16;
export const SMALL_BLOCKS_PER_MESSAGE = 4;

/** `count` messages (even): count / 2 stores of distinct chains, then their removals in the same order. */
export function smallBatches(source: number, count: number): Buffer[] {
  const chains = count / 2;
  const tokensPerChain = SMALL_BLOCKS_PER_MESSAGE * SMALL_BLOCK_SIZE;
  const stores: Buffer[] = [];
  const removals: Buffer[] = [];
  for (let c = 0; c < chains; c++) {
    // Distinct tokens and engine hashes per (source, chain).
    const first = 1 + (source * chains + c) * tokensPerChain;
    const tokenIds = Uint32Array.from({ length: tokensPerChain }, (_, t) => first + t);
    const blockHashes = Array.from({ length: SMALL_BLOCKS_PER_MESSAGE }, (_, b) => BigInt(first + b));
    stores.push(encodeBatch(1.0, [{ type: 'BlockStored', blockHashes, parentBlockHash: null, tokenIds, blockSize: SMALL_BLOCK_SIZE }], 0, { events: 'array' }));
    removals.push(encodeBatch(1.0, [{ type: 'BlockRemoved', blockHashes }], 0, { events: 'array' }));
  }
  return [...stores, ...removals];
}
