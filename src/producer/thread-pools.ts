// The main thread's side of the pools hosted on ingest threads (pool-host.ts): each is a PoolFeed
// for the publication layer and a pool generation for the producer, whose work happens on its
// thread, its one writer. Its workers subscribe on its thread too (ingest/threads: a hosted
// subscription runs on its sink's thread), so every burst is applied where it was received, in
// place, and no burst crosses threads (a hop cost each message of a source on another thread a
// second wake-up, ~100 µs on a small VM, while one pool's rate is bound by its one writer anyway:
// BENCHMARKS.md, 2026-12-07). Pools are placed over the threads by load: each on the thread with
// the fewest sources of open pools, then the fewest pools. Only what the pool publishes crosses to
// the main thread: deltas, images, its end, its log lines; its counters are read from shared memory.
//
// A thread that dies takes with it its pools and their subscriptions: each of those generations ends
// as fenced (its listener's streams end with INVALID_PUBLICATION and resubscribe) and the producer
// replaces it by a new generation, whose sources resubscribe and replay from 0 (as for a generation
// fenced by an invariant failure).
import * as path from 'path';
import { monotonicMs } from '../clock';
import type { HostedSink, IngestThreads, ThreadsHost } from '../ingest/threads/threads';
import type { PackedEngineEvents, SourceKey } from '../ingest/types';
import type { DeltaTiming, PoolMetrics } from '../metrics/registry';
import type { PoolFeed, PoolImage, PoolListener } from '../publication/source';
import type { ProducerIdentity } from '../wire/types';
import type { PoolLogger } from './pool-actor';
import { PoolCounters } from './pool-counters';
import type { PoolGeneration } from './pool-generation';
import type { FromPoolHost, HostedPoolOptions, ToPoolHost } from './pool-host-protocol';

export interface ThreadPoolOptions extends HostedPoolOptions {
  logger: PoolLogger;
  onFenced?(reason: string): void;
  onDeltaPublished?(timing: DeltaTiming): void;
  /** PoolActorOptions.after: the thread hears 'predecessorReleased' once it settles. */
  after?: Promise<void>;
}

/** The reason a hosted generation ends with when its thread dies. */
export const THREAD_DIED = 'ingest thread died';

export class ThreadPools implements ThreadsHost {
  readonly module = path.join(__dirname, 'pool-host');
  private threads: IngestThreads | undefined;
  private readonly pools = new Map<number, ThreadPool>();
  /** Pools whose native state may still hold its tables (open, or ended and not 'released' yet). */
  private readonly unreleased = new Map<number, ThreadPool>();
  private nextId = 1;

  /** The threads that host the pools (made with this as their host). */
  bind(threads: IngestThreads): void {
    this.threads = threads;
  }

  /**
   * A new pool generation fed by `workers`, on the thread with the fewest sources of hosted pools
   * (ties: the fewest pools, then the lowest index). Its workers subscribe there too, so one pool's
   * sources never cross threads while many pools spread over them.
   */
  open(options: ThreadPoolOptions, workers: readonly bigint[]): ThreadPool {
    const threads = this.threads;
    if (!threads) throw new Error('ThreadPools used before bind()');
    const sources = Array.from({ length: threads.count }, () => 0);
    const pools = Array.from({ length: threads.count }, () => 0);
    for (const p of this.pools.values()) {
      sources[p.thread] += p.sources;
      pools[p.thread] += 1;
    }
    let thread = 0;
    for (let t = 1; t < threads.count; t++) if (sources[t] < sources[thread] || (sources[t] === sources[thread] && pools[t] < pools[thread])) thread = t;
    const pool = new ThreadPool(this.nextId++, thread, workers.length, options, (m, transfer) => threads.sendHost(thread, m, transfer), () => this.pools.delete(pool.id));
    this.pools.set(pool.id, pool);
    this.unreleased.set(pool.id, pool);
    const { logger: _logger, onFenced: _fenced, onDeltaPublished: _published, after, ...hosted } = options;
    pool.send({
      type: 'open',
      pool: pool.id,
      options: hosted,
      counters: pool.counters.shared,
      unhandled: pool.unhandled.buffer as SharedArrayBuffer,
      awaitPredecessor: after !== undefined,
    });
    // After its other messages: the thread's pool takes them in order either way.
    void after?.then(() => pool.send({ type: 'predecessorReleased', pool: pool.id }));
    return pool;
  }

  receive(_thread: number, message: unknown): void {
    const m = message as FromPoolHost;
    if (m.type === 'released') this.freed(m.pool);
    else this.pools.get(m.pool)?.received(m);
  }

  private freed(id: number): void {
    this.unreleased.get(id)?.freed();
    this.unreleased.delete(id);
  }

  /** The thread has exited (its pools' native states were freed with its environment). */
  died(thread: number): void {
    for (const pool of [...this.unreleased.values()]) if (pool.thread === thread) this.freed(pool.id);
    for (const pool of [...this.pools.values()]) if (pool.thread === thread) pool.ended('fenced', THREAD_DIED);
  }

  /** The threads were closed: every pool still open ended with them, retired. */
  closeAll(): void {
    for (const id of [...this.unreleased.keys()]) this.freed(id);
    for (const pool of [...this.pools.values()]) pool.ended('retired', 'closed');
  }
}

