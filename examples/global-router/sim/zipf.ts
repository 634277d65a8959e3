// Zipf-distributed ranks: item k (0-based) is drawn with probability ∝ 1 / (k + 1)^s.
import type { Rng } from '../../../src/sim/rng';

export class Zipf {
  private readonly cumulative: Float64Array;

  constructor(
    readonly n: number,
    readonly s: number,
  ) {
    if (!Number.isInteger(n) || n < 1) throw new RangeError('Zipf needs n ≥ 1 items');
    if (!Number.isFinite(s) || s < 0) throw new RangeError('Zipf exponent must be ≥ 0');
    this.cumulative = new Float64Array(n);
    let sum = 0;
    for (let k = 0; k < n; k++) this.cumulative[k] = sum += 1 / Math.pow(k + 1, s);
    for (let k = 0; k < n; k++) this.cumulative[k] /= sum;
  }

  /** Probability of item k. */
  p(k: number): number {
    return this.cumulative[k] - (k === 0 ? 0 : this.cumulative[k - 1]);
  }

  sample(rng: Rng): number {
    const u = rng.next();
    let lo = 0;
    let hi = this.n - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.cumulative[mid] > u) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  }
}
