// GlobalRouter: one RelayClient per remote DC; per request, every DC's eligible pools are scored
// from the DC's own replica (query(): prefix depth, readiness, load) and the policy picks one.
// Routing never waits on the network: it reads the replicas the clients keep up to date.
import { EventEmitter } from 'events';
import { RelayClient, type ClientErrorEvent, type RelayClientOptions, type ReplicaEvent } from 'kv-dc-relay/client';
import { dcCandidates, type Candidate, type Skipped } from './candidates';
import { DEFAULT_INVALID_REPLICA_HOLD_MS, DEFAULT_POOL_CAPACITY } from './defaults';
import { kvAware, positive, type Policy } from './policies';
import { WorkBook, type Booking } from './work-book';

export interface DcTarget {
  /** Label used in decisions (need not match the relay's dc id). */
  name: string;
  /** The DC relay's gRPC address, HOST:PORT. */
  address: string;
  /** Round trip from this router to the DC's serving endpoint, for policies that weigh distance (default 0). */
  rttMs?: number;
}

export interface GlobalRouterOptions {
  dcs: readonly DcTarget[];
  /** Prefix of every relay subscription (each DC's client appends nothing; each stream its own suffix). */
  subscriberId: string;
  /** Default: kvAware() with the documented defaults. */
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

/** Call firstToken() when the first token comes back and release() when the response ends or fails. */
export interface Decision extends Booking {
  /** The chosen pool, or null when no DC has an eligible pool for the model. */
  chosen: Candidate | null;
  /** Every eligible pool that was scored. */
  candidates: Candidate[];
  skipped: Skipped[];
}

export interface GlobalRouterEvents {
  replicaInstalled: [dc: string, event: ReplicaEvent & { sequence: bigint }];
  replicaInvalidated: [dc: string, event: ReplicaEvent & { reason: string; message: string }];
  error: [dc: string, event: ClientErrorEvent];
}

interface Dc {
  target: DcTarget;
  client: RelayClient;
  /** This router's outstanding work at the DC's pools. */
  work: WorkBook;
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
    for (const d of options.dcs) if (d.rttMs !== undefined && !(Number.isFinite(d.rttMs) && d.rttMs >= 0)) throw new RangeError(`rttMs of ${d.name} must be a finite number ≥ 0`);
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
    return found ? found.work.inflight : 0;
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
        rttMs: dc.target.rttMs ?? 0,
        work: (poolKey) => dc.work.get(poolKey),
        lastResort: (poolKey) => this.held(dc, poolKey, nowMs),
        defaultCapacity: this.defaultCapacity,
      });
      candidates.push(...step.candidates);
      skipped.push(...step.skipped);
    }
    const preferred = candidates.filter((c) => !c.lastResort);
    const pool = preferred.length > 0 ? preferred : candidates;
    if (pool.length === 0) return { chosen: null, candidates, skipped, firstToken: () => undefined, release: () => undefined };
    const chosen = this.policy.choose(pool, request);
    const booking = this.dcs.find((d) => d.target.name === chosen.dc)!.work.book(chosen);
    return { chosen, candidates, skipped, firstToken: booking.firstToken, release: booking.release };
  }

  private connect(target: DcTarget, options: GlobalRouterOptions): Dc {
    const client = new RelayClient(target.address, { ...options.client, subscriberId: options.subscriberId });
    const dc: Dc = { target, client, work: new WorkBook(), invalidatedAt: new Map() };
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
}
