// GlobalRouter: one RelayClient per remote DC; per request, every DC's eligible pools are scored
// from the DC's own replica (query(): prefix depth, readiness, load) and the policy picks one.
// Routing never waits on the network: it reads the replicas the clients keep up to date. A DC that
// looks unhealthy (a replica just invalidated, requests failing, its relay silent) is a last resort.
import { EventEmitter } from 'events';
import { LOAD_SILENCE_MIN_MS, RelayClient, type ClientErrorEvent, type RelayClientOptions, type ReplicaEvent } from 'kv-dc-relay/client';
import { dcCandidates, type Candidate, type LastResort, type Skipped } from './candidates';
import { DEFAULT_FAILURE_HOLD_MS, DEFAULT_INVALID_REPLICA_HOLD_MS, DEFAULT_POOL_CAPACITY, DEFAULT_SILENCE_WINDOWS } from './defaults';
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
  /** A pool whose request failed (decision.fail()) is a last resort for this long, or until a request there succeeds. */
  failureHoldMs?: number;
  /** A DC whose relay has sent no load window for this many of its windows (and at least the client's 3 s) is silent: a last resort until one arrives. */
  silenceWindows?: number;
  /** Passed to every RelayClient (backoff, freshness, message size, pool filter). */
  client?: Omit<RelayClientOptions, 'subscriberId'>;
}

export interface RouteRequest {
  model: string;
  tokens: ArrayLike<number>;
  lora?: string;
  /** The request's time-to-first-token target, ms (the kv-aware policy's triage uses it). */
  ttftSloMs?: number;
}

/**
 * Call firstToken() when the first token comes back and release() when the response ends; fail()
 * instead of release() when the request failed at the DC (connection refused or reset, no answer).
 */
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
  /** Pool key → time a request to it last failed (cleared when a request there gets its first token). */
  failedAt: Map<string, number>;
  /** When the relay's last load window arrived and the window it announced; undefined until the first. */
  lastLoad: { atMs: number; windowMs: number } | undefined;
}

const NO_TOKENS = new Uint32Array(0);

export class GlobalRouter extends EventEmitter<GlobalRouterEvents> {
  readonly policy: Policy;
  private readonly dcs: Dc[];
  private readonly defaultCapacity: number;
  private readonly holdMs: number;
  private readonly failureHoldMs: number;
  private readonly silenceWindows: number;

  constructor(options: GlobalRouterOptions) {
    super();
    if (options.dcs.length === 0) throw new RangeError('a global router needs at least one DC');
    const names = new Set(options.dcs.map((d) => d.name));
    if (names.size !== options.dcs.length) throw new RangeError('DC names must be unique');
    for (const d of options.dcs) if (d.rttMs !== undefined && !(Number.isFinite(d.rttMs) && d.rttMs >= 0)) throw new RangeError(`rttMs of ${d.name} must be a finite number ≥ 0`);
    this.policy = options.policy ?? kvAware();
    this.defaultCapacity = positive('defaultCapacity', options.defaultCapacity ?? DEFAULT_POOL_CAPACITY);
    this.holdMs = positive('invalidReplicaHoldMs', options.invalidReplicaHoldMs ?? DEFAULT_INVALID_REPLICA_HOLD_MS);
    this.failureHoldMs = positive('failureHoldMs', options.failureHoldMs ?? DEFAULT_FAILURE_HOLD_MS);
    this.silenceWindows = positive('silenceWindows', options.silenceWindows ?? DEFAULT_SILENCE_WINDOWS);
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
        lastResort: (poolKey) => this.lastResort(dc, poolKey, nowMs),
        defaultCapacity: this.defaultCapacity,
      });
      candidates.push(...step.candidates);
      skipped.push(...step.skipped);
    }
    const preferred = candidates.filter((c) => !c.lastResort);
    const pool = preferred.length > 0 ? preferred : candidates;
    if (pool.length === 0) return { chosen: null, candidates, skipped, firstToken: () => undefined, release: () => undefined, fail: () => undefined };
    const chosen = this.policy.choose(pool, request);
    const dc = this.dcs.find((d) => d.target.name === chosen.dc)!;
    return { chosen, candidates, skipped, ...this.book(dc, chosen, nowMs) };
  }

  /**
   * The work book's booking, with the request's outcome taken as the pool's health: a first token
   * clears a failure, a failure marks it. A pool chosen while marked (its hold passed: the half-open
   * probe, or nothing else eligible) is marked again from now, so one probe at a time goes there.
   */
  private book(dc: Dc, chosen: Candidate, nowMs: number): Booking {
    const booking = dc.work.book(chosen);
    if (dc.failedAt.has(chosen.poolKey)) dc.failedAt.set(chosen.poolKey, nowMs);
    let [answered, open] = [false, true];
    return {
      firstToken: () => {
        if (!open || answered) return;
        answered = true;
        dc.failedAt.delete(chosen.poolKey);
        booking.firstToken();
      },
      release: () => {
        open = false;
        booking.release();
      },
      fail: () => {
        if (open) dc.failedAt.set(chosen.poolKey, Date.now());
        open = false;
        booking.fail();
      },
    };
  }

  private connect(target: DcTarget, options: GlobalRouterOptions): Dc {
    const client = new RelayClient(target.address, { ...options.client, subscriberId: options.subscriberId });
    const dc: Dc = { target, client, work: new WorkBook(), invalidatedAt: new Map(), failedAt: new Map(), lastLoad: undefined };
    client.on('replicaInstalled', (e) => {
      dc.invalidatedAt.delete(e.poolKey);
      this.emit('replicaInstalled', target.name, e);
    });
    client.on('replicaInvalidated', (e) => {
      dc.invalidatedAt.set(e.poolKey, Date.now());
      this.emit('replicaInvalidated', target.name, e);
    });
    // Kept when the plane ends: the client ends a silent load stream itself (after a few windows)
    // and reopens it, and the DC is no less silent for that. A catalog lost ends the DC's pools anyway.
    client.on('load', (window) => {
      if (window) dc.lastLoad = { atMs: Date.now(), windowMs: Number(window.windowMs) };
    });
    client.on('error', (e) => {
      if (this.listenerCount('error') > 0) this.emit('error', target.name, e);
    });
    return dc;
  }

  private lastResort(dc: Dc, poolKey: string, nowMs: number): LastResort | false {
    const within = (at: number | undefined, ms: number) => at !== undefined && nowMs - at < ms;
    if (within(dc.failedAt.get(poolKey), this.failureHoldMs)) return 'failing';
    // With the client's floor (3 s): a window a little late (a busy host, this router's own event
    // loop behind) is no partition, and a relay publishing every few ms would otherwise read as silent
    // after a few ms. At the relays' default 1 s window the floor changes nothing.
    const load = dc.lastLoad;
    if (load && load.windowMs > 0 && nowMs - load.atMs > Math.max(LOAD_SILENCE_MIN_MS, this.silenceWindows * load.windowMs)) return 'silent';
    if (within(dc.invalidatedAt.get(poolKey), this.holdMs)) return 'replicaInvalidated';
    return false;
  }
}
