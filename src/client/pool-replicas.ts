// The pool-replica plane: one SubscribeKvPool stream per catalog pool, keyed by the producer the
// catalog currently lists. A new producer generation replaces the subscription; a pool that leaves
// the catalog (or a lost catalog) drops its replica. Failures invalidate only the affected replica;
// so does silence: a stream with no frame (data or heartbeat) for maxReplicaAgeMs is reopened.
// Each subscription holds room in the replica budget (replica-budget.ts) for its bucket table; a
// pool without room is not subscribed, reported once, and subscribed when room is freed.
import { RELAY_CONTRACT_MARKER } from '../wire/constants';
import type { KvEventRelayClient } from '../wire/service';
import type { FilterUpdate, RelayIdentity } from '../wire/types';
import { Backoff, type BackoffOptions } from './backoff';
import type { CatalogPool, CatalogValue } from './catalog-plane';
import { PoolReplica, type ReplicaStats } from './replica';
import { replicaBytes, type ReplicaBudget } from './replica-budget';
import { ResilientStream, type FailureDecision, type StreamState } from './resilient-stream';
import { describeInvalid, failureFields, type ClientErrorEvent } from './stream-events';

export interface ReplicaEvent {
  poolKey: string;
  producerKey: string;
}

export interface PoolReplicaListener {
  /** False when a frame comes from another Relay instance than the connection's (the owner ends the epoch). */
  sameConnection(relay: RelayIdentity | undefined): boolean;
  installed(event: ReplicaEvent & { sequence: bigint }): void;
  invalidated(event: ReplicaEvent & { reason: string; message: string }): void;
  delta(event: ReplicaEvent & { baseSequence: bigint; sequence: bigint; imageCount: number }): void;
  error(event: ClientErrorEvent): void;
}

/** Which catalog pools get a replica (default: every pool). */
export type PoolFilter = (pool: CatalogPool, catalog: CatalogValue) => boolean;

/** A catalog pool as this client follows it: its subscription stream and its replica, if installed. */
export interface PoolReplicaStatus {
  pool: CatalogPool;
  stream: StreamState;
  stats: ReplicaStats | null;
}

interface Subscription {
  pool: CatalogPool;
  replica: PoolReplica | undefined;
  stream: ResilientStream<FilterUpdate>;
  /** Room held in the budget. */
  bytes: number;
}

export class PoolReplicas {
  private readonly subs = new Map<string, Subscription>();
  /** The catalog followed now, and its selected pools the budget had no room for. */
  private catalog: CatalogValue | undefined;
  private refused = new Set<string>();
  private retryQueued = false;
  private readonly onReleased = (): void => {
    if (this.refused.size === 0 || this.retryQueued) return;
    // Not from inside the release: it may come from this object's own reconcile.
    this.retryQueued = true;
    queueMicrotask(() => {
      this.retryQueued = false;
      if (this.catalog) this.subscribeMissing(this.catalog);
    });
  };

  constructor(
    /** The channel's current client (RelayChannel replaces it while reconnecting). */
    private readonly client: () => KvEventRelayClient,
    private readonly subscriberId: string,
    private readonly backoff: BackoffOptions,
    private readonly maxReplicaAgeMs: number,
    private readonly listener: PoolReplicaListener,
    private readonly budget: ReplicaBudget,
    private readonly filter: PoolFilter = () => true,
  ) {
    budget.on('released', this.onReleased);
  }

  /** Follows a new catalog value. */
  reconcile(catalog: CatalogValue): void {
    const selected = catalog.pools.filter((pool) => this.filter(pool, catalog));
    const listed = new Set(selected.map((p) => p.poolKey));
    // Withdrawn pools first, so that their room is there for new ones.
    for (const key of [...this.subs.keys()]) {
      if (!listed.has(key)) this.drop(key, 'poolWithdrawn', 'the pool is no longer in the catalog (or no longer selected)');
    }
    for (const pool of selected) {
      const sub = this.subs.get(pool.poolKey);
      if (!sub) continue;
      if (sub.pool.producerKey !== pool.producerKey) {
        this.drop(pool.poolKey, 'producerChanged', 'the catalog lists a new producer generation');
        continue;
      }
      sub.pool = pool;
      sub.stream.resume(); // a stream waiting for a catalog refresh retries the listed producer
    }
    this.catalog = catalog;
    this.subscribeMissing(catalog);
  }

  /** Without a catalog no pool is known to exist: every replica goes (fail closed). */
  clear(reason: string, message: string): void {
    this.catalog = undefined;
    this.refused.clear();
    for (const key of [...this.subs.keys()]) this.drop(key, reason, message);
  }

