// Longest-prefix search over a replica (hashing-ckf-cbi1.md §2.6), for one lane. The CKF cannot
// prove absence of interior holes, so the search probes O(log n) positions instead of all of them
// and then verifies a short window below the tentative depth; the result is advisory.

/** `probe(pos)` answers whether the sequence hash at block position `pos` is in the filter. */
export type Probe = (pos: number) => boolean;

/**
 * Depth (number of leading matched blocks) found by exponential galloping, binary refinement, a
 * verification window of `window` positions below the tentative depth, and the linear fallback
 * when the first verified position already misses.
 */
export function findPrefixDepth(n: number, probe: Probe, window: number): number {
  if (!Number.isInteger(window) || window < 1) throw new RangeError(`verification window must be >= 1, got ${window}`);
  if (n <= 0 || !probe(0)) return 0;
  let lower = 0;
  let lowerPred = 0;
  let upper = n;
  for (let pos = 1; pos < n; pos *= 2) {
    if (!probe(pos)) {
      upper = pos;
      break;
    }
    lowerPred = lower;
    lower = pos;
  }
  while (upper - lower > 1) {
    const mid = lower + Math.floor((upper - lower) / 2);
    if (probe(mid)) {
      lowerPred = lower;
      lower = mid;
    } else {
      upper = mid;
    }
  }
  const windowStart = Math.max(upper - window, 0);
  for (let pos = windowStart; pos < upper; pos++) {
    if (probe(pos)) continue;
    if (pos !== windowStart) return pos;
    return fallbackDepth(lowerPred + 1, windowStart, probe);
  }
  return upper;
}

/** The linear scan below a verification window that missed at its first position. */
function fallbackDepth(start: number, end: number, probe: Probe): number {
  // start - 1 is lowerPred: positions at or below it were seen as hits by the search.
  if (start - 1 >= end || start === end) return end;
  for (let pos = start; pos < end; pos++) if (!probe(pos)) return pos;
  return end;
}

/** The first-miss oracle (tests and diagnostics): every position is probed. */
export function linearPrefixDepth(n: number, probe: Probe): number {
  for (let pos = 0; pos < n; pos++) if (!probe(pos)) return pos;
  return Math.max(n, 0);
}
