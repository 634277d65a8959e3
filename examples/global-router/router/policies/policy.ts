// What every selection policy shares: the interface, the candidate arithmetic they score with, and
// the arg-max with seeded tie-breaking. A policy is a plain object, so users plug in their own.
import type { Candidate } from '../candidates';

export interface PolicyRequest {
  tokens: ArrayLike<number>;
  /** The request's time-to-first-token target, ms, when the caller has one (policies may ignore it). */
  ttftSloMs?: number;
}

export interface Policy {
  readonly name: string;
  /** Whether the policy reads matchedTokens; when false the router does not hash the prompt. */
  readonly usesPrefix: boolean;
  /** Picks one of the eligible pools (never called with none). */
  choose(candidates: readonly Candidate[], request: PolicyRequest): Candidate;
}

/** A uniform number in [0, 1); inject a seeded one for reproducible runs. */
export type RandomSource = () => number;

/** Fraction of the prompt cached in the pool; an unknown depth counts as nothing cached. */
export function cachedFraction(c: Candidate): number {
  return c.promptTokens === 0 || c.matchedTokens === null ? 0 : Math.min(c.matchedTokens, c.promptTokens) / c.promptTokens;
}

/** Prompt tokens the pool would have to prefill (an unknown depth counts as nothing cached). */
export function uncachedTokens(c: Candidate): number {
  return c.promptTokens - Math.min(c.matchedTokens ?? 0, c.promptTokens);
}

/** The pool's size in ranks, 1 when its relay has not said: what "per rank" divides by. */
export function ranksOf(c: Candidate): number {
  return c.ranks ?? 1;
}

/** The candidate with the lexicographically largest key; exact ties are broken with the random source. */
export function best(candidates: readonly Candidate[], key: (c: Candidate) => number[], random: RandomSource): Candidate {
  let top: Candidate[] = [];
  let topKey: number[] = [];
  for (const c of candidates) {
    const k = key(c);
    const order = top.length === 0 ? 1 : compare(k, topKey);
    if (order > 0) {
      top = [c];
      topKey = k;
    } else if (order === 0) {
      top.push(c);
    }
  }
  return top.length === 1 ? top[0] : top[Math.floor(random() * top.length)];
}

function compare(a: number[], b: number[]): number {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i] > b[i] ? 1 : -1;
  return 0;
}

export function nonNegative(name: string, value: number): number {
  if (!Number.isFinite(value) || value < 0) throw new RangeError(`${name} must be a finite number ≥ 0`);
  return value;
}

export function positive(name: string, value: number): number {
  if (!Number.isFinite(value) || value <= 0) throw new RangeError(`${name} must be a finite number > 0`);
  return value;
}
