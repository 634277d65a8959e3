// The messages between the replay driver and a DC process (Node's IPC channel, structured clone).
import type { EngineOutput, RankGauges } from '../engine/dc-engine';
import type { RankConfig } from '../engine/rank';
import type { SimRequest } from '../request';

export interface DcProcessConfig {
  name: string;
  ranks: number;
  /** The engine model's rank configuration (the calibration travels with it). */
  rank: RankConfig;
  model: string;
}

export type ToDc =
  | { type: 'start'; config: DcProcessConfig }
  | { type: 'arrive'; request: SimRequest; atMs: number }
  | { type: 'advance'; seq: number; toMs: number }
  | { type: 'stop' };

/** First tokens and completions only: KV events go to the relay over ZMQ, not to the driver. */
export type Lifecycle = Exclude<EngineOutput, { kind: 'kv' }>;

export type FromDc =
  | { type: 'ready'; pubEndpoint: string; replayEndpoint: string; httpUrl: string }
  | { type: 'subscribed' }
  | { type: 'advanced'; seq: number; outputs: Lifecycle[]; gauges: RankGauges[] }
  | { type: 'error'; message: string };
