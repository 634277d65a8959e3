import type { KvEventEndpointConfig, SourceKey } from './types';

/** Every (worker, rank) source of a worker's KV-event config. */
export function sourcesOf(config: KvEventEndpointConfig): SourceKey[] {
  return Array.from({ length: config.dpSize }, (_, i) => ({ workerId: config.workerId, dpRank: config.dpStartRank + i }));
}