  /** clear(), and stops following the budget. */
  close(reason: string, message: string): void {
    this.budget.off('released', this.onReleased);
    this.clear(reason, message);
  }

  states(nowMs: number): PoolReplicaStatus[] {
    return [...this.subs.values()].map((sub) => ({
      pool: sub.pool,
      stream: sub.stream.state,
      stats: sub.replica?.ready ? sub.replica.stats(nowMs) : null,
    }));
  }

  /** Installed replicas by pool key. */
  ready(): Map<string, PoolReplica> {
    const out = new Map<string, PoolReplica>();
    for (const [key, sub] of this.subs) if (sub.replica?.ready) out.set(key, sub.replica);
    return out;
  }

  /** Subscribes every selected pool of `catalog` without a subscription, in catalog order, while the budget has room. */
  private subscribeMissing(catalog: CatalogValue): void {
    const refused: CatalogPool[] = [];
    for (const pool of catalog.pools) {
      if (this.subs.has(pool.poolKey) || !this.filter(pool, catalog)) continue;
      const bytes = replicaBytes(pool);
      if (this.budget.tryReserve(bytes)) this.subscribe(pool, catalog.relay, bytes);
      else refused.push(pool);
    }
    const before = this.refused;
    this.refused = new Set(refused.map((p) => p.poolKey));
    // Reported when pools are newly refused, not on every catalog update while they stay so.
    if (!refused.some((p) => !before.has(p.poolKey))) return;
    const { limits } = this.budget;
    const used = this.budget.usage();
    this.listener.error({
      plane: 'pool',
      poolKey: refused[0].poolKey,
      reason: 'ReplicaBudgetExceeded',
      message:
        `${refused.length} catalog pool(s) not replicated: the relay lists more than the replica budget holds ` +
        `(memoryBudget: ${limits.maxPools} pools, ${limits.maxBytes} bytes; in use ${used.pools} pools, ${used.bytes} bytes; ` +
        `the first needs ${replicaBytes(refused[0])} bytes); they are subscribed when room is freed`,
      next: 'wait',
    });
  }

  private subscribe(pool: CatalogPool, relay: RelayIdentity, bytes: number): void {
    const producer = pool.descriptor.producer!;
    const request = { subscriberId: `${this.subscriberId}/ckf`, expectedProducer: producer, contractMarker: RELAY_CONTRACT_MARKER };
    const sub: Subscription = {
      pool,
      bytes,
      replica: undefined,
      stream: new ResilientStream<FilterUpdate>({
        open: () => this.client().subscribeKvPool(request),
        onOpen: () => {
          sub.replica = new PoolReplica(producer, relay);
        },
        onMessage: (update) => this.apply(sub, update),
        silenceLimitMs: () => this.maxReplicaAgeMs,
        backoff: new Backoff(this.backoff),
        describeInvalid,
        onFailure: (failure) => {
          const next: FailureDecision = failure.action === 'refreshCatalog' ? 'wait' : failure.action;
          this.invalidate(sub, failure.reason, failure.message);
          this.listener.error({ plane: 'pool', poolKey: pool.poolKey, ...failureFields(failure), next });
          return next;
        },
      }),
    };
    this.subs.set(pool.poolKey, sub);
    sub.stream.start();
  }

  private apply(sub: Subscription, update: FilterUpdate): void {
    if (!this.listener.sameConnection(update.relay)) return;
    const outcome = sub.replica!.apply(update);
    const ids = { poolKey: sub.pool.poolKey, producerKey: sub.pool.producerKey };
    if (outcome.kind === 'installed') this.listener.installed({ ...ids, sequence: outcome.sequence });
    else if (outcome.kind === 'delta') {
      this.listener.delta({ ...ids, baseSequence: outcome.baseSequence, sequence: outcome.sequence, imageCount: outcome.imageCount });
    }
  }

  private invalidate(sub: Subscription, reason: string, message: string): void {
    const replica = sub.replica;
    sub.replica = undefined;
    if (replica?.ready) this.listener.invalidated({ poolKey: sub.pool.poolKey, producerKey: sub.pool.producerKey, reason, message });
  }

  private drop(poolKey: string, reason: string, message: string): void {
    const sub = this.subs.get(poolKey);
    if (!sub) return;
    this.subs.delete(poolKey);
    sub.stream.stop();
    this.invalidate(sub, reason, message);
    this.budget.release(sub.bytes);
  }
}
