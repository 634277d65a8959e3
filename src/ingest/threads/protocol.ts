// Messages between the main thread and an ingest thread. Subscriptions are named by an id the main
// thread chooses; every message about one subscription travels on the thread's one port, so the
// order in which the thread produced them (batches, resets) is the order they are handled.
// A thread may also run a host (ThreadData.host): a module that owns sinks on the thread itself (the
// producer's pools), so that what a hosted subscription decodes is applied where it was received and
// never crosses to the main thread. The host's own messages travel on the same port, opaque here.
// A hosted subscription runs on its sink's thread (whatever thread its worker id shards to), so its
// bursts never cross threads.
import type { SubscriberOptions } from '../subscriber';
import type { IngestSink, KvEventEndpointConfig, ResetReason, SourceKey } from '../types';
import type { HandoffBounds } from './handoff';

/** What the thread is started with (workerData). */
export interface ThreadData {
  /** The shared memory of its hand-off ring (HandoffRing). */
  ring: { data: SharedArrayBuffer; control: SharedArrayBuffer };
  bounds: HandoffBounds;
  /** The thread's index among the ingest threads (HostedSink.thread). */
  index: number;
  /** How long the thread waits for its subscribers to close before it ends anyway. */
  closeTimeoutMs: number;
  /** The host module's path (without extension: `.js` built, `.ts` from the sources), exporting createHost(). */
  host?: string;
}

/** Where a hosted subscription's bursts are applied: the host's sink `sink`, on ingest thread `thread`. */
export interface HostedSink {
  thread: number;
  sink: number;
}

/** The subscriber options that cross threads (the logger stays on the main thread). */
export type ThreadSubscriberOptions = Omit<SubscriberOptions, 'logger' | 'stats'>;

export type ToThread =
  /**
   * `flow`: the subscription's shared in-flight counter (FlowCounter), `stats` its counters' board
   * (StatsBoard), both fresh per open. `hosted`: the host's sink its bursts go to, on this thread.
   */
  | { type: 'open'; id: number; config: KvEventEndpointConfig; options: ThreadSubscriberOptions; flow: SharedArrayBuffer; stats: SharedArrayBuffer; hosted?: HostedSink }
  | { type: 'close'; id: number }
  /** A pool dropped a batch of the source: reset it and replay it from 0 (KvEventSubscriber.overflowed). */
  | { type: 'overflowed'; id: number; source: SourceKey; batches: number }
  /** For the thread's host, in order (those sent in one turn of the main thread travel together). */
  | { type: 'host'; messages: unknown[] }
  /** Close whatever is open and end the thread. */
  | { type: 'exit' }
  /** @internal Test hook: the thread throws an uncaught error (a bug's death, handled like one). */
  | { type: 'crash' };

export type FromThread =
  | { type: 'opened'; id: number; endpoints: string[] }
  | { type: 'failed'; id: number; message: string }
  | { type: 'closed'; id: number }
  /**
   * The bursts of one thread turn, of any of its subscriptions handed off to the main thread:
   * `length` bytes at `base` of the thread's ring, or of `buffer` (transferred) when the ring had no room.
   */
  | { type: 'events'; base: number; length: number; buffer?: ArrayBuffer }
  | { type: 'reset'; id: number; source: SourceKey; reason: ResetReason }
  | { type: 'warn'; obj: object; msg: string }
  /** From the thread's host, in order (those of one turn of the thread travel together). */
  | { type: 'host'; messages: unknown[] }
  /** An uncaught error: the thread closes its subscribers and ends (exit code 1). */
  | { type: 'fatal'; message: string };

/** What a host module gets from its thread. */
export interface HostThread {
  /**
   * Posts `message` to the main thread's host, in order with everything else the thread posts; the
   * messages of one turn travel in one postMessage at its end (so a message may still be completed
   * in the synchronous run that posted it).
   */
  post(message: unknown, transfer?: readonly ArrayBuffer[]): void;
  /**
   * A hosted sink dropped `batches` batches of `source` (a full pool mailbox) and reset it: the
   * source's subscriber counts them and replays it from 0 (KvEventSubscriber.overflowed).
   */
  overflowed(source: SourceKey, batches: number): void;
}

/** A host module's side on the thread (the module exports `createHost(thread: HostThread): ThreadHost`). */
export interface ThreadHost {
  /** The sink of a hosted subscription, or undefined if the host has no such sink (the open fails). */
  sink(id: number): IngestSink | undefined;
  /** A message of the main thread's host. */
  receive(message: unknown): void;
}
