// Consistent hashing with bounded loads (Mirrokni, Thorup, Zadimoghaddam, SODA 2018; KubeAI's
// prefix-hash routing): the prompt's first tokens pick a point on a ring where each DC has points in
// proportion to its ranks; the request goes to the first DC clockwise whose load is under
// ⌈c × (total load + 1) × its share⌉. Sessions and shared prefixes stick to one DC without looking at
// any cache, and no DC takes more than c times its share. Load is this router's requests in flight.
import { DEFAULT_CHWBL_KEY_TOKENS, DEFAULT_CHWBL_LOAD_FACTOR, DEFAULT_CHWBL_POINTS_PER_RANK } from '../defaults';
import type { Candidate } from '../candidates';
import { positive, ranksOf, type Policy, type PolicyRequest } from './policy';
import { fnv1a, mixPoint } from './hash-ring';

export interface ConsistentHashOptions {
  /** Leading prompt tokens that form the key. */
  keyTokens?: number;
  /** c ≥ 1: how far above its share a DC may go. */
  loadFactor?: number;
  pointsPerRank?: number;
}

interface Ring {
  signature: string;
  /** Sorted points and the pool key each belongs to. */
  points: Float64Array;
  owners: string[];
}

export function consistentHash(options: ConsistentHashOptions = {}): Policy {
  const keyTokens = Math.floor(positive('keyTokens', options.keyTokens ?? DEFAULT_CHWBL_KEY_TOKENS));
  const loadFactor = positive('loadFactor', options.loadFactor ?? DEFAULT_CHWBL_LOAD_FACTOR);
  if (loadFactor < 1) throw new RangeError('loadFactor must be ≥ 1');
  const pointsPerRank = Math.floor(positive('pointsPerRank', options.pointsPerRank ?? DEFAULT_CHWBL_POINTS_PER_RANK));
  let ring: Ring | null = null;
  return {
    name: 'chwbl',
    usesPrefix: false,
    choose: (candidates: readonly Candidate[], request: PolicyRequest) => {
      const signature = candidates.map((c) => `${c.dc}/${c.poolKey}×${ranksOf(c)}`).join(',');
      if (ring?.signature !== signature) ring = buildRing(candidates, pointsPerRank, signature);
      const byKey = new Map(candidates.map((c) => [`${c.dc}/${c.poolKey}`, c]));
      const total = candidates.reduce((n, c) => n + c.inflight, 0);
      const weight = candidates.reduce((n, c) => n + ranksOf(c), 0);
      const under = (c: Candidate) => c.inflight < Math.ceil((loadFactor * (total + 1) * ranksOf(c)) / weight);
      const start = lowerBound(ring.points, fnv1a(request.tokens, keyTokens));
      for (let i = 0; i < ring.points.length; i++) {
        const c = byKey.get(ring.owners[(start + i) % ring.points.length])!;
        if (under(c)) return c;
      }
      return byKey.get(ring.owners[start % ring.points.length])!; // unreachable: some DC is always under its bound
    },
  };
}

function buildRing(candidates: readonly Candidate[], pointsPerRank: number, signature: string): Ring {
  const entries: [number, string][] = [];
  for (const c of candidates) {
    const owner = `${c.dc}/${c.poolKey}`;
    for (let i = 0; i < pointsPerRank * ranksOf(c); i++) entries.push([mixPoint(owner, i), owner]);
  }
  entries.sort((a, b) => a[0] - b[0] || (a[1] < b[1] ? -1 : 1));
  return { signature, points: Float64Array.from(entries.map((e) => e[0])), owners: entries.map((e) => e[1]) };
}

/** First index whose point is ≥ x (wrapping to 0). */
function lowerBound(points: Float64Array, x: number): number {
  let lo = 0;
  let hi = points.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (points[mid] < x) lo = mid + 1;
    else hi = mid;
  }
  return lo % points.length;
}
