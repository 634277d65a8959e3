// Synchronous native calls are bounded (issue #9; native/core/native_limits.h, exported as nativeLimits):
// above a bound the call throws a RangeError before touching anything, and the state is unchanged.
import { relayAddon } from '../../src/native/addon';
import {
  blockHashes,
  encodeSnapshotAsync,
  encodeSnapshotChunks,
  hashBatch,
  hashBatchAsync,
  nativeLimits,
  PoolEventBatch,
  PoolFilterState,
  sequenceHashes,
  sequenceHashesFromBlocks,
  xxh3,
} from '../../src/native';
import { expectThrows, thrown } from './hashing.helpers';

const addon = relayAddon();

const SEED = 0x5deece66d1b54a33n;

function snapshotOf(pool: PoolFilterState) {
  return { words: pool.words(), stats: pool.stats() };
}

function seeded(): PoolFilterState {
  const pool = new PoolFilterState({ bucketCount: 1024, seed: SEED });
  expect(pool.store(1n, 0, null, null, [1n, 2n, 3n], [11n, 12n, 13n])).toBeNull();
  return pool;
}

test('the bounds are exported, frozen, and consistent', () => {
  expect(Object.isFrozen(nativeLimits)).toBe(true);
  expect(nativeLimits.maxSyncBatchWords).toBeGreaterThanOrEqual(8192);
  expect(nativeLimits.maxAsyncBatchWords).toBeGreaterThan(nativeLimits.maxSyncBatchWords);
  expect(nativeLimits.maxSyncFilterWords).toBeLessThan(2 ** 24);
});

describe('pool state', () => {
  test('applyBatchInto checks its result arrays before applying anything, and reports what the worker-thread apply does', async () => {
    const pool = seeded();
    const before = snapshotOf(pool);
    const { meta, words } = new PoolEventBatch().addStored(2n, 0, null, null, [100n, 101n], [9n, 10n]).addRemoved(1n, 0, [3n]).packed();
    const native = (pool as unknown as { native: { applyBatchInto(...a: unknown[]): void } }).native;
    const summary = new Float64Array(5);
    expectThrows(() => native.applyBatchInto(meta, words, new Uint8Array(1), summary), 'RangeError');
    expect(thrown(() => native.applyBatchInto(meta, words, new Uint8Array(1), summary)).message).toMatch(/one byte per event \(2\)/);
    expectThrows(() => native.applyBatchInto(meta, words, new Uint8Array(2), new Float64Array(4)), 'RangeError');
    expectThrows(() => native.applyBatchInto(meta, words, new Uint32Array(2), summary), 'TypeError');
    expectThrows(() => native.applyBatchInto(meta, words, new Uint8Array(2), new Float32Array(5)), 'TypeError');
    expectThrows(() => native.applyBatchInto(meta, words), 'TypeError');
    expect(snapshotOf(pool)).toEqual(before);

    const errors = new Uint8Array(4).fill(7);
    native.applyBatchInto(meta, words, errors, summary);
    expect([...errors]).toEqual([0, 0, 7, 7]); // one per event, the rest untouched
    const twin = seeded();
    const r = await twin.applyAsync(new PoolEventBatch().addStored(2n, 0, null, null, [100n, 101n], [9n, 10n]).addRemoved(1n, 0, [3n]));
    expect([...summary]).toEqual([r.capacityFailures, r.unknownRemovals, r.trackedBlocks, r.residentBlocks, r.stateBytes]);
    expect(snapshotOf(pool)).toEqual(snapshotOf(twin));
  });

  test('applyBatchInto above maxSyncBatchWords: RangeError, nothing applied; at the bound it applies', () => {
    const pool = seeded();
    const before = snapshotOf(pool);
    const ids = (n: number, base: bigint) => BigUint64Array.from({ length: n }, (_, i) => base + BigInt(i));
    // One stored event of n blocks takes 1 + 2n words.
    const over = Math.floor((nativeLimits.maxSyncBatchWords - 1) / 2) + 1;
    const big = new PoolEventBatch().addStored(2n, 0, null, null, ids(over, 100n), ids(over, 9_000_000n));
    expectThrows(() => pool.apply(big), 'RangeError');
    expect(thrown(() => pool.apply(big)).message).toMatch(/event batch too large/);
    expect(snapshotOf(pool)).toEqual(before);
    // Events alone (each one word) count too.
    const clears = new PoolEventBatch();
    for (let i = 0; i <= nativeLimits.maxSyncBatchWords; i++) clears.addCleared(BigInt(i + 10), 0);
    expectThrows(() => pool.apply(clears), 'RangeError');
    expect(snapshotOf(pool)).toEqual(before);

    const fits = Math.floor((nativeLimits.maxSyncBatchWords - 1) / 2);
    const ok = new PoolEventBatch().addStored(2n, 0, null, null, ids(fits, 100n), ids(fits, 9_000_000n));
    expect(pool.apply(ok).errorCount).toBe(0);
    expect(pool.stats().ownedHashes).toBe(3 + fits);
  });

  test('store and remove above maxSyncBatchWords ids: RangeError, nothing changed', () => {
    const pool = seeded();
    const before = snapshotOf(pool);
    const n = nativeLimits.maxSyncBatchWords + 1;
    const ids = BigUint64Array.from({ length: n }, (_, i) => BigInt(i + 1));
    expectThrows(() => pool.store(1n, 0, null, null, ids, ids), 'RangeError');
    expectThrows(() => pool.remove(1n, 0, ids), 'RangeError');
    expect(snapshotOf(pool)).toEqual(before);
  });

  test('applyBatchAsync above maxAsyncBatchWords: RangeError before queueing, the pool stays usable', async () => {
    const native = new addon.PoolFilterState(1024, SEED, 500);
    native.store(1n, 0, null, null, BigUint64Array.of(1n), BigUint64Array.of(11n));
    const before = native.words();
    const words = new BigUint64Array(nativeLimits.maxAsyncBatchWords + 1);
    expectThrows(() => native.applyBatchAsync(new Uint32Array([1, 0, 0, 0, 0]), words), 'RangeError');
    // Not left busy: a sync call works and nothing changed.
    expect(native.words()).toEqual(before);
    expect(native.stats().ownedHashes).toBe(1);
  });

  test('words() above maxSyncFilterWords buckets throws; copyWordsAsync copies them', async () => {
    const bucketCount = nativeLimits.maxSyncFilterWords * 2;
    const pool = new PoolFilterState({ bucketCount, seed: SEED });
    expect(pool.store(1n, 0, null, null, [1n], [11n])).toBeNull();
    expectThrows(() => pool.words(), 'RangeError');
    expect(thrown(() => pool.words()).message).toMatch(/copyWordsAsync/);
    const words = await pool.copyWordsAsync();
    expect(words.length).toBe(bucketCount);
    expect(words.some((w) => w !== 0n)).toBe(true);
    expect(pool.stats().ownedHashes).toBe(1);
    pool.close();
  });
});

