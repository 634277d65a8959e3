// The replay loop, on simulated time with exact bookkeeping. Before a request arriving at t is
// routed, every DC has been advanced to t, so every first token and completion up to t is known;
// the router learns each one a one-way WAN delay after the engine produced it, and the request
// reaches its DC a one-way delay after t. Routers therefore count in-flight work exactly, whatever
// the host's speed. Only the relays' view of the caches travels in real (wall-clock) time: the
// clock paces simulated time against wall time, and between arrivals it keeps advancing the DCs so
// their KV events go out when they happen.
import type { Booking } from '../router/work-book';
import type { EngineOutput } from './engine/dc-engine';
import type { SimRequest } from './request';

/** One DC as the driver sees it: an engine behind a WAN. */
export interface DcPort {
  readonly name: string;
  /** One-way delay between the routers and the DC (request there, tokens back), simulated ms. */
  readonly oneWayMs: number;
  /** Advances the DC's engine to `toMs`; resolves with its first tokens and completions up to then. */
  advance(toMs: number): Promise<EngineOutput[]>;
  /** The request reaches the DC at `atMs`. */
  arrive(request: SimRequest, atMs: number): void;
  /** False while the DC is lost (its engines gone). */
  readonly up: boolean;
  /** False while the WAN to the DC is partitioned: requests sent there fail (its engines run on). */
  readonly reachable: boolean;
}

export interface RouteResult {
  dc: string | null;
  /** What the router believed was cached at the chosen DC (null: unknown or not asked). */
  matchedTokens: number | null;
  booking: Booking;
}

/** One router: picks a DC for a request (simulated time `nowMs`). */
export interface RouterPort {
  route(request: SimRequest, nowMs: number): RouteResult;
}

/** Paces simulated time: resolves once the simulation may be at `simMs`, ticking `onTick` meanwhile. */
export interface SimClock {
  until(simMs: number, onTick: (simNowMs: number) => Promise<void>): Promise<void>;
  /** How far behind wall-clock pacing the simulation is at `simMs` (0 for an unpaced clock). */
  lateMs(simMs: number): number;
}

export interface RequestRecord {
  id: number;
  router: number;
  arrivalMs: number;
  inputTokens: number;
  outputTokens: number;
  /** The DC that served it (after any retry), or null when none could. */
  dc: string | null;
  routedMatchedTokens: number | null;
  /** Prompt tokens the serving rank already held when it admitted the request (measured in the engine). */
  cachedTokens: number | null;
  /** At the router: arrival → first token back, ms (null: never). */
  ttftMs: number | null;
  /** Arrival → last token back. */
  e2eMs: number | null;
  preemptions: number;
  /** Attempts that failed (DC lost or unreachable) before the one that served it. */
  failures: number;
  /** How far behind wall-clock pacing the router was when it routed the request. */
  lateMs: number;
}

/** Something that happens to the cluster at a simulated time (faults). */
export interface TimedAction {
  atMs: number;
  run(replay: Replay): Promise<void>;
}

export interface DriveOptions {
  requests: readonly SimRequest[];
  dcs: readonly DcPort[];
  routers: readonly RouterPort[];
  /** Which router takes a request (default: round-robin over the routers by id). */
  routerOf?: (request: SimRequest) => number;
  clock: SimClock;
  /** A request sent to a lost DC fails after this long (simulated) and is routed again. */
  failureTimeoutMs?: number;
  actions?: readonly TimedAction[];
  /** Called with each request's record once routed (progress, fault timelines). */
  onRouted?: (record: RequestRecord) => void;
}

interface Pending {
  visibleMs: number;
  apply(): void;
}

interface Live {
  booking: Booking;
  dc: DcPort;
  request: SimRequest;
  record: RequestRecord;
  /** Attempts already tried, by DC name (a retry goes elsewhere). */
  tried: Set<string>;
}

const DEFAULT_FAILURE_TIMEOUT_MS = 1_000;
const MAX_ATTEMPTS = 4;
/** Simulated time added per drain round once arrivals have ended. */
const DRAIN_STEP_MS = 1_000;

export class Replay {
  private readonly byName: Map<string, DcPort>;
  private readonly records = new Map<number, RequestRecord>();
  /** Requests dispatched and not ended, by id. */
  private readonly live = new Map<number, Live>();
  /** Router-side events (responses coming back), applied in time order as simulated time reaches them. */
  private readonly pending: Pending[] = [];
  /** Actions and retries, by time. */
  private readonly timed: TimedAction[];
  private now = 0;

  constructor(private readonly options: DriveOptions) {
    this.byName = new Map(options.dcs.map((dc) => [dc.name, dc]));
    this.timed = [...(options.actions ?? [])].sort((a, b) => a.atMs - b.atMs);
  }

  get nowMs(): number {
    return this.now;
  }

