// Token hashing (hashing-ckf-cbi1.md §1) and the stateless CKF helpers (§2) over the native core.
// Every function validates its arguments natively: TypeError for wrong types, RangeError for bad
// values (kvBlockSize 0 included), Error with `code` for domain errors.
import type { CkfPrepared, HashBatchResult, MmHashList } from '../../binding';
import { coreAddon } from './addon';

const addon = coreAddon();

export type { CkfPrepared, HashBatchResult, MmHashList };

/** XXH3_SEED = CHAIN_XXH3_SEED: the chain seed, and the block seed when there is no salt. */
export const XXH3_SEED = 1337n;

export function xxh3(data: Uint8Array, seed: bigint): bigint {
  return addon.xxh3(data, seed);
}

/** Block-hash seed of a request: compute_salt_hash(cache_namespace, lora_name); "" counts as absent. */
export function saltSeed(cacheNamespace?: string | null, loraName?: string | null): bigint {
  return addon.saltSeed(cacheNamespace, loraName);
}

/** Complete-block hashes of `tokens` (the partial last block is not hashed); RangeError above nativeLimits.maxSyncHashInputs tokens. */
export function blockHashes(
  tokens: Uint32Array,
  kvBlockSize: number,
  eagle: boolean,
  seed: bigint,
  mmHashes?: MmHashList | null,
): BigUint64Array {
  return addon.blockHashes(tokens, kvBlockSize, eagle, seed, mmHashes);
}

/** Canonical sequence hashes of `tokens` (block hashes chained with seed 1337) in one call; bounded like blockHashes. */
export function sequenceHashes(
  tokens: Uint32Array,
  kvBlockSize: number,
  eagle: boolean,
  seed: bigint,
  mmHashes?: MmHashList | null,
): BigUint64Array {
  return addon.sequenceHashes(tokens, kvBlockSize, eagle, seed, mmHashes);
}

/** compute_seq_hash_for_block: seq[0] = block[0], seq[i] = xxh3(LE64(seq[i-1]) ++ LE64(block[i]), 1337). */
export function sequenceHashesFromBlocks(blocks: BigUint64Array | readonly bigint[]): BigUint64Array {
  return addon.sequenceHashesFromBlocks(blocks instanceof BigUint64Array ? blocks : BigUint64Array.from(blocks));
}

/** Prompts packed for the batch calls: prompt i is tokens[promptOffsets[i] .. promptOffsets[i+1]). */
export interface PromptBatch {
  tokens: Uint32Array;
  promptOffsets: Uint32Array;
}

export function packPrompts(prompts: readonly Uint32Array[]): PromptBatch {
  const promptOffsets = new Uint32Array(prompts.length + 1);
  for (let i = 0; i < prompts.length; i++) promptOffsets[i + 1] = promptOffsets[i] + prompts[i].length;
  const tokens = new Uint32Array(promptOffsets[prompts.length]);
  prompts.forEach((p, i) => tokens.set(p, promptOffsets[i]));
  return { tokens, promptOffsets };
}

/** One pool's hashing semantics; all prompts of a batch share them. */
export interface HashBatchOptions {
  kvBlockSize: number;
  eagle?: boolean;
  /** Block-hash seed (saltSeed(...)); default 1337 (no salt). */
  seed?: bigint;
  /** true: canonical sequence hashes; false (default): block hashes. */
  sequence?: boolean;
}

export function hashBatch(batch: PromptBatch, opts: HashBatchOptions): HashBatchResult {
  return addon.hashBatch(
    batch.tokens,
    batch.promptOffsets,
    opts.kvBlockSize,
    opts.eagle ?? false,
    opts.seed ?? XXH3_SEED,
    opts.sequence ?? false,
  );
}

/** hashBatch on a worker thread, over a copy of `batch` taken before it returns (free to reuse at once). */
export function hashBatchAsync(batch: PromptBatch, opts: HashBatchOptions): Promise<HashBatchResult> {
  return addon.hashBatchAsync(
    batch.tokens,
    batch.promptOffsets,
    opts.kvBlockSize,
    opts.eagle ?? false,
    opts.seed ?? XXH3_SEED,
    opts.sequence ?? false,
  );
}

/** Per-prompt views (no copies) of a batch result. */
export function splitBatch(result: HashBatchResult): BigUint64Array[] {
  const out: BigUint64Array[] = [];
  for (let i = 0; i + 1 < result.blockOffsets.length; i++) {
    out.push(result.hashes.subarray(result.blockOffsets[i], result.blockOffsets[i + 1]));
  }
  return out;
}

/** pad_value_for_mm_hash: the token id sglang substitutes for an mm placeholder. */
export function padValueForMmHash(mmHash: bigint): number {
  return addon.padValueForMmHash(mmHash);
}

/** hash_mm_identifier: null for "", the first 16 hex digits of a 64-hex id, else xxh3(utf8, 0). */
export function hashMmIdentifier(identifier: string): bigint | null {
  return addon.hashMmIdentifier(identifier);
}

// --- CKF helpers (consumer-side probes of replicas) ---------------------------------------------

/** Error codes of ckfBucketCount. */
export type CkfBuildErrorCode = 'ExpectedCapacityZero' | 'CapacityOverflow';

/** bucket_count(expected blocks): next_pow2(max((5n + 15) / 16, 2)). */
export function ckfBucketCount(expectedBlocks: bigint | number): number {
  return addon.ckfBucketCount(expectedBlocks);
}

/** prepare(): fingerprint (1..65535) and the two candidate buckets of a canonical sequence hash. */
export function ckfPrepare(hash: bigint, bucketCount: number, seed: bigint): CkfPrepared {
  return addon.ckfPrepare(hash, bucketCount, seed);
}

/** Whether one of the bucket word's four 16-bit slots equals `fingerprint`. */
export function bucketContains(word: bigint, fingerprint: number): boolean {
  return addon.bucketContains(word, fingerprint);
}

/** Probe of a replica's words: true when bucket a or b holds the hash's fingerprint. */
export function filterContains(words: BigUint64Array, hash: bigint, seed: bigint): boolean {
  const p = ckfPrepare(hash, words.length, seed);
  return bucketContains(words[p.bucketA], p.fingerprint) || bucketContains(words[p.bucketB], p.fingerprint);
}
