// How much work the kv-aware triage may give up on: no more than the cluster's measured excess. The
// router sums the work offered to it over a sliding window (each request's uncached prompt tokens,
// the unit of its estimate) and compares it with what the cluster serves in that window by the
// router's own model (ranks × the tokens per ms a rank sustains); only the difference, when there is
// one, may be given up on. Below capacity that is nothing: the triage never fires, so a window near
// the knee cannot tip into giving up on a whole DC. Conceptually Mooncake's overload-oriented
// scheduling (Qin et al., FAST 2025, §7): reject at arrival only what the cluster's predicted load
// cannot absorb, not every request that looks late.

/** Work the triage may still give up on, tokens: the window's excess over capacity, less what it already gave up on. Pure. */
export function excessBudgetTokens(offeredTokens: number, givenUpTokens: number, capacityTokensPerMs: number, windowMs: number): number {
  return Math.max(0, offeredTokens - capacityTokensPerMs * windowMs) - givenUpTokens;
}

export interface TriageBudgetOptions {
  /** Uncached prompt tokens one rank serves per ms in steady state (its prefill and its requests' decode). */
  sustainedTokensPerMs: number;
  /** The sliding window over which offered and given-up work are summed, ms. */
  windowMs: number;
  /**
   * Whose capacity the excess is over: the whole cluster's ('cluster'), or only that of the pools
   * the triage keeps serving within their targets ('kept': all but the one the given-up work goes to,
   * whose capacity that work still takes, as it is served there, late).
   */
  excess: 'cluster' | 'kept';
  /**
   * What the budget does: 'bound' caps the requests judged lost that are given up on; 'early' also
   * gives up, at arrival, on requests not yet judged lost while the excess is not used up (the larger
   * half of them by work: fewer requests for the same work), before the queues grow (Mooncake's
   * early rejection); requests judged lost are then given up on without a cap, as before the budget.
   */
  use: 'bound' | 'early';
}

/** The window is summed in this many buckets: memory is bounded whatever the request rate. */
const BUCKETS = 32;

interface Bucket {
  startMs: number;
  offered: number;
  requests: number;
  givenUp: number;
}

/**
 * The sliding window of offered and given-up work. Time is the caller's (a request's arrival on
 * the router's clock; simulated time in the simulation) and never runs backwards here.
 */
export class TriageBudget {
  private readonly bucketMs: number;
  private readonly buckets: Bucket[] = [];
  private nowMs = -Infinity;

  constructor(readonly options: Readonly<TriageBudgetOptions>) {
    for (const name of ['sustainedTokensPerMs', 'windowMs'] as const) if (!(Number.isFinite(options[name]) && options[name] > 0)) throw new RangeError(`triage budget ${name} must be a finite number > 0`);
    if (options.excess !== 'cluster' && options.excess !== 'kept') throw new RangeError("triage budget excess must be 'cluster' or 'kept'");
    if (options.use !== 'bound' && options.use !== 'early') throw new RangeError("triage budget use must be 'bound' or 'early'");
    this.bucketMs = options.windowMs / BUCKETS;
  }

  /** Counts a request's work as offered at `atMs`. */
  offer(atMs: number, tokens: number): void {
    const b = this.at(atMs);
    b.offered += tokens;
    b.requests++;
  }

  /** Mean work of the requests offered in the window, tokens (0 with none). */
  meanOffered(atMs: number): number {
    this.at(atMs);
    const { offered, requests } = this.sums();
    return requests === 0 ? 0 : offered / requests;
  }

  /** Whether a request of `tokens` may be given up on at `atMs` against the capacity of `ranks` ranks (it fits in the excess). */
  allows(atMs: number, tokens: number, ranks: number): boolean {
    this.at(atMs);
    const { offered, givenUp } = this.sums();
    return excessBudgetTokens(offered, givenUp, ranks * this.options.sustainedTokensPerMs, this.options.windowMs) >= tokens;
  }

  /** Counts a request's work as given up on at `atMs`. */
  giveUp(atMs: number, tokens: number): void {
    this.at(atMs).givenUp += tokens;
  }

  private sums(): { offered: number; requests: number; givenUp: number } {
    const sum = { offered: 0, requests: 0, givenUp: 0 };
    for (const b of this.buckets) {
      sum.offered += b.offered;
      sum.requests += b.requests;
      sum.givenUp += b.givenUp;
    }
    return sum;
  }

  /** The current bucket after dropping those that left the window. */
  private at(atMs: number): Bucket {
    this.nowMs = Math.max(this.nowMs, atMs);
    const start = Math.floor(this.nowMs / this.bucketMs) * this.bucketMs;
    while (this.buckets.length > 0 && this.buckets[0].startMs <= start - this.options.windowMs) this.buckets.shift();
    let last = this.buckets[this.buckets.length - 1];
    if (last === undefined || last.startMs !== start) {
      last = { startMs: start, offered: 0, requests: 0, givenUp: 0 };
      this.buckets.push(last);
    }
    return last;
  }
}
