// A KV-aware global router over kv-dc-relay: one RelayClient per remote DC, a pluggable policy.
export { GlobalRouter, type DcTarget, type Decision, type GlobalRouterEvents, type GlobalRouterOptions, type RouteRequest } from './global-router';
export { dcCandidates, type Candidate, type DcInput, type SkipReason, type Skipped } from './candidates';
export {
  cachedFraction,
  kvAware,
  loadOnly,
  policyByName,
  POLICY_NAMES,
  randomChoice,
  roundRobin,
  utilization,
  type KvAwareOptions,
  type Policy,
  type PolicyName,
  type RandomSource,
} from './policies';
export * from './defaults';
