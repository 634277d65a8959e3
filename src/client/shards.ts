// A consumer of a datacenter served by several relay shards (README "Relay shards"): one RelayClient
// per shard address, merged into one view for `query`. Addresses are given, or come from a source
// that follows them (the shards' entries in etcd: src/discovery/shard-addresses.ts).
//
// Merge rules: a pool is taken from the shard that lists it; while a pool moves between shards it
// may briefly be listed by both, and then the shard whose replica of it is installed (else the first
// address in order) wins. Readiness is the same on every shard (each publishes the whole
// deployment's topology), so the first shard that has it provides it. Load entries are keyed by
// producer, so the shards' windows are united.
import { EventEmitter } from 'events';
import type { CatalogPool, CatalogValue } from './catalog-plane';
import { queryHasher } from './hashing';
import type { PoolLoadValue, ServingLoadValue } from './load-plane';
import { runQuery, type QueryRequest, type QueryResult } from './query';
import type { ReadinessValue } from './readiness-plane';
import { RelayClient, type RelayClientOptions } from './relay-client';
import type { PoolReplica } from './replica';
import { ReplicaBudget } from './replica-budget';
import type { ClientErrorEvent } from './stream-events';
import { DEFAULT_MAX_REPLICA_AGE_MS, DEFAULT_VERIFICATION_WINDOW } from '../config/defaults';

/** Follows the shard addresses (calls `onChange` with the full list on every change). */
export interface ShardAddressSource {
  start(onChange: (addresses: string[]) => void): void;
  close(): void;
}

export interface ShardedRelayClientEvents {
  /** The merged view changed: a shard's catalog, readiness, load or a replica, or a shard came or went. */
  changed: [];
  shards: [string[]];
  error: [ClientErrorEvent & { address: string }];
}

export class ShardedRelayClient extends EventEmitter<ShardedRelayClientEvents> {
  private readonly clients = new Map<string, RelayClient>();
  private order: string[] = [];
  private merged: { catalog: CatalogValue; owner: Map<string, RelayClient> } | undefined;
  private started = false;
  private closed = false;

  private readonly options: RelayClientOptions;

  constructor(
    private readonly source: readonly string[] | ShardAddressSource,
    options: RelayClientOptions,
  ) {
    super();
    // One budget for every shard: together they follow one datacenter's pools.
    const budget = options.memoryBudget instanceof ReplicaBudget ? options.memoryBudget : new ReplicaBudget(options.memoryBudget);
    this.options = { ...options, memoryBudget: budget };
  }

  start(): void {
    if (this.started || this.closed) return;
    this.started = true;
    if (Array.isArray(this.source)) this.setAddresses(this.source as string[]);
    else (this.source as ShardAddressSource).start((addresses) => this.setAddresses(addresses));
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (!Array.isArray(this.source)) (this.source as ShardAddressSource).close();
    for (const c of this.clients.values()) c.close();
    this.clients.clear();
  }

  /** Current shard addresses. */
  addresses(): string[] {
    return [...this.order];
  }

  /** The per-shard client of an address (for diagnostics). */
  shard(address: string): RelayClient | undefined {
    return this.clients.get(address);
  }

  /** The merged catalog: every pool any shard lists, once, in pool order. */
  catalog(): CatalogValue | undefined {
    return this.view().catalog;
  }

  /** The address of the shard a pool is taken from. */
  shardOf(poolKey: string): string | undefined {
    return this.view().owner.get(poolKey)?.address;
  }

  replica(poolKey: string): PoolReplica | undefined {
    return this.view().owner.get(poolKey)?.replica(poolKey);
  }

  readiness(): ReadinessValue | undefined {
    return this.first((c) => c.readiness());
  }

  load(): PoolLoadValue | undefined {
    return this.unite((c) => c.load(), (a, b) => ({ ...a, pools: new Map([...a.pools, ...b.pools]) }));
  }