  async run(): Promise<RequestRecord[]> {
    const { requests, routers } = this.options;
    const routerOf = this.options.routerOf ?? ((r: SimRequest) => r.id % routers.length);
    for (const request of requests) {
      await this.reach(request.arrivalMs);
      const record: RequestRecord = {
        id: request.id,
        router: routerOf(request),
        arrivalMs: request.arrivalMs,
        inputTokens: request.inputTokens,
        outputTokens: request.outputTokens,
        dc: null,
        routedMatchedTokens: null,
        cachedTokens: null,
        ttftMs: null,
        e2eMs: null,
        preemptions: 0,
        failures: 0,
        lateMs: this.options.clock.lateMs(request.arrivalMs),
      };
      this.records.set(request.id, record);
      this.dispatch(request, record, new Set());
      this.options.onRouted?.(record);
    }
    // Drain: keep simulated time moving until every request has ended (or failed for good).
    for (let t = this.now; this.live.size > 0 || this.pending.length > 0 || this.timed.some((a) => a.atMs >= this.now); ) {
      t = Math.max(t + DRAIN_STEP_MS, this.pending[0]?.visibleMs ?? 0);
      await this.reach(t);
      if (this.live.size === 0 && this.pending.length === 0) break;
    }
    return [...this.records.values()];
  }

  /** The DC is gone: its requests' connections break (seen one way later); those without a first token are retried. */
  failInflight(dcName: string): void {
    for (const entry of this.live.values()) {
      if (entry.dc.name !== dcName) continue;
      this.fail(entry, this.now + entry.dc.oneWayMs);
    }
  }

  private schedule(p: Pending): void {
    let i = this.pending.length;
    while (i > 0 && this.pending[i - 1].visibleMs > p.visibleMs) i--;
    this.pending.splice(i, 0, p);
  }

  private at(action: TimedAction): void {
    let i = this.timed.length;
    while (i > 0 && this.timed[i - 1].atMs > action.atMs) i--;
    this.timed.splice(i, 0, action);
  }

  /** Brings every DC and the routers' view to `t`, running due actions and retries on the way. */
  private async reach(t: number): Promise<void> {
    while (this.timed.length > 0 && this.timed[0].atMs <= t) {
      const action = this.timed.shift()!;
      await this.reach(action.atMs);
      await action.run(this);
    }
    await this.options.clock.until(t, async (simNow) => {
      const to = Math.max(this.now, Math.min(simNow, t));
      await this.advanceAll(to);
      this.now = to;
    });
    await this.advanceAll(t);
    this.now = t;
    while (this.pending.length > 0 && this.pending[0].visibleMs <= t) this.pending.shift()!.apply();
  }

  private async advanceAll(toMs: number): Promise<void> {
    const dcs = this.options.dcs;
    const outputs = await Promise.all(dcs.map((dc) => (dc.up ? dc.advance(toMs) : Promise.resolve([]))));
    dcs.forEach((dc, i) => this.absorb(dc, outputs[i]));
  }

  private absorb(dc: DcPort, outputs: EngineOutput[]): void {
    for (const o of outputs) {
      if (o.kind === 'kv') continue;
      const entry = this.live.get(o.id);
      if (!entry || entry.dc !== dc) continue;
      const { record, booking } = entry;
      const visibleMs = o.atMs + dc.oneWayMs;
      if (o.kind === 'firstToken') {
        this.schedule({
          visibleMs,
          apply: () => {
            record.ttftMs ??= visibleMs - record.arrivalMs;
            record.cachedTokens ??= o.cachedTokens;
            booking.firstToken();
          },
        });
      } else {
        this.live.delete(o.id);
        this.schedule({
          visibleMs,
          apply: () => {
            record.e2eMs = visibleMs - record.arrivalMs;
            record.preemptions = o.preemptions;
            booking.release();
          },
        });
      }
    }
  }

  /** Routes the request now; a lost DC fails it after the timeout and it is routed again. */
  private dispatch(request: SimRequest, record: RequestRecord, tried: Set<string>): void {
    const result = this.options.routers[record.router].route(request, this.now);
    if (result.dc === null || tried.has(result.dc)) {
      // Nowhere to go (or only back where it just failed): it is not served.
      result.booking.release();
      record.dc = null;
      return;
    }
    const dc = this.byName.get(result.dc)!;
    record.dc = dc.name;
    record.routedMatchedTokens = result.matchedTokens;
    const entry: Live = { booking: result.booking, dc, request, record, tried: new Set([...tried, dc.name]) };
    this.live.set(request.id, entry);
    if (dc.up && dc.reachable) dc.arrive(request, this.now + dc.oneWayMs);
    else this.fail(entry, this.now + (this.options.failureTimeoutMs ?? DEFAULT_FAILURE_TIMEOUT_MS));
  }

  /** The attempt fails at `atMs`: the router is told (its health signal), and retries unless the first token already came. */
  private fail(entry: Live, atMs: number): void {
    this.live.delete(entry.request.id);
    this.at({
      atMs,
      run: async () => {
        entry.booking.fail();
        entry.record.failures++;
        if (entry.record.ttftMs !== null) return; // the response broke mid-stream: counted, not redone
        if (entry.record.failures < MAX_ATTEMPTS) this.dispatch(entry.request, entry.record, entry.tried);
        else entry.record.dc = null;
      },
    });
  }
}

export function drive(options: DriveOptions): Promise<RequestRecord[]> {
  return new Replay(options).run();
}
