// GlobalRouter: one RelayClient per remote DC; per request, every DC's eligible pools are scored
// from the DC's own replica (query(): prefix depth, readiness, load) and the policy picks one.
// Routing never waits on the network: it reads the replicas the clients keep up to date.
import { EventEmitter } from 'events';
import { RelayClient, type ClientErrorEvent, type RelayClientOptions, type ReplicaEvent } from 'kv-dc-relay/client';
import { dcCandidates, type Candidate, type Skipped } from './candidates';
import { DEFAULT_INVALID_REPLICA_HOLD_MS, DEFAULT_POOL_CAPACITY } from './defaults';
import { kvAware, type Policy } from './policies';

export interface DcTarget {
  /** Label used in decisions (need not match the relay's dc id). */
  name: string;
  /** The DC relay's gRPC address, HOST:PORT. */
  address: string;
}

export interface GlobalRouterOptions {
  dcs: readonly DcTarget[];
  /** Prefix of every relay subscription (each DC's client appends nothing; each stream its own suffix). */
  subscriberId: string;
  /** Default: kvAware() with the documented weights. */
  policy?: Policy;
  /** Concurrency of a pool whose relay publishes none. */
  defaultCapacity?: number;
  invalidReplicaHoldMs?: number;
  /** Passed to every RelayClient (backoff, freshness, message size, pool filter). */
  client?: Omit<RelayClientOptions, 'subscriberId'>;
}

export interface RouteRequest {
  model: string;
  tokens: ArrayLike<number>;
  lora?: string;
}

export interface Decision {
  /** The chosen pool, or null when no DC has an eligible pool for the model. */
  chosen: Candidate | null;
  /** Every eligible pool that was scored. */
  candidates: Candidate[];
  skipped: Skipped[];
  /** Call when the request completes (or fails): its pool's in-flight count drops. Idempotent. */
  release(): void;
}

export interface GlobalRouterEvents {
  replicaInstalled: [dc: string, event: ReplicaEvent & { sequence: bigint }];
  replicaInvalidated: [dc: string, event: ReplicaEvent & { reason: string; message: string }];
  error: [dc: string, event: ClientErrorEvent];
}

interface Dc {
  target: DcTarget;
  client: RelayClient;
  inflight: Map<string, number>;
  /** Pool key → time its replica was invalidated (cleared when a replica is installed again). */
  invalidatedAt: Map<string, number>;
}

const NO_TOKENS = new Uint32Array(0);

export class GlobalRouter extends EventEmitter<GlobalRouterEvents> {
  readonly policy: Policy;
  private readonly dcs: Dc[];
  private readonly defaultCapacity: number;
  private readonly holdMs: number;

  constructor(options: GlobalRouterOptions) {
    super();
    if (options.dcs.length === 0) throw new RangeError('a global router needs at least one DC');
    const names = new Set(options.dcs.map((d) => d.name));
    if (names.size !== options.dcs.length) throw new RangeError('DC names must be unique');
    this.policy = options.policy ?? kvAware();
    this.defaultCapacity = positive('defaultCapacity', options.defaultCapacity ?? DEFAULT_POOL_CAPACITY);
    this.holdMs = positive('invalidReplicaHoldMs', options.invalidReplicaHoldMs ?? DEFAULT_INVALID_REPLICA_HOLD_MS);
    this.dcs = options.dcs.map((target) => this.connect(target, options));
  }

  start(): void {
    for (const dc of this.dcs) dc.client.start();
  }

  close(): void {
    for (const dc of this.dcs) dc.client.close();
  }

  /** The client of one DC, for its own events and state. */
  client(dc: string): RelayClient {
    const found = this.dcs.find((d) => d.target.name === dc);
    if (!found) throw new RangeError(`no DC named ${dc}`);
    return found.client;
  }

  dcNames(): string[] {
    return this.dcs.map((d) => d.target.name);
  }

  /** Requests routed to the DC and not yet released. */
  inflight(dc: string): number {
    const found = this.dcs.find((d) => d.target.name === dc);
    return found ? [...found.inflight.values()].reduce((a, b) => a + b, 0) : 0;
  }

  route(request: RouteRequest, nowMs: number = Date.now()): Decision {
    const prefix = this.policy.usesPrefix;
    const candidates: Candidate[] = [];
    const skipped: Skipped[] = [];
    for (const dc of this.dcs) {
      const { client } = dc;
      const result = client.query({ model: request.model, tokens: prefix ? request.tokens : NO_TOKENS, lora: request.lora });
      const step = dcCandidates({
        dc: dc.target.name,
        connected: client.relayIdentity() !== undefined,
        hasReadiness: client.readiness() !== undefined,
        result,
        promptTokens: request.tokens.length,
        prefix,
        inflight: (poolKey) => dc.inflight.get(poolKey) ?? 0,
        lastResort: (poolKey) => this.held(dc, poolKey, nowMs),
        defaultCapacity: this.defaultCapacity,
      });
      candidates.push(...step.candidates);
      skipped.push(...step.skipped);
    }
    const preferred = candidates.filter((c) => !c.lastResort);
    const pool = preferred.length > 0 ? preferred : candidates;
    if (pool.length === 0) return { chosen: null, candidates, skipped, release: () => undefined };
    const chosen = this.policy.choose(pool);
    return { chosen, candidates, skipped, release: this.book(chosen) };
  }

  private connect(target: DcTarget, options: GlobalRouterOptions): Dc {
    const client = new RelayClient(target.address, { ...options.client, subscriberId: options.subscriberId });
    const dc: Dc = { target, client, inflight: new Map(), invalidatedAt: new Map() };
    client.on('replicaInstalled', (e) => {
      dc.invalidatedAt.delete(e.poolKey);
      this.emit('replicaInstalled', target.name, e);
    });
    client.on('replicaInvalidated', (e) => {
      dc.invalidatedAt.set(e.poolKey, Date.now());
      this.emit('replicaInvalidated', target.name, e);
    });
    client.on('error', (e) => {
      if (this.listenerCount('error') > 0) this.emit('error', target.name, e);
    });
    return dc;
  }

  private held(dc: Dc, poolKey: string, nowMs: number): boolean {
    const at = dc.invalidatedAt.get(poolKey);
    return at !== undefined && nowMs - at < this.holdMs;
  }

  private book(chosen: Candidate): () => void {
    const dc = this.dcs.find((d) => d.target.name === chosen.dc)!;
    dc.inflight.set(chosen.poolKey, (dc.inflight.get(chosen.poolKey) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (dc.inflight.get(chosen.poolKey) ?? 1) - 1;
      if (left > 0) dc.inflight.set(chosen.poolKey, left);
      else dc.inflight.delete(chosen.poolKey);
    };
  }
}

function positive(name: string, value: number): number {
  if (!Number.isFinite(value) || value <= 0) throw new RangeError(`${name} must be a positive number`);
  return value;
}
