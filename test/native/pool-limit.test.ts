// The per-pool tracked-block bound (limits.maxTrackedBlocksPerPool): lineage entries over all sources
// of a pool never pass maxTrackedBlocks; a store that would is rejected whole (TrackedBlockLimit),
// counted, and leaves the state untouched; removals make room again. An apply reports what the pool
// tracks and what its tables take (the pool actor's gauges).
import { PoolEventBatch, PoolFilterState } from '../../src/native';
import { MAX_TRACKED_BLOCKS_PER_POOL } from '../../src/config/limits';
import { expectThrows } from './hashing.helpers';
import { checkPoolMemoryAccounting } from '../support/native-testing';
import { rootPromptBatches } from '../support/packed';

const SEED = 0x5deece66d1b54a33n;

describe('tracked-block limit', () => {
  test('a store that would pass the limit is rejected whole, whatever the source, and removals make room', () => {
    const pool = new PoolFilterState({ bucketCount: 1024, seed: SEED, maxTrackedBlocks: 6 });
    expect(pool.store(1n, 0, null, null, [1n, 2n, 3n, 4n], [11n, 12n, 13n, 14n])).toBeNull();
    pool.drain();
    const words = pool.words();
    // The bound is per pool: another worker's blocks count against the same 6.
    expect(pool.store(2n, 0, null, null, [21n, 22n, 23n], [31n, 32n, 33n])).toBe('TrackedBlockLimit');
    expect(pool.words()).toEqual(words);
    expect(pool.owners(31n)).toBe(0);
    expect(pool.stats()).toMatchObject({ lineageEntries: 4, ownedHashes: 4, sourceCount: 1, trackedBlockLimitRejections: 1, maxTrackedBlocks: 6 });
    // Exactly up to the limit is fine, and re-offering blocks already tracked adds nothing.
    expect(pool.store(2n, 0, null, null, [21n, 22n], [31n, 32n])).toBeNull();
    expect(pool.store(1n, 0, null, null, [1n, 2n], [11n, 12n])).toBeNull();
    expect(pool.store(2n, 0, 22n, null, [23n], [33n])).toBe('TrackedBlockLimit');
    expect(pool.stats()).toMatchObject({ lineageEntries: 6, sourceCount: 2, trackedBlockLimitRejections: 2 });
    // Removals free room: the rejected continuation is accepted now.
    expect(pool.remove(1n, 0, [4n, 3n])).toBeNull();
    expect(pool.store(2n, 0, 22n, null, [23n], [33n])).toBeNull();
    expect(pool.stats()).toMatchObject({ lineageEntries: 5, trackedBlockLimitRejections: 2 });
  });

  test('in a packed batch only the event that would pass the limit fails', () => {
    const pool = new PoolFilterState({ bucketCount: 1024, seed: SEED, maxTrackedBlocks: 3 });
    const batch = new PoolEventBatch()
      .addStored(1n, 0, null, null, [1n, 2n], [11n, 12n])
      .addStored(1n, 1, null, null, [3n, 4n], [13n, 14n])
      .addRemoved(1n, 0, [2n])
      .addStored(1n, 1, null, null, [3n, 4n], [13n, 14n]);
    const result = pool.apply(batch);
    expect(result.outcomes).toEqual([null, 'TrackedBlockLimit', null, null]);
    expect(pool.stats()).toMatchObject({ lineageEntries: 3, trackedBlockLimitRejections: 1 });
    // The apply reports the tracked blocks it left (the pool actor's gauge), as stats() does.
    expect(result.trackedBlocks).toBe(3);
  });

  test('sync and async applies report the tracked blocks after the batch', async () => {
    const pool = new PoolFilterState({ bucketCount: 1024, seed: SEED });
    const stores = new PoolEventBatch().addStored(1n, 0, null, null, [1n, 2n, 3n], [11n, 12n, 13n]);
    const { meta, words } = stores.packed();
    expect(pool.applyPacked(meta, words).trackedBlocks).toBe(3);
    const more = new PoolEventBatch().addStored(2n, 0, null, null, [5n, 6n], [15n, 16n]).addRemoved(1n, 0, [3n]);
    expect((await pool.applyAsync(more)).trackedBlocks).toBe(4);
    expect(pool.stats().lineageEntries).toBe(4);
  });

  test("applies report the bytes of the state's tables after the batch (the pool's state-bytes gauge)", async () => {
    const bucketCount = 1 << 16;
    const pool = new PoolFilterState({ bucketCount, seed: SEED });
    const empty = pool.apply(new PoolEventBatch()).stateBytes;
    // The filter's words are there from the start.
    expect(empty).toBeGreaterThanOrEqual(8 * bucketCount);
    // 200 k blocks over 4 sources in 16-block root prompts: the owner and lineage tables grow by at
    // least their 8-byte keys per block and at most a few times the ~30 B a block costs at rest.
    const blocks = 200_000;
    let last = empty;
    for (const batch of rootPromptBatches(blocks, 4)) last = (await pool.applyAsync(batch)).stateBytes;
    expect(pool.stats().lineageEntries).toBe(blocks);
    expect(last - empty).toBeGreaterThan(16 * blocks);
    expect(last - empty).toBeLessThan(120 * blocks);
  });

  test('the state bytes are counted from the sources an apply touched, and equal a count of every table', () => {
    // 300 sources: one growing through many table sizes, the others created and dropped again.
    const r = checkPoolMemoryAccounting(300, 60_000);
    expect(r.checks).toBe(60_000);
    expect(r.clears).toBeGreaterThan(1000);
    expect(r.sourceCount).toBeGreaterThan(100);
    // ~250 k blocks in the growing source: its table went through the mapped sizes, drains included.
    expect(r.maxBytes).toBeGreaterThan(8 << 20);
  });

  test('without the option a pool takes the largest limit; bad limits are refused', () => {
    expect(new PoolFilterState({ bucketCount: 64 }).stats().maxTrackedBlocks).toBe(MAX_TRACKED_BLOCKS_PER_POOL);
    expectThrows(() => new PoolFilterState({ bucketCount: 64, maxTrackedBlocks: 0 }), 'RangeError');
    expectThrows(() => new PoolFilterState({ bucketCount: 64, maxTrackedBlocks: MAX_TRACKED_BLOCKS_PER_POOL + 1 }), 'RangeError');
    expectThrows(() => new PoolFilterState({ bucketCount: 64, maxTrackedBlocks: 1.5 }), 'RangeError');
  });
});
