// The owner table (native/bucket_map.h: 5-slot cuckoo buckets, two candidates per key, a stash) checked
// operation by operation against std::unordered_map in native code, over seeds and key spaces that make
// it grow, shrink, walk cuckoo paths, fill its stash and rebuild under a new seed. The pool vectors
// (pool.test.ts, pool-plan.test.ts, ckf.test.ts) check it through the owner counts they observe.
import { checkBucketMap } from '../support/native-testing';
import { expectThrows } from './hashing.helpers';

describe('BucketMap (owner table) vs std::unordered_map', () => {
  it.each([
    [1n, 400_000, 20_000],
    [2n, 400_000, 3_000],
    [0xdeadbeefn, 200_000, 64],
    [42n, 1_000_000, 200_000],
  ])('seed %p: %p operations over %p keys', (seed, operations, keySpace) => {
    const run = checkBucketMap(seed, operations, keySpace);
    expect(run.maxSize).toBeGreaterThan(Math.min(keySpace, operations) / 4);
    expect(run.growths).toBeGreaterThan(0);
    expect(run.secondBucket).toBeGreaterThan(0);
    expect(run.paths).toBeGreaterThan(0);
    expect(run.pathMoves).toBeGreaterThanOrEqual(run.paths);
    // The crafted keys: both candidate buckets full, so the stash fills and the map rebuilds in place.
    expect(run.maxStash).toBeGreaterThan(0);
    expect(run.reseeds).toBeGreaterThan(0);
  });

  it('rejects bad arguments with an error, not a crash', () => {
    expectThrows(() => checkBucketMap(1n, 10, 0), 'RangeError');
    expectThrows(() => checkBucketMap(1n, 2 ** 29, 10), 'RangeError');
  });
});
