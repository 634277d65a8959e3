// Whether the soak's relay grew: the decision on the sampled RSS and heap, apart from the run that
// samples them, so that it can be tested on its own (test/bench/soak-growth.test.ts).
import type { SoakSample } from './relay-host';

const MIB = 2 ** 20;

export interface GrowthLimits {
  /** MiB per minute over the last half of the run. */
  maxRssSlope: number;
  maxHeapSlope: number;
}

export interface Growth {
  /** Least-squares slopes over the last half, MiB per minute. */
  rssSlope: number;
  heapSlope: number;
  rssGrew: boolean;
  heapGrew: boolean;
}

/** Least-squares slope of `values` over `timesS`, per minute. */
export function slopePerMinute(timesS: number[], values: number[]): number {
  const n = values.length;
  if (n < 2) return 0;
  const mt = timesS.reduce((a, b) => a + b, 0) / n;
  const mv = values.reduce((a, b) => a + b, 0) / n;
  let num = 0;
  let den = 0;
  for (let i = 0; i < n; i++) {
    num += (timesS[i] - mt) * (values[i] - mv);
    den += (timesS[i] - mt) ** 2;
  }
  return den === 0 ? 0 : (num / den) * 60;
}

/**
 * Growth over the last half of the run (the first half is warm-up: JIT, pools, buffers). A slope
 * alone is noise on a plateau (one RSS dip mid-half made 11 MiB/min of a flat minute): growth also
 * needs the last half's peak above the first half's by what the limit allows over that half.
 */
export function memoryGrowth(samples: readonly SoakSample[], limits: GrowthLimits): Growth {
  if (samples.length < 2) throw new RangeError('memoryGrowth needs at least 2 samples');
  const half = samples.slice(Math.floor(samples.length / 2));
  const firstHalf = samples.slice(0, samples.length - half.length);
  const t = half.map((s) => s.tMs / 1000);
  const halfMinutes = (half[half.length - 1].tMs - half[0].tMs) / 60_000;
  const grew = (value: (s: SoakSample) => number, limit: number): { slope: number; grew: boolean } => {
    const slope = slopePerMinute(t, half.map(value));
    const peakRise = Math.max(...half.map(value)) - Math.max(...firstHalf.map(value));
    return { slope, grew: slope > limit && peakRise > limit * halfMinutes };
  };
  const rss = grew((s) => s.rssBytes / MIB, limits.maxRssSlope);
  const heap = grew((s) => s.heapUsedBytes / MIB, limits.maxHeapSlope);
  return { rssSlope: rss.slope, heapSlope: heap.slope, rssGrew: rss.grew, heapGrew: heap.grew };
}
