// Messages between the main thread and the Dynamo event plane's thread (threaded.ts, thread.ts).
// Everything travels on the thread's one port, so bursts, resets and counters arrive in the order
// the thread produced them.
import type { ResetReason, SourceKey, SourceStats } from '../../ingest/types';
import type { HandoffBounds } from '../../ingest/threads/handoff';
import type { EventPlaneChannels, WorkerRanks } from '../discovery/project';
import type { DynamoPlaneMetrics } from './plane';
import type { AdvertisedSources } from './source-gate';

/** workerData of the thread. */
export interface PlaneThreadData {
  natsServers?: string[];
  /** The shared in-flight counter of its hand-off (HandoffCounter) and its ring (HandoffRing). */
  handoff: SharedArrayBuffer;
  ring: { data: SharedArrayBuffer; control: SharedArrayBuffer };
  bounds: HandoffBounds;
  statsIntervalMs: number;
}

export type ToPlane =
  | { type: 'update'; channels: EventPlaneChannels; workers: [bigint, WorkerRanks][]; sources?: AdvertisedSources }
  | { type: 'overflowed'; source: SourceKey; batches: number }
  | { type: 'close' };

export type FromPlane =
  /** A turn's bursts: `length` bytes at `base` of the ring, or of `buffer` (transferred) when the ring had no room. */
  | { type: 'events'; base: number; length: number; buffer?: ArrayBuffer }
  | { type: 'reset'; source: SourceKey; reason: ResetReason }
  | { type: 'stats'; sources: SourceStats[]; metrics: DynamoPlaneMetrics; reported: [bigint, [number, number][]][] }
  | { type: 'log'; level: 'info' | 'warn' | 'error'; obj: object; msg: string }
  | { type: 'updated' }
  | { type: 'closed' };