  servingLoad(): ServingLoadValue | undefined {
    return this.unite((c) => c.servingLoad(), (a, b) => ({ ...a, pools: new Map([...a.pools, ...b.pools]), models: new Map([...a.models, ...b.models]) }));
  }

  query(request: QueryRequest): QueryResult {
    const { catalog, owner } = this.view();
    const replicas = new Map<string, PoolReplica>();
    for (const [key, client] of owner) {
      const r = client.replica(key);
      if (r) replicas.set(key, r);
    }
    return runQuery(
      {
        nowMs: Date.now(),
        maxReplicaAgeMs: this.options.maxReplicaAgeMs ?? DEFAULT_MAX_REPLICA_AGE_MS,
        catalog,
        replicas,
        readiness: this.readiness(),
        load: this.load(),
        servingLoad: this.servingLoad(),
      },
      request,
      queryHasher,
      this.options.verificationWindow ?? DEFAULT_VERIFICATION_WINDOW,
    );
  }

  /** Opens clients for new addresses and closes those of addresses that are gone. */
  setAddresses(addresses: readonly string[]): void {
    if (this.closed) return;
    const wanted = [...new Set(addresses)].sort();
    for (const [address, client] of this.clients) {
      if (wanted.includes(address)) continue;
      client.close();
      this.clients.delete(address);
    }
    for (const address of wanted) {
      if (this.clients.has(address)) continue;
      const client = new RelayClient(address, { ...this.options, subscriberId: this.options.subscriberId });
      // A pool's replica also decides which shard it is taken from during a move.
      for (const event of ['catalog', 'readiness', 'load', 'servingLoad', 'replicaInstalled', 'replicaInvalidated'] as const) {
        client.on(event, () => this.changed());
      }
      client.on('error', (e) => {
        if (this.listenerCount('error') > 0) this.emit('error', { ...e, address });
      });
      this.clients.set(address, client);
      if (this.started) client.start();
    }
    const changed = wanted.join(',') !== this.order.join(',');
    this.order = wanted;
    if (changed) this.emit('shards', [...wanted]);
    this.changed();
  }

  private changed(): void {
    this.merged = undefined;
    this.emit('changed');
  }

  private view(): { catalog: CatalogValue | undefined; owner: Map<string, RelayClient> } {
    if (this.merged) return this.merged;
    const owner = new Map<string, RelayClient>();
    const pools = new Map<string, CatalogPool>();
    let base: CatalogValue | undefined;
    for (const address of this.order) {
      const client = this.clients.get(address)!;
      const catalog = client.catalog();
      if (!catalog) continue;
      base ??= catalog;
      for (const pool of catalog.pools) {
        const held = owner.get(pool.poolKey);
        if (held && (held.replica(pool.poolKey) || !client.replica(pool.poolKey))) continue;
        owner.set(pool.poolKey, client);
        pools.set(pool.poolKey, pool);
      }
    }
    if (!base) return { catalog: undefined, owner };
    const sorted = [...pools.values()].sort((a, b) => (a.poolKey < b.poolKey ? -1 : a.poolKey > b.poolKey ? 1 : 0));
    // The revision and relay of the merged value are the first shard's; only `pools` is merged.
    const catalog: CatalogValue = { ...base, pools: sorted, quarantined: [], snapshot: { pools: sorted.map((p) => p.descriptor) } };
    this.merged = { catalog, owner };
    return this.merged;
  }

  private first<T>(get: (c: RelayClient) => T | undefined): T | undefined {
    for (const address of this.order) {
      const v = get(this.clients.get(address)!);
      if (v !== undefined) return v;
    }
    return undefined;
  }

  private unite<T>(get: (c: RelayClient) => T | undefined, merge: (a: T, b: T) => T): T | undefined {
    let out: T | undefined;
    for (const address of this.order) {
      const v = get(this.clients.get(address)!);
      if (v !== undefined) out = out === undefined ? v : merge(out, v);
    }
    return out;
  }
}
