// One DC's engine: its data-parallel ranks behind the DC's own router, as a discrete-event model on
// simulated time. Arrivals and step ends are processed in time order up to the time the caller
// advances to; the outputs (KV events per rank, first tokens, finished requests) carry their exact
// simulated times, so nothing depends on how fast the host runs. At equal times, steps ending are
// applied first, then arrivals join, then idle ranks start their next step.
//
// The DC's router knows its ranks exactly (as a DC-local KV router does): a request goes to the rank
// with the least prefill work ahead of it counting what that rank has cached, then the fewest
// requests, then the lowest index.
import { newSeq, Rank, type EngineRequest, type RankConfig, type Seq, type StoredRun } from './rank';

export type EngineOutput =
  | { kind: 'kv'; rank: number; atMs: number; removed: number[]; stored: StoredRun[] }
  | { kind: 'firstToken'; id: number; rank: number; atMs: number; cachedTokens: number }
  | { kind: 'finished'; id: number; rank: number; atMs: number; preemptions: number };

export interface RankGauges {
  running: number;
  waiting: number;
  /** Blocks held by running requests / capacity (vLLM's kv_cache_usage_perc). */
  kvCacheUsage: number;
}

export class DcEngine {
  readonly ranks: Rank[];
  private readonly arrivals: { atMs: number; req: EngineRequest }[] = [];
  private nowMs = 0;

  constructor(ranks: number, config: RankConfig) {
    if (!Number.isInteger(ranks) || ranks < 1) throw new RangeError('a DC needs at least one rank');
    this.ranks = Array.from({ length: ranks }, (_, i) => new Rank(i, config));
  }

  /** Simulated time the engine has been advanced to. */
  get now(): number {
    return this.nowMs;
  }

  /** A request reaches the DC at `atMs` (not before the time already advanced to, nor before the previous arrival). */
  arrive(req: EngineRequest, atMs: number): void {
    const last = this.arrivals[this.arrivals.length - 1]?.atMs ?? this.nowMs;
    if (!(atMs >= last)) throw new RangeError(`arrival at ${atMs} ms is before ${last} ms`);
    this.arrivals.push({ atMs, req });
  }

  /** Processes everything up to `toMs` (inclusive); returns what happened, in time order. */
  advance(toMs: number): EngineOutput[] {
    if (toMs < this.nowMs) throw new RangeError(`cannot go back from ${this.nowMs} ms to ${toMs} ms`);
    const out: EngineOutput[] = [];
    for (;;) {
      const t = this.nextEventMs();
      if (t === null || t > toMs) break;
      for (const rank of this.ranks) if (rank.busyUntil === t) this.finishStep(rank, out);
      while (this.arrivals.length > 0 && this.arrivals[0].atMs === t) this.route(this.arrivals.shift()!.req);
      for (const rank of this.ranks) rank.start(t);
    }
    this.nowMs = toMs;
    return out;
  }

  gauges(rank: number): RankGauges {
    const r = this.ranks[rank];
    return { running: r.running.length, waiting: r.waiting.length, kvCacheUsage: r.pool.used / r.pool.capacity };
  }

  /** Requests not finished yet (waiting or running on any rank, or still to arrive). */
  get inflight(): number {
    return this.arrivals.length + this.ranks.reduce((n, r) => n + r.running.length + r.waiting.length, 0);
  }

  private nextEventMs(): number | null {
    let t = this.arrivals.length > 0 ? this.arrivals[0].atMs : Infinity;
    for (const rank of this.ranks) if (rank.busyUntil !== null && rank.busyUntil < t) t = rank.busyUntil;
    return t === Infinity ? null : t;
  }

  private finishStep(rank: Rank, out: EngineOutput[]): void {
    const step = rank.finish();
    if (step.removed.length > 0 || step.stored.length > 0) out.push({ kind: 'kv', rank: rank.index, atMs: step.endMs, removed: step.removed, stored: step.stored });
    for (const s of step.firstTokens) out.push({ kind: 'firstToken', id: s.req.id, rank: rank.index, atMs: step.endMs, cachedTokens: s.cachedTokens ?? 0 });
    for (const s of step.finished) out.push({ kind: 'finished', id: s.req.id, rank: rank.index, atMs: step.endMs, preemptions: s.preemptions });
  }

  private route(req: EngineRequest): void {
    const seq: Seq = newSeq(req);
    const { blockSize } = this.ranks[0].config;
    let best: Rank = this.ranks[0];
    let bestKey: [number, number] = [Infinity, Infinity];
    for (const rank of this.ranks) {
      const uncached = req.promptTokens - rank.reusableBlocks(seq) * blockSize;
      const key: [number, number] = [rank.pendingPrefillTokens() + uncached, rank.running.length + rank.waiting.length];
      if (key[0] < bestKey[0] || (key[0] === bestKey[0] && key[1] < bestKey[1])) {
        best = rank;
        bestKey = key;
      }
    }
    best.enqueue(seq);
  }
}
