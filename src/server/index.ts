// `kv-dc-relay/server`: run a relay in-process (startRelay, as `kv-dc-relay serve` does), or drive
// the gRPC service from your own RelaySource; config loading and logging to go with them.
export { startRelay, type RelayProcessOptions, type RunningRelay } from './start-relay';
export { Producer, type ProducerOptions } from '../producer/producer';
export { startRelayServer, type RelayServer, type RelayServerConfig } from '../transport/server';
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
} from '../publication/source';
export { createLogger, silentLogger, type Logger } from '../log';
export { loadConfigFile, parseConfigText, type ConfigOverrides } from '../config/load';
export { watchConfigFile, type ConfigWatcher, type ConfigWatchOptions } from '../config/watch';
export { ConfigError } from '../config/errors';
export { relayConfigSchema, type RelayConfig, type EndpointConfig, type WorkerConfig, type AdapterConfig } from '../config/schema';
export * as defaults from '../config/defaults';
