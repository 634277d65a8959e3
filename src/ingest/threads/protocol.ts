// Messages between the main thread and an ingest thread. Subscriptions are named by an id the main
// thread chooses; every message about one subscription travels on the thread's one port, so the
// order in which the thread produced them (batches, resets, counters) is the order they are handled.
import type { SubscriberOptions } from '../subscriber';
import type { KvEventEndpointConfig, ResetReason, SourceKey, SourceStats } from '../types';
import type { HandoffBounds } from './handoff';

/** What the thread is started with (workerData). */
export interface ThreadData {
  /** The shared memory of its hand-off ring (HandoffRing). */
  ring: { data: SharedArrayBuffer; control: SharedArrayBuffer };
  bounds: HandoffBounds;
  statsIntervalMs: number;
  /** How long the thread waits for its subscribers to close before it ends anyway. */
  closeTimeoutMs: number;
}

/** The subscriber options that cross threads (the logger stays on the main thread). */
export type ThreadSubscriberOptions = Omit<SubscriberOptions, 'logger'>;

export type ToThread =
  /** `flow`: the subscription's shared in-flight counter (FlowCounter), fresh per open. */
  | { type: 'open'; id: number; config: KvEventEndpointConfig; options: ThreadSubscriberOptions; flow: SharedArrayBuffer }
  | { type: 'close'; id: number }
  /** A pool dropped a batch of the source: reset it and replay it from 0 (KvEventSubscriber.overflowed). */
  | { type: 'overflowed'; id: number; source: SourceKey; batches: number }
  /** Close whatever is open and end the thread. */
  | { type: 'exit' }
  /** @internal Test hook: the thread throws an uncaught error (a bug's death, handled like one). */
  | { type: 'crash' };

export type FromThread =
  | { type: 'opened'; id: number; endpoints: string[] }
  | { type: 'failed'; id: number; message: string }
  | { type: 'closed'; id: number }
  /**
   * The bursts of one thread turn, of any of its subscriptions, and the counters changed up to them:
   * `length` bytes at `base` of the thread's ring, or of `buffer` (transferred) when the ring had no room.
   */
  | { type: 'events'; base: number; length: number; buffer?: ArrayBuffer }
  | { type: 'reset'; id: number; source: SourceKey; reason: ResetReason }
  | { type: 'stats'; id: number; stats: SourceStats[] }
  | { type: 'warn'; obj: object; msg: string }
  /** An uncaught error: the thread closes its subscribers and ends (exit code 1). */
  | { type: 'fatal'; message: string };
