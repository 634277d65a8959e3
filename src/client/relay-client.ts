// RelayClient: one Relay address, four independent planes (catalog, pool replicas, readiness,
// load + serving load). Each plane is a reopening stream whose messages go through a pure reducer;
// pool replicas follow the catalog: one subscription per pool, keyed by its current producer.
import { EventEmitter } from 'events';
import type { ClientReadableStream } from '@grpc/grpc-js';
import { CLIENT_SUBSCRIBER_ID_MAX_BYTES, DEFAULT_QUEUES, DEFAULT_VERIFICATION_WINDOW, MAX_VERIFICATION_WINDOW } from '../config/defaults';
import { RELAY_CONTRACT_MARKER } from '../wire/constants';
import { makeClient, type KvEventRelayClient } from '../wire/service';
import { hasControlCharacter } from '../wire/text';
import type { FilterUpdate } from '../wire/types';
import { Backoff, DEFAULT_BACKOFF, type BackoffOptions } from './backoff';
import { applyCatalogUpdate, type CatalogPool, type CatalogValue } from './catalog-plane';
import { planeStreamAction } from './error-action';
import { queryHasher } from './hashing';
import { applyPoolLoadUpdate, applyServingLoadUpdate, type PoolLoadValue, type ServingLoadValue } from './load-plane';
import { PlaneError, type Plane } from './plane-error';
import { runQuery, type QueryRequest, type QueryResult } from './query';
import { applyReadinessUpdate, type ReadinessValue } from './readiness-plane';
import { PoolReplica, ReplicaFault, type ReplicaStats } from './replica';
import { ResilientStream, type FailureDecision, type StreamFailure, type StreamState } from './resilient-stream';

export interface RelayClientOptions {
  /** Diagnostic label; each stream appends its own suffix ("/catalog", "/ckf", ...). */
  subscriberId: string;
  backoff?: Partial<BackoffOptions>;
  /** Prefix-search verification window, 1..8 (default 2). */
  verificationWindow?: number;
  /** Largest accepted response message (default 8 MiB: a full snapshot chunk exceeds 4 MiB). */
  maxMessageBytes?: number;
  /** Serving load is a variant-S RPC; a Relay without it answers UNIMPLEMENTED and the plane stops. */
  servingLoad?: boolean;
}

export interface ClientErrorEvent {
  plane: Plane | 'pool';
  poolKey?: string;
  /** Trailer reason name, status code name, or the validation rule that failed. */
  reason: string;
  code?: number;
  relayReason?: number;
  message: string;
  /** What the client does next. */
  next: FailureDecision;
}

export interface ReplicaEvent {
  poolKey: string;
  producerKey: string;
}

export interface RelayClientEvents {
  catalog: [CatalogValue | null];
  readiness: [ReadinessValue | null];
  load: [PoolLoadValue | null];
  servingLoad: [ServingLoadValue | null];
  replicaInstalled: [ReplicaEvent & { sequence: bigint }];
  replicaInvalidated: [ReplicaEvent & { reason: string; message: string }];
  delta: [ReplicaEvent & { baseSequence: bigint; sequence: bigint; imageCount: number }];
  error: [ClientErrorEvent];
}

export interface PoolState {
  pool: CatalogPool;
  stream: StreamState;
  stats: ReplicaStats | null;
}

export class RelayClient extends EventEmitter<RelayClientEvents> {
  private readonly client: KvEventRelayClient;
  private readonly subscriberId: string;
  private readonly backoffOptions: BackoffOptions;
  private readonly verificationWindow: number;
  private readonly planes: ResilientStream<unknown>[] = [];
  private readonly pools = new Map<string, PoolSubscription>();
  private catalogValue: CatalogValue | undefined;
  private readinessValue: ReadinessValue | undefined;
  private loadValue: PoolLoadValue | undefined;
  private servingLoadValue: ServingLoadValue | undefined;
  private started = false;
  private closed = false;

  constructor(
    readonly address: string,
    private readonly options: RelayClientOptions,
  ) {
    super();
    this.subscriberId = checkSubscriberId(options.subscriberId);
    this.backoffOptions = { ...DEFAULT_BACKOFF, ...options.backoff };
    new Backoff(this.backoffOptions); // validates the bounds now rather than at the first failure
    this.verificationWindow = options.verificationWindow ?? DEFAULT_VERIFICATION_WINDOW;
    if (!Number.isInteger(this.verificationWindow) || this.verificationWindow < 1 || this.verificationWindow > MAX_VERIFICATION_WINDOW) {
      throw new RangeError(`verificationWindow must be an integer in 1..${MAX_VERIFICATION_WINDOW}`);
    }
    const maxMessageBytes = options.maxMessageBytes ?? DEFAULT_QUEUES.maxMessageBytes;
    this.client = makeClient(address, { channelOptions: { 'grpc.max_receive_message_length': maxMessageBytes } });
  }

