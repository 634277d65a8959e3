// Relay config files for tests that run a relay over simulated engines: one worker per engine,
// endpoints of model llama (block size BS) under prod.*.generate.
import type { SimulatedEngine } from '../../src/sim';

export const BS = 4;

export interface WorkerOptions {
  health?: boolean;
  /** Metrics URL; true = the engine's own /metrics. */
  metrics?: boolean | string;
  replay?: boolean;
  totalKvBlocks?: number;
}

/** What a worker's config needs of its engine (in this process or another: engine-process.ts). */
export type EngineEndpoints = Pick<SimulatedEngine, 'dpSize' | 'dpStartRank' | 'pubEndpoint' | 'replayEndpoint' | 'httpUrl'>;

export function workerConfig(id: number, engine: EngineEndpoints, o: WorkerOptions = {}): Record<string, unknown> {
  const metricsUrl = o.metrics === true ? `${engine.httpUrl}/metrics` : o.metrics || undefined;
  return {
    id,
    dpSize: engine.dpSize,
    dpStartRank: engine.dpStartRank,
    totalKvBlocks: o.totalKvBlocks ?? 100,
    live: true,
    ...(o.health ? { health: { url: `${engine.httpUrl}/health` } } : {}),
    ...(metricsUrl ? { metrics: { url: metricsUrl, format: 'vllm' } } : {}),
    kvEvents: {
      endpoint: engine.pubEndpoint,
      ...(o.replay !== false && engine.replayEndpoint ? { replayEndpoint: engine.replayEndpoint } : {}),
    },
  };
}

export interface EndpointOptions {
  component?: string;
  model?: Record<string, unknown>;
  workerType?: string;
  needs?: string[][];
  adapters?: Record<string, unknown>[];
  indexerIdentity?: Record<string, unknown>;
}

export function endpointConfig(workers: Record<string, unknown>[], o: EndpointOptions = {}): Record<string, unknown> {
  return {
    namespace: 'prod',
    component: o.component ?? 'backend',
    endpoint: 'generate',
    model: { name: 'llama', kvBlockSize: BS, ...o.model },
    workerType: o.workerType ?? 'aggregated',
    ...(o.needs ? { needs: o.needs } : {}),
    ...(o.adapters ? { adapters: o.adapters } : {}),
    ...(o.indexerIdentity ? { indexerIdentity: o.indexerIdentity } : {}),
    workers,
  };
}

/** A relay on loopback ports picked by the OS; `over` replaces top-level fields. */
export function relayConfig(endpoints: Record<string, unknown>[], over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    dcId: 'dc-e2e',
    bind: '127.0.0.1:0',
    metricsBind: '127.0.0.1:0',
    expectedUniqueBlocks: 4096,
    timing: { publicationDelayMs: 1, loadWindowMs: 200, healthProbeMs: 100 },
    endpoints,
    ...over,
  };
}
