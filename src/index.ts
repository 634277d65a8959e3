// Package entry of kv-dc-relay: run a relay in-process, drive the service from your own source,
// consume a relay, and the wire/identity/hashing helpers both sides share. Kept for compatibility:
// it loads everything. The subpaths `kv-dc-relay/client`, `/server`, `/discovery`, `/native` and
// `/wire` load only their part (a router imports `kv-dc-relay/client`: no server, zeromq or etcd3).

// Running a relay, and its configuration (also `kv-dc-relay/server`)
export * from './server';

// Consuming a relay
export * from './client';

// etcd discovery: an engine sidecar's worker registration, and the shards' addresses for a ShardedRelayClient
// (also `kv-dc-relay/discovery`)
export * from './discovery';

// Shared building blocks
export * as wire from './wire';
export * as identity from './identity';
export * as native from './native';
export * as ingest from './ingest';
export { SimulatedEngine, type SimulatedEngineOptions } from './sim';
