// Packed apply batches (packed_batch.h layout) read back into plain events, and the canonical block
// hashes a stored event's tokens must have, for tests that check what ingest hands the pool.
import { relayAddon } from '../../src/native/addon';
import { blockHashes, EngineBatchDecoder, META_STRIDE, packedEventWords, packedKind, PoolEventBatch, saltSeed } from '../../src/native';
import { PackedBurst } from '../../src/ingest/burst';
import type { PackedEngineEvents } from '../../src/ingest/types';
import { encodeBatch, type EventEncoding, type SimEvent } from '../../src/sim/encode';

const addon = relayAddon();

export type UnpackedEvent =
  | { kind: 'stored'; parentHash: bigint | null; blockHashes: bigint[]; tokensHashes: bigint[] }
  | { kind: 'removed'; blockHashes: bigint[] }
  | { kind: 'cleared' };

export type SourcedEvent = UnpackedEvent & { workerId: bigint; dpRank: number };

const { meta: AT, flag } = addon.packedBatchLayout;

export function unpackEvents(meta: Uint32Array, words: BigUint64Array): { events: SourcedEvent[]; stride: number } {
  const events: SourcedEvent[] = [];
  let w = 0;
  for (let at = 0; at < meta.length; at += META_STRIDE) {
    const kind = packedKind(meta, at);
    const count = meta[at + AT.blockCount];
    const source = { workerId: words[w], dpRank: meta[at + AT.dpRank] };
    const next = w + packedEventWords(meta, at);
    let p = w + 1;
    if (kind === 'stored') {
      const parentHash = meta[at + AT.flags] & flag.parent ? words[p++] : null;
      const ids = Array.from(words.subarray(p, p + count));
      const hashes = Array.from(words.subarray(p + count, p + 2 * count));
      events.push({ ...source, kind, parentHash, blockHashes: ids, tokensHashes: hashes });
    } else if (kind === 'removed') {
      events.push({ ...source, kind, blockHashes: Array.from(words.subarray(p, p + count)) });
    } else {
      events.push({ ...source, kind });
    }
    w = next;
  }
  if (w !== words.length) throw new Error(`packed words: ${words.length}, events use ${w}`);
  return { events, stride: META_STRIDE };
}

/** The canonical hashes of a stored event's complete blocks (hashing-ckf-cbi1.md §1.3): tokens salted by the LoRA name. */
export function tokensHashes(
  tokens: readonly number[] | Uint32Array,
  blockSize: number,
  loraName: string | null = null,
  eagle = false,
  mmHashes?: (bigint[] | null)[],
): bigint[] {
  return Array.from(blockHashes(Uint32Array.from(tokens), blockSize, eagle, saltSeed(null, loraName), mmHashes));
}

export interface PackOptions {
  kvBlockSize: number;
  eagle?: boolean;
  dpRank?: number;
  sequence?: bigint;
  encoding?: EventEncoding;
}

/**
 * One engine batch as ingest hands it to the sink: the events msgpack-encoded as vLLM sends them,
 * then decoded by the production decoder for a worker with ranks 0..15.
 */
export function packEngineBatch(workerId: bigint, events: readonly SimEvent[], opts: PackOptions): PackedEngineEvents {
  const dpRank = opts.dpRank ?? 0;
  // The pool actor's tests pack batches larger than one engine message may be (ingest's bounds are
  // tested in test/ingest and test/chaos/hostile-engines.test.ts).
  const decoder = new EngineBatchDecoder({ workerId, kvBlockSize: opts.kvBlockSize, eagle: opts.eagle ?? false, dpStartRank: 0, dpSize: 16, maxBlocksPerEvent: 1 << 20, maxMessageWords: 1 << 24 });
  const burst = new PackedBurst(decoder, workerId);
  burst.add(opts.sequence ?? 0n, encodeBatch(0, events, dpRank, { events: opts.encoding ?? 'map' }), dpRank);
  return burst.view(false);
}

/**
 * `blocks` blocks of 16-block root prompts (ids 1.., tokens hashes id × 7919), round robin over
 * workers 1..`sources`, 256 prompts to a batch: a pool's tables growing as engines fill them.
 */
export function* rootPromptBatches(blocks: number, sources: number): Generator<PoolEventBatch> {
  for (let done = 0; done < blocks; ) {
    const batch = new PoolEventBatch();
    for (let e = 0; e < 256 && done < blocks; e++, done += 16) {
      const ids = Array.from({ length: 16 }, (_, i) => BigInt(done + i + 1));
      batch.addStored(BigInt(1 + ((done / 16) % sources)), 0, null, null, ids, ids.map((id) => id * 7919n));
    }
    yield batch;
  }
}
