// Package entry of kv-dc-relay: run a relay in-process, drive the service from your own source,
// consume a relay, and the wire/identity/hashing helpers both sides share.

// Running a relay, and its configuration (also `kv-dc-relay/server`)
export * from './server';

// Consuming a relay
export * from './client';

// etcd discovery: an engine sidecar's worker registration, and the shards' addresses for a ShardedRelayClient
export { registerWorker, WorkerRegistration, type WorkerRegistrationOptions } from './discovery/register';
export { EtcdShardAddresses } from './discovery/shard-addresses';

// Shared building blocks
export * as wire from './wire';
export * as identity from './identity';
export * as native from './native';
export * as ingest from './ingest';
export { SimulatedEngine, type SimulatedEngineOptions } from './sim';
