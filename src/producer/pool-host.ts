// The producer's pools on an ingest thread (the thread's host module: ingest/threads/protocol.ts;
// their main-thread side is thread-pools.ts). A pool lives on the thread that runs all of its
// sources' subscriptions, so what they decode is applied where it was received: a small message
// costs one wake-up of that thread and nothing on the main thread, which hears only what it
// publishes (deltas, images, the generation's end) and reads the pool's counters from shared memory
// (issue 30 item 2). The PoolActor is the one the main thread runs for a pool of its own; only its
// listener and its logger are the main thread's, across the port.
import { monotonicMs } from '../clock';
import type { HostThread, ThreadHost } from '../ingest/threads/protocol';
import type { IngestSink } from '../ingest/types';
import type { PoolListener } from '../publication/source';
import { PoolActor } from './pool-actor';
import { PoolCounters } from './pool-counters';
import type { FromPoolHost, HostedPoolOptions, ToPoolHost } from './pool-host-protocol';

/**
 * An inbox of up to this many blocks is applied on the ingest thread itself, with nothing in flight
 * (the event loop takes at most 256: PoolActor's default): a libuv worker's round trip is two thread
 * wake-ups per inbox, and this thread serves no gRPC stream that a longer apply would delay.
 */
const HOSTED_SYNC_APPLY_BLOCKS = 4096;

export function createHost(thread: HostThread): ThreadHost {
  const pools = new Map<number, HostedPool>();
  // What the pools have to say in one turn of the thread goes in one postMessage at its end.
  const send = (m: FromPoolHost, transfer?: ArrayBuffer[]): void => thread.post(m, transfer);
  return {
    sink: (id) => pools.get(id)?.sink,
    receive(message) {
      const m = message as ToPoolHost;
      if (m.type === 'open') {
        const pool = new HostedPool(m.pool, m.options, new PoolCounters(m.counters), new Int32Array(m.unhandled), send, thread, m.awaitPredecessor);
        pools.set(m.pool, pool);
        // Kept until its state is freed, however it ended (a fenced generation hears no 'retire'): a
        // retire waits for the state, which may still wait for 'predecessorReleased'.
        void pool.actor.released.then(() => pools.delete(m.pool));
        return;
      }
      const pool = pools.get(m.pool);
      if (!pool) return; // ended and freed meanwhile
      if (m.type === 'retire') {
        void pool.actor.retire().then(() => send({ type: 'ended', pool: m.pool, how: 'retired', reason: 'retired' }));
      } else pool.receive(m);
    },
  };
}

class HostedPool {
  readonly actor: PoolActor;
  readonly sink: IngestSink;
  /** The main thread's side is attached (deltas go to it). */
  private readonly listener: PoolListener;
  /** The delta just sent, still in the thread's outbox, for the actor to stamp (onDeltaPublished follows listener.delta). */
  private lastDelta: Extract<FromPoolHost, { type: 'delta' }> | undefined;
  /** Settles the actor's `after` (awaitPredecessor): on 'predecessorReleased'. */
  private predecessorReleased: () => void = () => undefined;

  constructor(
    private readonly id: number,
    options: HostedPoolOptions,
    counters: PoolCounters,
    unhandled: Int32Array,
    private readonly send: (m: FromPoolHost, transfer?: ArrayBuffer[]) => void,
    thread: HostThread,
    awaitPredecessor: boolean,
  ) {
    this.listener = {
      delta: (frame) => {
        const m: Extract<FromPoolHost, { type: 'delta' }> = { type: 'delta', pool: id, baseSequence: frame.baseSequence, sequence: frame.sequence, imageCount: frame.imageCount, payload: frame.payload };
        this.lastDelta = m;
        Atomics.add(unhandled, 0, 1);
        send(m);
      },
      // The main thread hears the generation's end from 'ended'.
      retired: () => undefined,
      fenced: () => undefined,
    };
    const log = (level: 'warn' | 'error') => (obj: object, msg: string) => send({ type: 'log', pool: id, level, obj, msg });
    this.actor = new PoolActor({
      ...options,
      logger: { warn: log('warn'), error: log('error') },
      counters,
      syncApplyBlocks: HOSTED_SYNC_APPLY_BLOCKS,
      // The main thread takes a delta per turn of its loop, as when the pool was applied there.
      listenerBehind: () => Atomics.load(unhandled, 0) > 0,
      onFenced: (reason) => send({ type: 'ended', pool: id, how: 'fenced', reason }),
      onOverflow: (source, batches) => thread.overflowed(source, batches),
      after: awaitPredecessor ? new Promise<void>((resolve) => (this.predecessorReleased = resolve)) : undefined,
      // Still in the outbox: the main thread times the delta to its own delivery.
      onDeltaPublished: (t) => {
        if (!this.lastDelta) return;
        this.lastDelta.handoffMs = t.handoffMs;
        this.lastDelta.admittedAtMs = monotonicMs() - t.poolMs;
        this.lastDelta = undefined;
      },
    });
    // What this thread's own sockets received is applied in the same call when nothing waits.
    this.sink = { events: (b) => this.actor.received(b), reset: (source) => this.actor.reset(source) };
    void this.actor.released.then(() => send({ type: 'released', pool: id }));
  }

  receive(m: Exclude<ToPoolHost, { type: 'open' | 'retire' }>): void {
    switch (m.type) {
      case 'attach':
        this.actor.attach(this.listener).then(
          (image) => this.send({ type: 'image', pool: this.id, request: m.request, sequence: image.sequence, words: image.words }, [image.words.buffer as ArrayBuffer]),
          (err: Error) => this.send({ type: 'image', pool: this.id, request: m.request, error: err.message }),
        );
        return;
      case 'detach':
        return this.actor.detach(this.listener);
      case 'pace':
        return this.actor.pace(m.stretch);
      case 'events':
        void this.actor.events(m.burst);
        return;
      case 'reset':
        return this.actor.reset(m.source);
      case 'predecessorReleased':
        return this.predecessorReleased();
    }
  }
}
