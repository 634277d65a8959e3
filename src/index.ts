// Package entry of kv-dc-relay: run a relay in-process, drive the service from your own source,
// consume a relay, and the wire/identity/hashing helpers both sides share.

// Running a relay
export { startRelay, type RelayProcessOptions, type RunningRelay } from './cli/serve';
export { Producer, type ProducerOptions } from './producer/producer';
export { startRelayServer, type RelayServer, type RelayServerConfig } from './transport/server';
export type {
  CatalogState,
  DeltaFrame,
  PoolFeed,
  PoolImage,
  PoolListener,
  PoolLoadState,
  ReadinessState,
  RelaySource,
  ServingLoadState,
  Unsubscribe,
} from './publication/source';
export { createLogger, silentLogger, type Logger } from './log';

// Configuration
export { loadConfigFile, parseConfigText, type ConfigOverrides } from './config/load';
export { watchConfigFile, type ConfigWatcher, type ConfigWatchOptions } from './config/watch';
export { ConfigError } from './config/errors';
export { relayConfigSchema, type RelayConfig, type EndpointConfig, type WorkerConfig, type AdapterConfig } from './config/schema';
export * as defaults from './config/defaults';

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
