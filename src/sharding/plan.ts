// Which pools a relay shard claims, keeps and releases. Pure.
//
// Pools go to shards by rendezvous (highest-random-weight) hashing: each pool is served by the live
// shard with the highest hash of (shard id, pool key). Every shard computes the same answer from
// the same live set without talking to the others, a joining shard takes exactly the pools for
// which it now scores highest (about 1/n of them, and nothing moves between the other shards), and
// a dead shard's pools spread evenly over the survivors. The claim itself is an etcd key per pool
// created only if absent, under the claiming shard's lease, so a pool has at most one owner even
// while shards briefly disagree about the live set; a shard releases a pool (after it stopped
// serving it) when another live shard scores higher, and that shard then claims it.
import { createHash } from 'crypto';

export interface ShardPlanInput {
  self: string;
  /** Shard ids with a live entry in etcd (self included once its entry is visible). */
  live: ReadonlySet<string>;
  /** Pool keys of the deployment. */
  pools: readonly string[];
  /** Pool key → id of the shard holding its claim. */
  owners: ReadonlyMap<string, string>;
}

export interface ShardPlan {
  /** Unclaimed pools this shard should claim. */
  claim: string[];
  /** Pools this shard holds and should hand over (another shard scores higher, or the pool is gone). */
  release: string[];
  /** Pools this shard holds and keeps. */
  keep: string[];
}

export function rendezvousScore(shardId: string, poolKey: string): bigint {
  return createHash('sha256').update(shardId).update('\0').update(poolKey).digest().readBigUInt64BE(0);
}

/** The live shard that should serve `poolKey` (ties, practically impossible, go to the smaller id). */
export function preferredShard(poolKey: string, live: Iterable<string>): string | undefined {
  let best: string | undefined;
  let bestScore = -1n;
  for (const shard of live) {
    const score = rendezvousScore(shard, poolKey);
    if (score > bestScore || (score === bestScore && best !== undefined && shard < best)) {
      best = shard;
      bestScore = score;
    }
  }
  return best;
}

export function planShard(input: ShardPlanInput): ShardPlan {
  const plan: ShardPlan = { claim: [], release: [], keep: [] };
  // Until this shard sees its own entry it is not part of the live set others compute with.
  const joined = input.live.has(input.self);
  const inDeployment = new Set(input.pools);
  for (const pool of input.pools) {
    const owner = input.owners.get(pool);
    const preferred = joined ? preferredShard(pool, input.live) : undefined;
    if (owner === input.self) {
      (preferred === undefined || preferred === input.self ? plan.keep : plan.release).push(pool);
    } else if (owner === undefined && preferred === input.self) {
      plan.claim.push(pool);
    }
  }
  for (const [pool, owner] of input.owners) if (owner === input.self && !inDeployment.has(pool)) plan.release.push(pool);
  return plan;
}
