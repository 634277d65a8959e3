// Async native calls copy their JS inputs before they are queued (issue #9): the worker thread never
// re-reads caller memory, so changing or reusing the arrays right after the call changes nothing.
import { relayAddon } from '../../src/native/addon';
import {
  encodeSnapshotAsync,
  encodeSnapshotChunks,
  hashBatch,
  hashBatchAsync,
  nativeLimits,
  packPrompts,
  PoolEventBatch,
  PoolFilterState,
} from '../../src/native';

const addon = relayAddon();

const SEED = 0x5deece66d1b54a33n;
const BUCKETS = 4096;

// Enough blocks that the worker is still running when the caller scribbles over its arrays.
function storeBatch(base: bigint, events: number, blocks: number): PoolEventBatch {
  const batch = new PoolEventBatch();
  for (let e = 0; e < events; e++) {
    const ids = Array.from({ length: blocks }, (_, i) => base + BigInt(e * blocks + i));
    batch.addStored(BigInt(1 + (e % 3)), 0, null, null, ids, ids.map((id) => id * 7919n + 13n));
  }
  return batch;
}

function imageOf(pool: PoolFilterState) {
  const { residentCount, ownedHashes, lineageEntries, sourceCount } = pool.stats();
  return { words: pool.words(), residentCount, ownedHashes, lineageEntries, sourceCount };
}

describe('applyBatchAsync applies what was passed, not what the arrays hold later', () => {
  test('overwriting meta and words right after the call (valid other events, then garbage)', async () => {
    const reference = new PoolFilterState({ bucketCount: BUCKETS, seed: SEED });
    const expected = reference.apply(storeBatch(1000n, 64, 32));

    const native = new addon.PoolFilterState(BUCKETS, SEED, 500);
    const { meta, words } = storeBatch(1000n, 64, 32).packed();
    const pending = native.applyBatchAsync(meta, words);
    // Another valid batch in the same memory, then a malformed one (huge block counts, unknown
    // kinds) that would send a re-reading worker far past the end of `words`.
    meta.set(storeBatch(50_000n, 64, 32).packed().meta);
    words.set(storeBatch(50_000n, 64, 32).packed().words);
    meta.fill(0xffff_ffff);
    words.fill(0xdead_beefn);
    const summary = await pending;

    expect(Array.from(summary.errors).every((e) => e === 0)).toBe(true);
    expect(summary.capacityFailures).toBe(expected.capacityFailures);
    expect(native.words()).toEqual(reference.words());
    expect(native.stats()).toMatchObject({ ownedHashes: 64 * 32, lineageEntries: 64 * 32, sourceCount: 3 });
  });

  test('PoolFilterState.applyAsync: the PoolEventBatch is free to reuse at once', async () => {
    const reference = new PoolFilterState({ bucketCount: BUCKETS, seed: SEED });
    reference.apply(storeBatch(1n, 32, 16));
    const pool = new PoolFilterState({ bucketCount: BUCKETS, seed: SEED });
    const batch = storeBatch(1n, 32, 16);
    const pending = pool.applyAsync(batch);
    batch.reset();
    for (let i = 0; i < 32; i++) batch.addRemoved(1n, 0, [1n, 2n, 3n]);
    batch.addCleared(2n, 0);
    const result = await pending;
    expect(result.errorCount).toBe(0);
    expect(imageOf(pool)).toEqual(imageOf(reference));
  });
});

describe('hashBatchAsync hashes what was passed', () => {
  test('changing tokens and prompt offsets right after the call', async () => {
    const prompts = Array.from({ length: 200 }, (_, p) => Uint32Array.from({ length: 16 * (1 + (p % 9)) }, (_, i) => p * 1000 + i));
    const batch = packPrompts(prompts);
    const opts = { kvBlockSize: 16, sequence: true };
    const expected = hashBatch(batch, opts);
    const pending = hashBatchAsync(batch, opts);
    batch.tokens.fill(7);
    // Offsets that no longer fit the tokens: a worker that re-read them would write past `hashes`.
    batch.promptOffsets.fill(0xffff_fff0);
    const result = await pending;
    expect(result.hashes).toEqual(expected.hashes);
    expect(result.blockOffsets).toEqual(expected.blockOffsets);
  });
});

describe('encodeSnapshotAsync copies a SharedArrayBuffer at the call', () => {
  const format = { seed: SEED, bucketCount: 1 << 20 };
  const same = (a: Buffer[], b: Buffer[]) => a.length === b.length && a.every((chunk, i) => chunk.equals(b[i]));

  test('writing the shared words right after the call changes nothing', async () => {
    const shared = new BigUint64Array(new SharedArrayBuffer(format.bucketCount * 8));
    shared.forEach((_, i) => {
      shared[i] = (BigInt(i) << 20n) ^ 3n;
    });
    const expected = encodeSnapshotChunks(format, 1n, 2n, shared);
    const pending = encodeSnapshotAsync(format, 1n, 2n, shared);
    // What another thread could do to a SharedArrayBuffer while the worker encodes.
    shared.fill(7n);
    expect(same(await pending, expected)).toBe(true);
  });

  test('a shared table above maxSyncFilterWords is refused, not copied on the loop', async () => {
    const bucketCount = nativeLimits.maxSyncFilterWords * 2;
    const shared = new BigUint64Array(new SharedArrayBuffer(bucketCount * 8));
    await expect(encodeSnapshotAsync({ seed: SEED, bucketCount }, 1n, 2n, shared)).rejects.toThrow(RangeError);
    await expect(encodeSnapshotAsync({ seed: SEED, bucketCount }, 1n, 2n, shared)).rejects.toThrow(/SharedArrayBuffer/);
  });
});
