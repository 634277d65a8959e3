// Each pool's recent delta latencies (the relay's share of event→delta), for the p99 the status
// view shows per pool: the /metrics histogram is over every pool and over the process's life. A
// fixed ring per pool, so a pool costs the same whatever its delta rate.

class Ring {
  readonly values: Float64Array;
  readonly times: Float64Array;
  next = 0;
  size = 0;

  constructor(capacity: number) {
    this.values = new Float64Array(capacity);
    this.times = new Float64Array(capacity);
  }
}

export class RecentLatency {
  private readonly rings = new Map<string, Ring>();
  /** p99()'s working copy: a typed array sorts numerically without a comparator or a JS array per call. */
  private readonly scratch: Float64Array;

  constructor(
    private readonly samples: number,
    private readonly windowMs: number,
  ) {
    this.scratch = new Float64Array(samples);
  }

  observe(pool: string, latencyMs: number, now: number): void {
    let ring = this.rings.get(pool);
    if (!ring) this.rings.set(pool, (ring = new Ring(this.samples)));
    ring.values[ring.next] = latencyMs;
    ring.times[ring.next] = now;
    ring.next = (ring.next + 1) % this.samples;
    ring.size = Math.min(ring.size + 1, this.samples);
  }

  /** The p99 (nearest rank) of `pool`'s deltas of the last windowMs; null when it published none. */
  p99(pool: string, now: number): number | null {
    const ring = this.rings.get(pool);
    if (!ring) return null;
    let n = 0;
    for (let i = 0; i < ring.size; i++) if (now - ring.times[i] < this.windowMs) this.scratch[n++] = ring.values[i];
    if (n === 0) return null;
    const recent = this.scratch.subarray(0, n).sort();
    return recent[Math.ceil(0.99 * n) - 1];
  }

  /** Forgets the pools not in `pools` (withdrawn). */
  keep(pools: ReadonlySet<string>): void {
    for (const pool of this.rings.keys()) if (!pools.has(pool)) this.rings.delete(pool);
  }
}
