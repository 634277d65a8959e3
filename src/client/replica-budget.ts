// How much a consumer lets the relays it follows make it hold in pool replicas. A relay's catalog
// decides how many pools there are and how large each one's bucket table is (up to 2^24 buckets,
// 128 MiB, allocated at the snapshot's first chunk), so without a bound one relay could make a
// consumer allocate without limit. Each subscription reserves its table's bytes before it opens;
// a pool that does not fit is not subscribed (an error event says so) until room is freed. One
// budget may be shared by several clients (every shard of a ShardedRelayClient shares one).
import { EventEmitter } from 'events';
import { DEFAULT_CLIENT_MAX_REPLICA_BYTES, DEFAULT_CLIENT_MAX_REPLICA_POOLS } from '../config/defaults';
import type { CatalogPool } from './catalog-plane';

export interface ReplicaBudgetLimits {
  /** Pools replicated at once (default 256). */
  maxPools: number;
  /** Bytes of their bucket tables (bucket count x 8; default 1 GiB). */
  maxBytes: number;
}

export interface ReplicaBudgetUsage {
  pools: number;
  bytes: number;
}

export class ReplicaBudget extends EventEmitter<{ released: [] }> {
  readonly limits: ReplicaBudgetLimits;
  private used: ReplicaBudgetUsage = { pools: 0, bytes: 0 };

  constructor(limits: Partial<ReplicaBudgetLimits> = {}) {
    super();
    this.limits = {
      maxPools: limits.maxPools ?? DEFAULT_CLIENT_MAX_REPLICA_POOLS,
      maxBytes: limits.maxBytes ?? DEFAULT_CLIENT_MAX_REPLICA_BYTES,
    };
    for (const [name, value] of Object.entries(this.limits)) {
      if (!Number.isSafeInteger(value) || value < 1) throw new RangeError(`memoryBudget.${name} must be a positive integer`);
    }
    this.setMaxListeners(0); // one listener per client sharing it
  }

  /** Takes room for one replica of `bytes`; false (nothing taken) when it does not fit. */
  tryReserve(bytes: number): boolean {
    if (this.used.pools + 1 > this.limits.maxPools || this.used.bytes + bytes > this.limits.maxBytes) return false;
    this.used = { pools: this.used.pools + 1, bytes: this.used.bytes + bytes };
    return true;
  }

  /** Gives back what tryReserve(bytes) took; clients waiting for room try again. */
  release(bytes: number): void {
    this.used = { pools: this.used.pools - 1, bytes: this.used.bytes - bytes };
    this.emit('released');
  }

  usage(): ReplicaBudgetUsage {
    return { ...this.used };
  }
}

/** Bytes a replica of the pool allocates for its bucket table (from the catalog, before subscribing). */
export function replicaBytes(pool: CatalogPool): number {
  return Number(pool.descriptor.producer!.ckfFormat!.bucketCount) * 8;
}
