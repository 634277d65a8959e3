// Messages between a pool hosted on an ingest thread (pool-host.ts) and its main-thread side
// (thread-pools.ts), carried as the ingest thread's host messages (ingest/threads/protocol.ts).
// Pools are named by an id the main thread chooses; every message about one pool travels on its
// thread's one port, in order.
import type { PackedEngineEvents, SourceKey } from '../ingest/types';
import type { PoolReservation } from '../native';
import type { ProducerIdentity } from '../wire/types';

/** What a hosted PoolActor is made with (PoolActorOptions that cross threads). */
export interface HostedPoolOptions {
  key: string;
  producer: ProducerIdentity;
  dcId: bigint;
  publicationThreshold: number;
  publicationDelayMs: number;
  /** Tracked-block bound of the pool state (limits.maxTrackedBlocksPerPool); default: the native maximum. */
  maxTrackedBlocks?: number;
  /** Tables sized at creation (limits.reservePoolBlocks over the pool's sources); default: none. */
  reserve?: PoolReservation;
}

export type ToPoolHost =
  /**
   * `counters`: the memory of its PoolCounters, read by the main thread; `unhandled`: one Int32, the
   * deltas posted that the main thread has not handled yet (PoolActorOptions.listenerBehind).
   */
  | {
      type: 'open';
      pool: number;
      options: HostedPoolOptions;
      counters: SharedArrayBuffer;
      unhandled: SharedArrayBuffer;
      /** Its state waits for a 'predecessorReleased' (PoolActorOptions.after). */
      awaitPredecessor: boolean;
    }
  /** The generation it replaces freed its tables: its state may be made now. */
  | { type: 'predecessorReleased'; pool: number }
  /** PoolFeed.attach with the thread's listener; answered by an 'image' of the same request. */
  | { type: 'attach'; pool: number; request: number }
  | { type: 'detach'; pool: number }
  | { type: 'pace'; pool: number; stretch: number }
  /** A burst handed to the pool on the main thread (Producer.events; its subscriptions' bursts never leave the thread). */
  | { type: 'events'; pool: number; burst: PackedEngineEvents }
  | { type: 'reset'; pool: number; source: SourceKey }
  /** Answered by 'ended' (retired) once the pool's queued work ended. */
  | { type: 'retire'; pool: number };

export type FromPoolHost =
  /** A delta for the listener; `handoffMs` and `admittedAtMs` (monotonicMs) time its oldest batch, when stamped. */
  | { type: 'delta'; pool: number; baseSequence: bigint; sequence: bigint; imageCount: number; payload: Uint8Array; handoffMs?: number; admittedAtMs?: number }
  /** The image of an attach (its words transferred), or why it failed. */
  | { type: 'image'; pool: number; request: number; sequence: bigint; words: BigUint64Array }
  | { type: 'image'; pool: number; request: number; error: string }
  /** The generation ended: retired (after a 'retire'), or fenced by itself. */
  | { type: 'ended'; pool: number; how: 'retired' | 'fenced'; reason: string }
  /** Its native state was freed (after 'ended'; PoolGeneration.released). */
  | { type: 'released'; pool: number }
  | { type: 'log'; pool: number; level: 'warn' | 'error'; obj: object; msg: string };
