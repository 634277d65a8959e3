// `kv-dc-relay/client`: the consumer library of dynamo.kvrelay.v1.KvEventRelay. Loads no server code,
// no zeromq and no etcd3 (the etcd address source of ShardedRelayClient is `kv-dc-relay/discovery`).
export { RelayClient } from './relay-client';
export { ShardedRelayClient, type ShardAddressSource, type ShardedRelayClientEvents } from './shards';
export type { RelayClientEvents, RelayClientOptions } from './relay-client';
export type { PoolFilter, PoolReplicaStatus, ReplicaEvent } from './pool-replicas';
export type { ClientErrorEvent } from './stream-events';
export type { CatalogPool, CatalogValue } from './catalog-plane';
export type { ReadinessValue } from './readiness-plane';
export type { PoolLoadValue, ServingLoadValue } from './load-plane';
export type { Plane, Quarantined } from './plane-error';
export type { PoolQueryResult, QueryRequest, QueryResult, ReadinessName } from './query';
export type { ReplicaStats, ReplicaFaultReason } from './replica';
export type { BackoffOptions } from './backoff';
export { ReplicaBudget, type ReplicaBudgetLimits, type ReplicaBudgetUsage } from './replica-budget';
export { findPrefixDepth, linearPrefixDepth } from './prefix-search';
export { readClientTlsFiles, type ClientTlsFiles, type ClientTlsOptions } from '../security/client-tls';
// For a consumer's own command line (the global router example): the same --tls* flags as `query`.
export { CLIENT_TLS_FLAGS, CLIENT_TLS_USAGE, clientTlsFromFlags, type ClientTlsFlagValues } from './tls-flags';
export * from './views';
// A load stream's silence floor, for a consumer that judges silence itself (the global router example).
export { LOAD_SILENCE_MIN_MS } from '../config/defaults';