  start(): void {
    if (this.started || this.closed) return;
    this.started = true;
    const request = (suffix: string) => ({ subscriberId: `${this.subscriberId}/${suffix}`, contractMarker: RELAY_CONTRACT_MARKER });
    this.planes.push(
      this.plane('catalog', () => this.client.watchKvPoolCatalog(request('catalog')), (msg) => {
        const step = applyCatalogUpdate(this.catalogValue, msg);
        if (step.kind === 'heartbeat') return;
        this.catalogValue = step.value;
        this.reconcilePools(step.value);
        this.emit('catalog', step.value);
      }, () => this.setCatalog(undefined)),
      this.plane('readiness', () => this.client.subscribeServingReadiness(request('readiness')), (msg) => {
        const step = applyReadinessUpdate(this.readinessValue, msg);
        if (step.kind === 'heartbeat') return;
        this.readinessValue = step.value;
        this.emit('readiness', step.value);
      }, () => this.setReadiness(undefined)),
      this.plane('load', () => this.client.subscribeKvPoolLoad(request('load')), (msg) => {
        const step = applyPoolLoadUpdate(this.loadValue, msg);
        if (step.kind === 'stale') return;
        this.loadValue = step.value;
        this.emit('load', step.value);
      }, () => this.setLoad(undefined)),
    );
    if (this.options.servingLoad !== false) {
      this.planes.push(
        this.plane('servingLoad', () => this.client.subscribeServingLoad(request('serving-load')), (msg) => {
          const step = applyServingLoadUpdate(this.servingLoadValue, msg);
          if (step.kind === 'stale') return;
          this.servingLoadValue = step.value;
          this.emit('servingLoad', step.value);
        }, () => this.setServingLoad(undefined)),
      );
    }
    for (const plane of this.planes) plane.start();
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const plane of this.planes) plane.stop();
    for (const sub of this.pools.values()) sub.stream.stop();
    this.pools.clear();
    this.client.close();
  }

  catalog(): CatalogValue | undefined {
    return this.catalogValue;
  }

  readiness(): ReadinessValue | undefined {
    return this.readinessValue;
  }

  /** The current pool-load window (entries of pools absent from the catalog are not returned by poolStates). */
  load(): PoolLoadValue | undefined {
    return this.loadValue;
  }

  servingLoad(): ServingLoadValue | undefined {
    return this.servingLoadValue;
  }

  /** Every catalog pool with its subscription state and replica statistics. */
  poolStates(nowMs: number = Date.now()): PoolState[] {
    return [...this.pools.values()].map((sub) => ({
      pool: sub.pool,
      stream: sub.stream.state,
      stats: sub.replica?.ready ? sub.replica.stats(nowMs) : null,
    }));
  }

  /** The installed replica of a pool, if any. */
  replica(poolKey: string): PoolReplica | undefined {
    const replica = this.pools.get(poolKey)?.replica;
    return replica?.ready ? replica : undefined;
  }

  query(request: QueryRequest): QueryResult {
    const replicas = new Map<string, PoolReplica>();
    for (const [key, sub] of this.pools) if (sub.replica?.ready) replicas.set(key, sub.replica);
    return runQuery(
      { catalog: this.catalogValue, replicas, readiness: this.readinessValue, load: this.loadValue, servingLoad: this.servingLoadValue },
      request,
      queryHasher,
      this.verificationWindow,
    );
  }

  // --- planes ---

  private plane<T>(plane: Plane, open: () => ClientReadableStream<T>, onMessage: (msg: T) => void, clear: () => void): ResilientStream<unknown> {
    const stream = new ResilientStream<T>({
      open,
      onOpen: clear,
      onMessage,
      backoff: new Backoff(this.backoffOptions),
      describeInvalid: describeError,
      onFailure: (failure) => {
        clear();
        const next = failure.kind === 'status' ? planeStreamAction(failure.relayReason, failure.code!) : 'retry';
        this.report({ plane, ...failureFields(failure), next });
        return next;
      },
    });
    return stream as ResilientStream<unknown>;
  }

  private setCatalog(value: CatalogValue | undefined): void {
    const had = this.catalogValue !== undefined;
    this.catalogValue = value;
    if (value === undefined) {
      // Without a catalog no pool is known to exist: every replica goes (fail closed).
      for (const key of [...this.pools.keys()]) this.dropPool(key, 'catalogUnavailable', 'the catalog plane was lost');
      if (had) this.emit('catalog', null);
    }
  }

  private setReadiness(value: ReadinessValue | undefined): void {
    const had = this.readinessValue !== undefined;
    this.readinessValue = value;
    if (had && value === undefined) this.emit('readiness', null);
  }

  private setLoad(value: PoolLoadValue | undefined): void {
    const had = this.loadValue !== undefined;
    this.loadValue = value;
    if (had && value === undefined) this.emit('load', null);
  }

  private setServingLoad(value: ServingLoadValue | undefined): void {
    const had = this.servingLoadValue !== undefined;
    this.servingLoadValue = value;
    if (had && value === undefined) this.emit('servingLoad', null);
  }

  // --- pool replicas ---

  private reconcilePools(catalog: CatalogValue): void {
    const listed = new Set<string>();
    for (const pool of catalog.pools) {
      listed.add(pool.poolKey);
      const sub = this.pools.get(pool.poolKey);
      if (sub && sub.pool.producerKey !== pool.producerKey) {
        this.dropPool(pool.poolKey, 'producerChanged', 'the catalog lists a new producer generation');
      }
      const current = this.pools.get(pool.poolKey);
      if (current) {
        current.pool = pool;
        current.stream.resume(); // a stream waiting for a catalog refresh retries the listed producer
      } else {
        this.subscribePool(pool);
      }
    }
    for (const key of [...this.pools.keys()]) {
      if (!listed.has(key)) this.dropPool(key, 'poolWithdrawn', 'the pool is no longer in the catalog');
    }
  }

  private subscribePool(pool: CatalogPool): void {
    const sub: PoolSubscription = { pool, replica: undefined, stream: undefined as unknown as ResilientStream<FilterUpdate> };
    const request = {
      subscriberId: `${this.subscriberId}/ckf`,
      expectedProducer: pool.descriptor.producer!,
      contractMarker: RELAY_CONTRACT_MARKER,
    };
    sub.stream = new ResilientStream<FilterUpdate>({
      open: () => this.client.subscribeKvPool(request),
      onOpen: () => {
        sub.replica = new PoolReplica(pool.descriptor.producer!, this.catalogValue?.relay);
      },
      onMessage: (update) => this.applyPoolUpdate(sub, update),
      backoff: new Backoff(this.backoffOptions),
      describeInvalid: describeError,
      onFailure: (failure) => {
        const next: FailureDecision = failure.action === 'refreshCatalog' ? 'wait' : failure.action;
        this.invalidate(sub, failure.reason, failure.message);
        this.report({ plane: 'pool', poolKey: pool.poolKey, ...failureFields(failure), next });
        return next;
      },
    });
    this.pools.set(pool.poolKey, sub);
    sub.stream.start();
  }

  private applyPoolUpdate(sub: PoolSubscription, update: FilterUpdate): void {
    const outcome = sub.replica!.apply(update);
    const ids = { poolKey: sub.pool.poolKey, producerKey: sub.pool.producerKey };
    if (outcome.kind === 'installed') this.emit('replicaInstalled', { ...ids, sequence: outcome.sequence });
    else if (outcome.kind === 'delta') {
      this.emit('delta', { ...ids, baseSequence: outcome.baseSequence, sequence: outcome.sequence, imageCount: outcome.imageCount });
    }
  }

  private invalidate(sub: PoolSubscription, reason: string, message: string): void {
    const replica = sub.replica;
    sub.replica = undefined;
    if (replica?.ready) this.emit('replicaInvalidated', { poolKey: sub.pool.poolKey, producerKey: sub.pool.producerKey, reason, message });
  }

  private dropPool(poolKey: string, reason: string, message: string): void {
    const sub = this.pools.get(poolKey);
    if (!sub) return;
    this.pools.delete(poolKey);
    sub.stream.stop();
    this.invalidate(sub, reason, message);
  }

  /** 'error' is only emitted when someone listens, so an unobserved failure never throws. */
  private report(event: ClientErrorEvent): void {
    if (this.listenerCount('error') > 0) this.emit('error', event);
  }
}

interface PoolSubscription {
  pool: CatalogPool;
  replica: PoolReplica | undefined;
  stream: ResilientStream<FilterUpdate>;
}

function failureFields(failure: StreamFailure): Omit<ClientErrorEvent, 'plane' | 'next'> {
  return { reason: failure.reason, code: failure.code, relayReason: failure.relayReason, message: failure.message };
}

function describeError(err: unknown): { reason: string; message: string } {
  if (err instanceof PlaneError || err instanceof ReplicaFault) return { reason: err.reason, message: err.message };
  return { reason: 'invalidMessage', message: err instanceof Error ? err.message : String(err) };
}

function checkSubscriberId(id: string): string {
  if (typeof id !== 'string' || id.length === 0) throw new TypeError('subscriberId must be a non-empty string');
  if (Buffer.byteLength(id, 'utf8') > CLIENT_SUBSCRIBER_ID_MAX_BYTES) {
    throw new RangeError(`subscriberId exceeds ${CLIENT_SUBSCRIBER_ID_MAX_BYTES} bytes`);
  }
  if (hasControlCharacter(id)) throw new RangeError('subscriberId must not contain control characters');
  return id;
}
