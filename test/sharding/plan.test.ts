// The pool split between relay shards (rendezvous hashing + claims): every pool has one preferred
// live shard; a joining shard takes only the pools it now scores highest for; a dead shard's pools
// spread over the survivors and nothing else moves.
import { planShard, preferredShard } from '../../src/sharding/plan';

const pools = Array.from({ length: 100 }, (_, i) => `pool-${i}`);
const assign = (live: string[]): Map<string, string> => new Map(pools.map((p) => [p, preferredShard(p, live)!]));

test('a joining shard takes a fair share and only moves pools to itself', () => {
  const before = assign(['a', 'b']);
  const after = assign(['a', 'b', 'c']);
  const moved = pools.filter((p) => before.get(p) !== after.get(p));
  expect(moved.every((p) => after.get(p) === 'c')).toBe(true);
  expect(moved.length).toBeGreaterThan(15);
  expect(moved.length).toBeLessThan(55);
});

test('a dead shard’s pools spread over the survivors; the survivors keep theirs', () => {
  const before = assign(['a', 'b', 'c']);
  const after = assign(['a', 'c']);
  for (const p of pools) if (before.get(p) !== 'b') expect(after.get(p)).toBe(before.get(p));
  const orphaned = pools.filter((p) => before.get(p) === 'b');
  expect(new Set(orphaned.map((p) => after.get(p)))).toEqual(new Set(['a', 'c']));
});

test('plan: claim unowned preferred pools, release held pools another live shard prefers, wait for foreign claims', () => {
  const live = new Set(['a', 'b']);
  const mineA = pools.filter((p) => preferredShard(p, live) === 'a');
  const mineB = pools.filter((p) => preferredShard(p, live) === 'b');
  const owners = new Map<string, string>([
    [mineA[0], 'b'], // a claim of b on a pool a prefers: a waits for b to release it
    [mineB[0], 'a'], // a holds a pool b prefers: a releases it
    [mineA[1], 'a'],
    ['gone-pool', 'a'], // no longer in the deployment
  ]);
  const plan = planShard({ self: 'a', live, pools, owners });
  expect(plan.release.sort()).toEqual([mineB[0], 'gone-pool'].sort());
  expect(plan.keep).toEqual([mineA[1]]);
  expect(plan.claim).toEqual(mineA.filter((p) => p !== mineA[0] && p !== mineA[1]));
});

test('plan: a shard not yet in the live set claims nothing and keeps what it holds', () => {
  const plan = planShard({ self: 'a', live: new Set(['b']), pools, owners: new Map([[pools[0], 'a']]) });
  expect(plan).toEqual({ claim: [], release: [], keep: [pools[0]] });
});
