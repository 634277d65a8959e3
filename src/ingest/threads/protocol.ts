// Messages between the main thread and an ingest thread. Subscriptions are named by an id the main
// thread chooses; every message about one subscription travels on the thread's one port, so the
// order in which the thread produced them (batches, resets) is the order they are handled.
// A thread may also run a host (ThreadData.host): a module that owns sinks on the thread itself (the
// producer's pools), so that what a hosted subscription decodes is applied where it was received and
// never crosses to the main thread. The host's own messages travel on the same port, opaque here.
// A hosted subscription runs on its worker's thread (shard.ts), which need not be its sink's: then
// its bursts go to the sink's thread directly, over a port between the two threads (PeerMessage),
// never through the main thread.
import type { MessagePort } from 'worker_threads';
import type { SubscriberOptions } from '../subscriber';
import type { IngestSink, KvEventEndpointConfig, ResetReason, SourceKey } from '../types';
import type { HandoffBounds, HandoffMessage } from './handoff';

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
   * (StatsBoard), both fresh per open. `hosted`: the host's sink its bursts go to, on this thread or
   * on a sibling (through the sibling's peer port).
   */
  | { type: 'open'; id: number; config: KvEventEndpointConfig; options: ThreadSubscriberOptions; flow: SharedArrayBuffer; stats: SharedArrayBuffer; hosted?: HostedSink }
  /** The port to sibling thread `thread` (each thread of a pair gets one end; a restarted sibling's replaces its old one). */
  | { type: 'peer'; thread: number; port: MessagePort }
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

/**
 * Between two ingest threads, on their peer port. From a subscription's thread to its sink's thread,
 * in order: 'route' before its bursts, its turn's bursts ('events': a hand-off as the main thread's,
 * in a ring of shared memory per direction), its resets, and 'forget' once it closed. Back: 'overflowed' (the sink
 * dropped or could not take its bursts: the subscription resets and replays the source).
 */
export type PeerMessage =
  /** `flow`: the subscription's FlowCounter; the sink's thread takes what its sink applied. */
  | { type: 'route'; id: number; sink: number; workerId: bigint; flow: SharedArrayBuffer }
  /** The sender's ring for this receiver (HandoffRing's memory), announced before its first hand-off in it. */
  | { type: 'ring'; data: SharedArrayBuffer; control: SharedArrayBuffer }
  /** A hand-off: `length` bytes at `base` of the sender's ring, or of `buffer` (transferred) when the ring had no room. */
  | HandoffMessage
  | { type: 'reset'; id: number; source: SourceKey; reason: ResetReason }
  | { type: 'forget'; id: number }
  | { type: 'overflowed'; id: number; source: SourceKey; batches: number };

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
