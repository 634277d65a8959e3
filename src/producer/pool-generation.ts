// What the producer holds of one pool generation, wherever its state lives: a PoolActor on the main
// thread, or a pool hosted on an ingest thread (thread-pools.ts).
import type { PackedEngineEvents, SourceKey } from '../ingest/types';
import type { PoolMetrics } from '../metrics/registry';
import type { PoolFeed } from '../publication/source';

export interface PoolGeneration extends PoolFeed {
  readonly isEnded: boolean;
  /** A burst of its sources (copied; applied in order): IngestSink.events. */
  events(b: PackedEngineEvents): Promise<void> | undefined;
  /** The source's history is lost: its blocks are dropped, in order with its batches. */
  reset(source: SourceKey): void;
  /** Withdrawal, replacement or shutdown: the listener hears `retired` after queued work ends. */
  retire(): Promise<void>;
  metrics(): PoolMetrics;
  /** Settles (never rejects) once its native state was freed, after it ended: a successor may reserve then. */
  readonly released: Promise<void>;
}
