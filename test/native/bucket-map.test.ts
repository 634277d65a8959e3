// native/core/bucket_map.h (bucketed cuckoo map: two candidate buckets per key, a stash, growth by an
// incremental drain into the next table) checked operation by operation against std::unordered_map in
// native code, for both layouts: 4-byte values (the owner table: 5 slots, used mask, overflow counts)
// and 8-byte values (the lineage tables: 4 packed slots). Seeds and key spaces make it grow, shrink,
// drain while keys are found, inserted and erased in both tables, walk cuckoo paths, fill its stash,
// migrate under a new seed, rebuild mid-drain and finish a drain for a large Reserve. The pool vectors
// (pool.test.ts, pool-plan.test.ts, ckf.test.ts) check it through the owner counts and lineage they observe.
import { attackBucketMap, checkBucketMap, checkBucketMapGrowth, checkBucketMapStagger, checkBucketMapWaitsForSuccessor, checkLineageStagger } from '../support/native-testing';
import { expectThrows } from './hashing.helpers';

describe.each([4, 8] as const)('BucketMap with %p-byte values vs std::unordered_map', (valueBytes) => {
  it.each([
    [1n, 400_000, 20_000],
    [2n, 400_000, 3_000],
    [0xdeadbeefn, 200_000, 64],
    [42n, 1_000_000, 200_000],
  ])('seed %p: %p operations over %p keys', (seed, operations, keySpace) => {
    const run = checkBucketMap(seed, operations, keySpace, valueBytes);
    expect(run.maxSize).toBeGreaterThan(Math.min(keySpace, operations) / 4);
    expect(run.growths).toBeGreaterThan(0);
    expect(run.secondBucket).toBeGreaterThan(0);
    expect(run.paths).toBeGreaterThan(0);
    expect(run.pathMoves).toBeGreaterThanOrEqual(run.paths);
    // Drains ran under the operations and the full checks: keys found, inserted and erased in both tables.
    expect(run.migrated).toBeGreaterThan(0);
    expect(run.migratingChecks).toBeGreaterThan(0);
    expect(run.oldHits).toBeGreaterThan(0);
    expect(run.newHits).toBeGreaterThan(0);
    // A Reserve past the room a drain leaves finished one at once.
    expect(run.finishes).toBeGreaterThan(0);
    // The crafted keys: both candidate buckets full, so the stash fills; a fresh map migrates to another
    // seed, a map mid-drain rebuilds under one.
    expect(run.maxStash).toBeGreaterThan(0);
    expect(run.reseeds).toBeGreaterThan(0);
    expect(run.rebuilds).toBeGreaterThan(0);
  });

  it('grows from empty to 4 M entries with every operation moving a bounded number of entries', () => {
    const run = checkBucketMapGrowth(valueBytes, 4_000_000);
    expect(run.size).toBe(4_000_000 - run.erased);
    expect(run.growths).toBeGreaterThan(40);
    // Every entry moved several times over the growths (about 1 / (1.29 - 1) = 3.5 times, growing by
    // x1.29), none of it at once: a synchronous rehash would move the whole table (millions) in one
    // insertion.
    expect(run.migrated).toBeGreaterThan(2.5 * run.size);
    expect(run.finishes).toBe(0);
    expect(run.rebuilds).toBe(0);
    expect(run.maxOpMoves).toBeGreaterThan(0);
    expect(run.maxOpMoves).toBeLessThanOrEqual(run.maxMovesPerOp);
    expect(run.maxOpMoves).toBeLessThanOrEqual(64);
  });

  it('takes keys past its load bound while the pages of its successor are not in, and moves at the bound once they are', () => {
    const loads = checkBucketMapWaitsForSuccessor(valueBytes);
    // 0.85 (870/1024) is the load a table moves at; 0.92 (942/1024) how far it waits for the pages.
    expect(loads.populated).toBeCloseTo(870 / 1024, 3);
    expect(loads.held).toBeCloseTo(942 / 1024, 3);
  });
});

describe('BucketMap growth phases', () => {
  // Tables filled in step (a pool's lineage tables, its sources publishing alike) must not all grow,
  // and drain, at once: each drain makes its insertions several times dearer.
  it.each([8, 64])('spread the growths of %p maps filled in step', (maps) => {
    const staggered = checkBucketMapStagger(maps, 40_000, true);
    const inStep = checkBucketMapStagger(maps, 40_000, false);
    expect(inStep.maxTogether).toBe(maps);
    expect(staggered.growths).toBeGreaterThan(5 * maps);
    expect(staggered.maxTogether).toBeLessThanOrEqual(Math.max(2, maps / 8));
  });

  it("give each of a pool's sources its own phase", () => {
    const buckets = checkLineageStagger(8, 30_000);
    expect(buckets).toHaveLength(8);
    // Equal stores over 8 sources: without phases every table would be the same size.
    expect(new Set(buckets).size).toBe(8);
  });
});

describe('BucketMap keyed addressing (HashDoS, issue 26 item 3)', () => {
  // Engine block ids are chosen by a network peer. Against the public seed (before the process
  // secret), 40 batches of 24 ids aimed at one bucket pair each filled the stash and moved the table
  // to another seed 40 times, each an O(n) pass over the table.
  it('ids crafted against the public code and seed spread like random ones', () => {
    const run = attackBucketMap(100_000, 40, 24);
    expect(run.reseeds + run.rebuilds).toBe(0);
    expect(run.maxStash).toBeLessThanOrEqual(2);
  });

  it('checks its arguments', () => {
    expectThrows(() => attackBucketMap(2 ** 25, 1, 1), 'RangeError');
    expectThrows(() => attackBucketMap(1, 2 ** 20, 2), 'RangeError');
  });
});

describe('BucketMap checks', () => {
  it('reject bad arguments with an error, not a crash', () => {
    expectThrows(() => checkBucketMap(1n, 10, 0, 4), 'RangeError');
    expectThrows(() => checkBucketMap(1n, 2 ** 29, 10, 8), 'RangeError');
    expectThrows(() => checkBucketMap(1n, 10, 10, 5 as 4), 'RangeError');
    expectThrows(() => checkBucketMapGrowth(8, 2 ** 27), 'RangeError');
    expectThrows(() => checkBucketMapStagger(0, 10, true), 'RangeError');
    expectThrows(() => checkBucketMapStagger(65, 10, true), 'RangeError');
    expectThrows(() => checkLineageStagger(0, 10), 'RangeError');
    expectThrows(() => checkLineageStagger(8, 2 ** 21), 'RangeError');
  });
});
