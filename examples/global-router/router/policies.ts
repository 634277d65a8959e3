// Selection policies: given the eligible pools of every DC (never empty), pick one. A policy is a
// plain object, so users plug in their own; the four here are the ones the simulation compares.
import { DEFAULT_LOAD_WEIGHT, DEFAULT_PREFIX_WEIGHT } from './defaults';
import type { Candidate } from './candidates';

export interface Policy {
  readonly name: string;
  /** Whether the policy reads matchedTokens; when false the router does not hash the prompt. */
  readonly usesPrefix: boolean;
  choose(candidates: readonly Candidate[]): Candidate;
}

/** A uniform number in [0, 1); inject a seeded one for reproducible runs. */
export type RandomSource = () => number;

/** Fraction of the prompt cached in the pool; an unknown depth counts as nothing cached. */
export function cachedFraction(c: Candidate): number {
  return c.promptTokens === 0 || c.matchedTokens === null ? 0 : Math.min(c.matchedTokens, c.promptTokens) / c.promptTokens;
}

/**
 * The busier of two views of the pool: this router's outstanding requests over the pool's
 * concurrency (exact for its own traffic, no lag) and the relay's KV usage (all traffic, including
 * other routers', one load window plus WAN behind).
 */
export function utilization(c: Candidate): number {
  return Math.max(c.inflight / c.capacity, c.kvUsage ?? 0);
}

export interface KvAwareOptions {
  prefixWeight?: number;
  loadWeight?: number;
  random?: RandomSource;
}

/** Highest prefixWeight × cachedFraction − loadWeight × utilization; ties go to the less loaded, then at random. */
export function kvAware(options: KvAwareOptions = {}): Policy {
  const prefixWeight = nonNegative('prefixWeight', options.prefixWeight ?? DEFAULT_PREFIX_WEIGHT);
  const loadWeight = nonNegative('loadWeight', options.loadWeight ?? DEFAULT_LOAD_WEIGHT);
  const random = options.random ?? Math.random;
  return {
    name: 'kv-aware',
    usesPrefix: true,
    choose: (candidates) =>
      best(candidates, (c) => [prefixWeight * cachedFraction(c) - loadWeight * utilization(c), -utilization(c)], random),
  };
}

/** Lowest utilization; ties at random. */
export function loadOnly(options: { random?: RandomSource } = {}): Policy {
  const random = options.random ?? Math.random;
  return { name: 'load-only', usesPrefix: false, choose: (candidates) => best(candidates, (c) => [-utilization(c)], random) };
}

export function randomChoice(options: { random?: RandomSource } = {}): Policy {
  const random = options.random ?? Math.random;
  return { name: 'random', usesPrefix: false, choose: (candidates) => candidates[Math.floor(random() * candidates.length)] };
}

/** Cycles over the eligible pools in DC order; a pool that drops out is skipped, not waited for. */
export function roundRobin(): Policy {
  let next = 0;
  return {
    name: 'round-robin',
    usesPrefix: false,
    choose: (candidates) => candidates[next++ % candidates.length],
  };
}

export const POLICY_NAMES = ['kv-aware', 'load-only', 'random', 'round-robin'] as const;
export type PolicyName = (typeof POLICY_NAMES)[number];

export function policyByName(name: PolicyName, options: KvAwareOptions = {}): Policy {
  switch (name) {
    case 'kv-aware':
      return kvAware(options);
    case 'load-only':
      return loadOnly(options);
    case 'random':
      return randomChoice(options);
    case 'round-robin':
      return roundRobin();
  }
}

/** The candidate with the lexicographically largest key; exact ties are broken at random. */
function best(candidates: readonly Candidate[], key: (c: Candidate) => number[], random: RandomSource): Candidate {
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

function nonNegative(name: string, value: number): number {
  if (!Number.isFinite(value) || value < 0) throw new RangeError(`${name} must be a finite number ≥ 0`);
  return value;
}