export class ThreadPool implements PoolFeed, PoolGeneration {
  readonly producer: ProducerIdentity;
  readonly dcId: bigint;
  readonly counters = new PoolCounters();
  /** Deltas its thread posted that were not handled here yet (PoolActorOptions.listenerBehind). */
  readonly unhandled = new Int32Array(new SharedArrayBuffer(4));
  private listener: PoolListener | undefined;
  private nextRequest = 1;
  private readonly attaching = new Map<number, { listener: PoolListener; resolve(image: PoolImage): void; reject(err: Error): void }>();
  private stretch = 1;
  private ending: Promise<void> | undefined;
  private endedAs: 'retired' | 'fenced' | undefined;
  private retiredWaiters: (() => void)[] = [];
  readonly released: Promise<void>;
  /** Its native state was freed (its thread said so, or exited). */
  readonly freed: () => void;

  constructor(
    readonly id: number,
    readonly thread: number,
    /** How many workers fed it when it opened (its weight in placement). */
    readonly sources: number,
    private readonly options: ThreadPoolOptions,
    readonly send: (m: ToPoolHost, transfer?: readonly ArrayBuffer[]) => void,
    private readonly forget: () => void,
  ) {
    this.producer = options.producer;
    this.dcId = options.dcId;
    let freed!: () => void;
    this.released = new Promise((resolve) => (freed = resolve));
    this.freed = freed;
  }

  get isEnded(): boolean {
    return this.endedAs !== undefined;
  }

  /** The sink the pool's subscriptions deliver to, on its thread. */
  get hosted(): HostedSink {
    return { thread: this.thread, sink: this.id };
  }

  attach(listener: PoolListener): Promise<PoolImage> {
    if (this.endedAs) return Promise.reject(new Error(`pool generation ${this.options.key} is ${this.endedAs}`));
    return new Promise((resolve, reject) => {
      const request = this.nextRequest++;
      this.attaching.set(request, { listener, resolve, reject });
      this.send({ type: 'attach', pool: this.id, request });
    });
  }

  detach(listener: PoolListener): void {
    if (this.listener !== listener) return;
    this.listener = undefined;
    if (!this.endedAs) this.send({ type: 'detach', pool: this.id });
  }

  pace(stretch: number): void {
    if (!Number.isInteger(stretch) || stretch < 1) throw new RangeError(`publication stretch must be a positive integer, got ${stretch}`);
    if (stretch === this.stretch || this.endedAs) return;
    this.stretch = stretch;
    this.send({ type: 'pace', pool: this.id, stretch });
  }

  /** A burst handed over on the main thread (a copy crosses; the pool's own subscriptions never pass here). */
  events(b: PackedEngineEvents): undefined {
    if (this.endedAs) return undefined;
    const burst = { ...b, meta: b.meta.slice(), words: b.words.slice(), sequences: b.sequences.slice(), messageInfo: b.messageInfo.slice() };
    this.send({ type: 'events', pool: this.id, burst }, [burst.meta.buffer, burst.words.buffer, burst.sequences.buffer, burst.messageInfo.buffer]);
    return undefined;
  }

  reset(source: SourceKey): void {
    if (!this.endedAs) this.send({ type: 'reset', pool: this.id, source });
  }

  retire(): Promise<void> {
    if (this.endedAs) return Promise.resolve();
    this.ending ??= new Promise<void>((resolve) => {
      this.retiredWaiters.push(resolve);
      this.send({ type: 'retire', pool: this.id });
    });
    return this.ending;
  }

  metrics(): PoolMetrics {
    return { pool: this.options.key, ...this.counters.values() };
  }

  received(m: FromPoolHost): void {
    switch (m.type) {
      case 'delta': {
        Atomics.sub(this.unhandled, 0, 1);
        const listener = this.listener;
        if (!listener || this.endedAs) return;
        listener.delta({ baseSequence: m.baseSequence, sequence: m.sequence, imageCount: m.imageCount, payload: Buffer.from(m.payload.buffer, m.payload.byteOffset, m.payload.byteLength) });
        if (m.admittedAtMs !== undefined && m.handoffMs !== undefined) this.options.onDeltaPublished?.({ handoffMs: m.handoffMs, poolMs: monotonicMs() - m.admittedAtMs });
        return;
      }
      case 'image': {
        const attach = this.attaching.get(m.request);
        if (!attach) return;
        this.attaching.delete(m.request);
        if ('error' in m) return attach.reject(new Error(m.error));
        // From here on every delta goes to this listener (PoolFeed.attach).
        this.listener = attach.listener;
        return attach.resolve({ sequence: m.sequence, words: m.words });
      }
      case 'ended':
        return this.ended(m.how, m.reason);
      case 'log':
        return this.options.logger[m.level](m.obj, m.msg);
    }
  }

  /** The generation ended on its thread (or with it): the listener and the producer hear how. */
  ended(how: 'retired' | 'fenced', reason: string): void {
    if (!this.endedAs) {
      this.endedAs = how;
      this.forget();
      for (const a of this.attaching.values()) a.reject(new Error(`pool generation ${this.options.key} is ${how}`));
      this.attaching.clear();
      const listener = this.listener;
      this.listener = undefined;
      if (how === 'retired') listener?.retired();
      else {
        listener?.fenced(reason);
        this.options.onFenced?.(reason);
      }
    }
    for (const resolve of this.retiredWaiters) resolve();
    this.retiredWaiters = [];
  }
}
