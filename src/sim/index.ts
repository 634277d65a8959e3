export { SimulatedEngine, type SimulatedEngineOptions, type PublishOptions } from './engine';
export { encodeBatch, type SimEvent, type EventEncoding, type HashEncoding, type EncodeOptions } from './encode';
export { Workload, type Prompt, type WorkloadOptions } from './workload';
export type { RankGauges } from './http';
