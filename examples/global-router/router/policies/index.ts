// The policies the router ships and the simulation compares, by name.
import { consistentHash, type ConsistentHashOptions } from './consistent-hash';
import { dynamoCostPolicy, type DynamoCostOptions } from './dynamo-cost';
import { kvAware, type KvAwareOptions } from './kv-aware';
import { llmdScorer, type LlmdScorerOptions } from './llmd-scorer';
import { leastLoad, randomChoice, roundRobin } from './load';
import type { Policy, RandomSource } from './policy';

export * from './policy';
export { estimatedTtftMs, kvAware, shortestQueue, unstretchedTtftMs, type KvAwareOptions } from './kv-aware';
export { dynamoCost, dynamoCostPolicy, type DynamoCostOptions } from './dynamo-cost';
export { llmdScorer, type LlmdScorerOptions } from './llmd-scorer';
export { consistentHash, type ConsistentHashOptions } from './consistent-hash';
export { leastLoad, randomChoice, roundRobin } from './load';

export const POLICY_NAMES = ['kv-aware', 'dynamo-cost', 'llm-d', 'chwbl', 'least-load', 'round-robin', 'random'] as const;
export type PolicyName = (typeof POLICY_NAMES)[number];

export type PolicyOptions = { random?: RandomSource } & Omit<KvAwareOptions, 'random'> &
  Omit<DynamoCostOptions, 'random'> &
  Omit<LlmdScorerOptions, 'random'> & { chwbl?: ConsistentHashOptions };

export function policyByName(name: PolicyName, options: PolicyOptions = {}): Policy {
  switch (name) {
    case 'kv-aware':
      return kvAware(options);
    case 'dynamo-cost':
      return dynamoCostPolicy(options);
    case 'llm-d':
      return llmdScorer(options);
    case 'chwbl':
      return consistentHash(options.chwbl);
    case 'least-load':
      return leastLoad(options);
    case 'round-robin':
      return roundRobin();
    case 'random':
      return randomChoice(options);
  }
}
