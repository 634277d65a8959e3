// A KV-aware global router over kv-dc-relay: one RelayClient per remote DC, a pluggable policy.
export { GlobalRouter, type DcTarget, type Decision, type GlobalRouterEvents, type GlobalRouterOptions, type RouteRequest } from './global-router';
export { dcCandidates, NO_WORK, type Candidate, type DcInput, type LastResort, type PoolWork, type SkipReason, type Skipped } from './candidates';
export * from './policies';
export * from './defaults';