test('encodeSnapshotChunks above maxSyncFilterWords buckets throws; encodeSnapshotAsync encodes it', async () => {
  const bucketCount = nativeLimits.maxSyncFilterWords * 2;
  const format = { seed: SEED, bucketCount };
  const words = new BigUint64Array(bucketCount).fill(3n);
  expectThrows(() => encodeSnapshotChunks(format, 1n, 2n, words), 'RangeError');
  expect(thrown(() => encodeSnapshotChunks(format, 1n, 2n, words)).message).toMatch(/encodeSnapshotAsync/);
  const chunks = await encodeSnapshotAsync(format, 1n, 2n, words);
  expect(chunks.length).toBeGreaterThan(1);
});

test('synchronous hashing above maxSyncHashInputs: RangeError; hashBatchAsync takes it', async () => {
  const n = nativeLimits.maxSyncHashInputs;
  expect(n).toBeLessThan(nativeLimits.maxAsyncHashInputs);
  const over = new Uint32Array(n + 16);
  expectThrows(() => blockHashes(over, 16, false, 0n), 'RangeError');
  expectThrows(() => sequenceHashes(over, 16, false, 0n), 'RangeError');
  expectThrows(() => xxh3(new Uint8Array(4 * n + 1), 0n), 'RangeError');
  expectThrows(() => sequenceHashesFromBlocks(new BigUint64Array(n + 1)), 'RangeError');
  const batch = { tokens: over, promptOffsets: Uint32Array.of(0, over.length) };
  expectThrows(() => hashBatch(batch, { kvBlockSize: 16 }), 'RangeError');
  const sync = sequenceHashes(over.subarray(0, n), 16, false, 0n);
  const async = await hashBatchAsync(batch, { kvBlockSize: 16, seed: 0n, sequence: true });
  expect(async.hashes.length).toBe(sync.length + 1);
  expect(async.hashes.subarray(0, sync.length)).toEqual(sync);
  // At the bound they run.
  expect(xxh3(new Uint8Array(4 * n), 0n)).toEqual(expect.any(BigInt));
  expect(sequenceHashesFromBlocks(new BigUint64Array(n)).length).toBe(n);
});

test('hashBatch / hashBatchAsync above maxAsyncHashInputs: RangeError', () => {
  const tokens = new Uint32Array(nativeLimits.maxAsyncHashInputs);
  const batch = { tokens, promptOffsets: Uint32Array.of(0, tokens.length) };
  expectThrows(() => hashBatch(batch, { kvBlockSize: 16 }), 'RangeError');
  expectThrows(() => hashBatchAsync(batch, { kvBlockSize: 16 }), 'RangeError');
});
