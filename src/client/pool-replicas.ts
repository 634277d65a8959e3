// The pool-replica plane: one SubscribeKvPool stream per catalog pool, keyed by the producer the
// catalog currently lists. A new producer generation replaces the subscription; a pool that leaves
// the catalog (or a lost catalog) drops its replica. Failures invalidate only the affected replica;
// so does silence: a stream with no frame (data or heartbeat) for maxReplicaAgeMs is reopened.
import { RELAY_CONTRACT_MARKER } from '../wire/constants';
import type { KvEventRelayClient } from '../wire/service';
import type { FilterUpdate, RelayIdentity } from '../wire/types';
import { Backoff, type BackoffOptions } from './backoff';
import type { CatalogPool, CatalogValue } from './catalog-plane';
import { PoolReplica, type ReplicaStats } from './replica';
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
}

export class PoolReplicas {
  private readonly subs = new Map<string, Subscription>();

  constructor(
    /** The channel's current client (RelayChannel replaces it while reconnecting). */
    private readonly client: () => KvEventRelayClient,
    private readonly subscriberId: string,
    private readonly backoff: BackoffOptions,
    private readonly maxReplicaAgeMs: number,
    private readonly listener: PoolReplicaListener,
    private readonly filter: PoolFilter = () => true,
  ) {}

  /** Follows a new catalog value. */
  reconcile(catalog: CatalogValue): void {
    const listed = new Set<string>();
    for (const pool of catalog.pools) {
      if (!this.filter(pool, catalog)) continue;
      listed.add(pool.poolKey);
      const sub = this.subs.get(pool.poolKey);
      if (sub && sub.pool.producerKey !== pool.producerKey) {
        this.drop(pool.poolKey, 'producerChanged', 'the catalog lists a new producer generation');
      }
      const current = this.subs.get(pool.poolKey);
      if (current) {
        current.pool = pool;
        current.stream.resume(); // a stream waiting for a catalog refresh retries the listed producer
      } else {
        this.subscribe(pool, catalog.relay);
      }
    }
    for (const key of [...this.subs.keys()]) {
      if (!listed.has(key)) this.drop(key, 'poolWithdrawn', 'the pool is no longer in the catalog (or no longer selected)');
    }
  }

  /** Without a catalog no pool is known to exist: every replica goes (fail closed). */
  clear(reason: string, message: string): void {
    for (const key of [...this.subs.keys()]) this.drop(key, reason, message);
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

  private subscribe(pool: CatalogPool, relay: RelayIdentity): void {
    const producer = pool.descriptor.producer!;
    const request = { subscriberId: `${this.subscriberId}/ckf`, expectedProducer: producer, contractMarker: RELAY_CONTRACT_MARKER };
    const sub: Subscription = {
      pool,
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
  }
}
