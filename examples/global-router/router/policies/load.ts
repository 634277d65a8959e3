// The cache-blind baselines, each weighted by DC size (ranks) so a small DC is not sent as much as a
// large one: least load (fewest of this router's requests in flight per rank), random (in proportion
// to ranks) and smooth weighted round-robin (nginx's: the same proportions, evenly interleaved).
import type { Candidate } from '../candidates';
import { best, ranksOf, type Policy, type RandomSource } from './policy';

/** Fewest requests in flight per rank; ties at random. */
export function leastLoad(options: { random?: RandomSource } = {}): Policy {
  const random = options.random ?? Math.random;
  return { name: 'least-load', usesPrefix: false, choose: (candidates) => best(candidates, (c) => [-c.inflight / ranksOf(c)], random) };
}

/** A pool drawn with probability proportional to its ranks. */
export function randomChoice(options: { random?: RandomSource } = {}): Policy {
  const random = options.random ?? Math.random;
  return {
    name: 'random',
    usesPrefix: false,
    choose: (candidates) => {
      let u = random() * candidates.reduce((n, c) => n + ranksOf(c), 0);
      for (const c of candidates) if ((u -= ranksOf(c)) < 0) return c;
      return candidates[candidates.length - 1];
    },
  };
}

/** Smooth weighted round-robin over whatever is eligible; a pool that drops out is skipped, not waited for. */
export function roundRobin(): Policy {
  const current = new Map<string, number>();
  return {
    name: 'round-robin',
    usesPrefix: false,
    choose: (candidates) => {
      const key = (c: Candidate) => `${c.dc}/${c.poolKey}`;
      const total = candidates.reduce((n, c) => n + ranksOf(c), 0);
      let chosen = candidates[0];
      for (const c of candidates) {
        const w = (current.get(key(c)) ?? 0) + ranksOf(c);
        current.set(key(c), w);
        if (w > current.get(key(chosen))!) chosen = c;
      }
      current.set(key(chosen), current.get(key(chosen))! - total);
      return chosen;
    },
  };
}
