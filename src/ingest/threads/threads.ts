// The main thread's ingest threads (limits.ingestThreads). Each engine worker's subscription runs on
// the thread its id shards to (shard.ts), which owns its sockets, decoding and hashing; the decoded
// bursts come back to the main thread, where the pool state stays single-writer. A thread that dies
// (an uncaught error or rejection in it) is logged at error and counted, every source it owned is
// reset, and it is started again with the same subscriptions, which resubscribe and replay. Threads
// start with their first subscription and end when closed. A thread is never terminate()d: zeromq.js
// aborts the process when a thread ends with a receive pending (thread.ts), so a thread always ends
// itself after closing its sockets.
import type { Worker } from 'worker_threads';
import {
  INGEST_HANDOFF_MAX_BLOCKS,
  INGEST_HANDOFF_MAX_BYTES,
  INGEST_HANDOFF_MAX_MESSAGES,
  INGEST_HANDOFF_RING_LARGEST_BURSTS,
  INGEST_HANDOFF_RING_PER_BYTES_BOUND,
  INGEST_MAX_MESSAGE_WORDS,
  INGEST_HANDOFF_WAIT_MS,
  INGEST_THREAD_CLOSE_TIMEOUT_MS,
  INGEST_THREAD_RESTART_MS,
  INGEST_THREAD_STATS_MS,
} from '../../config/defaults';
import type { IngestSink, KvEventEndpointConfig, KvEventSubscription } from '../types';
import { handedOffSize, HandoffRing, readHandoff, type Handoff, type HandoffBounds } from './handoff';
import type { FromThread, ThreadSubscriberOptions, ToThread } from './protocol';
import { threadOf } from './shard';
import { spawnThread } from './spawn';
import { ThreadSubscription, type SubscriptionHost } from './subscription';

export interface IngestThreadsOptions {
  threads: number;
  logger: SubscriptionHost['logger'];
  /** Hand-off bounds per thread (defaults: an even share of INGEST_HANDOFF_MAX_MESSAGES, _BLOCKS, _BYTES; INGEST_HANDOFF_WAIT_MS). */
  handoff?: Partial<HandoffBounds>;
  statsIntervalMs?: number;
  restartDelayMs?: number;
}

export class IngestThreads {
  private readonly threads: IngestThread[];

  constructor(options: IngestThreadsOptions) {
    if (!Number.isInteger(options.threads) || options.threads < 1) throw new RangeError('threads must be a positive integer');
    this.threads = Array.from({ length: options.threads }, (_, index) => new IngestThread(index, options));
  }

  /** A worker's subscription, run on its thread once started. */
  subscribe(config: KvEventEndpointConfig, sink: IngestSink, options: ThreadSubscriberOptions = {}): KvEventSubscription {
    return new ThreadSubscription(this.threads[threadOf(config.workerId, this.threads.length)], config, sink, options);
  }

  /** Thread deaths so far (each followed by a restart). */
  get restarts(): number {
    return this.threads.reduce((n, t) => n + t.restarts, 0);
  }

  /** @internal Test hook: the thread of a worker's subscription dies of an uncaught error. */
  crash(workerId: bigint): void {
    this.threads[threadOf(workerId, this.threads.length)].crash();
  }

  /** Closes every subscription, then ends the threads. */
  async close(): Promise<void> {
    await Promise.all(this.threads.map((t) => t.close()));
  }
}

class IngestThread implements SubscriptionHost {
  private worker: Worker | undefined;
  restarts = 0;
  readonly logger: SubscriptionHost['logger'];
  readonly restartDelayMs: number;
  private readonly subscriptions = new Map<number, ThreadSubscription>();
  private readonly releasing = new Map<number, () => void>();
  private restartTimer: NodeJS.Timeout | undefined;
  private closing = false;

  constructor(
    private readonly index: number,
    private readonly options: IngestThreadsOptions,
  ) {
    this.logger = options.logger;
    this.restartDelayMs = options.restartDelayMs ?? INGEST_THREAD_RESTART_MS;
  }

  attach(subscription: ThreadSubscription): void {
    this.subscriptions.set(subscription.id, subscription);
    if (this.worker) this.post(subscription.openMessage());
    else if (!this.restartTimer && !this.closing) this.start();
  }

  release(subscription: ThreadSubscription): Promise<void> {
    if (!this.subscriptions.has(subscription.id)) return Promise.resolve();
    if (!this.worker) {
      this.subscriptions.delete(subscription.id);
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      this.releasing.set(subscription.id, resolve);
      this.post({ type: 'close', id: subscription.id });
    });
  }

  detach(subscription: ThreadSubscription): void {
    this.subscriptions.delete(subscription.id);
  }

  reopenLater(subscription: ThreadSubscription, delayMs: number): void {
    setTimeout(() => {
      if (this.worker && this.subscriptions.get(subscription.id) === subscription && !subscription.isClosed) this.post(subscription.openMessage());
    }, delayMs).unref();
  }

  async close(): Promise<void> {
    this.closing = true;
    clearTimeout(this.restartTimer);
    await Promise.all([...this.subscriptions.values()].map((s) => s.close()));
    const worker = this.worker;
    if (!worker) return;
    this.worker = undefined;
    const exited = new Promise((resolve) => worker.once('exit', resolve));
    worker.postMessage({ type: 'exit' } satisfies ToThread);
    await exited;
  }

  crash(): void {
    this.post({ type: 'crash' });
  }

  private start(): void {
    const bounds = {
      maxMessages: Math.max(1, Math.floor(INGEST_HANDOFF_MAX_MESSAGES / this.options.threads)),
      maxBlocks: Math.floor(INGEST_HANDOFF_MAX_BLOCKS / this.options.threads),
      maxBytes: Math.floor(INGEST_HANDOFF_MAX_BYTES / this.options.threads),
      waitMs: INGEST_HANDOFF_WAIT_MS,
      ...this.options.handoff,
    };
    // 8-aligned: every hand-off's 8-byte arrays are. A burst holds at most twice a message's words
    // (its meta and index are a small fraction more: an eighth is room for them).
    const largestBurst = 2 * INGEST_MAX_MESSAGE_WORDS * 8 * (9 / 8);
    const ringBytes = Math.max(INGEST_HANDOFF_RING_PER_BYTES_BOUND * bounds.maxBytes, INGEST_HANDOFF_RING_LARGEST_BURSTS * largestBurst);
    const ring = new HandoffRing(8 * Math.ceil(ringBytes / 8));
    const worker = spawnThread({
      ring: { data: ring.data, control: ring.control },
      bounds,
      statsIntervalMs: this.options.statsIntervalMs ?? INGEST_THREAD_STATS_MS,
      closeTimeoutMs: INGEST_THREAD_CLOSE_TIMEOUT_MS,
    });
    this.worker = worker;
    worker.on('message', (m: FromThread) => {
      if (this.worker === worker) this.dispatch(m, ring);
    });
    // E.g. out of memory; an uncaught error in the thread's code arrives as 'fatal' instead.
    worker.on('error', (err) => this.logger.error({ thread: this.index, err: err.message }, 'ingest thread failed'));
    worker.on('exit', (code) => this.exited(worker, code));
    for (const s of this.subscriptions.values()) this.post(s.openMessage());
  }

  private dispatch(m: FromThread, ring: HandoffRing): void {
    if (m.type === 'warn') return this.logger.warn(m.obj, m.msg);
    if (m.type === 'fatal') return this.logger.error({ thread: this.index, err: m.message }, 'ingest thread failed');
    if (m.type === 'events') {
      try {
        const h = readHandoff(m.buffer ?? ring.data, m.base, m.length);
        for (const { id, stats } of h.stats) this.subscriptions.get(id)?.received({ type: 'stats', id, stats });
        return this.take(h);
      } finally {
        // Every burst's sink copied what it keeps (IngestSink.events): the region may be written again.
        if (!m.buffer) ring.read(m.base + m.length);
      }
    }
    this.subscriptions.get(m.id)?.received(m);
    if (m.type === 'closed') {
      this.subscriptions.delete(m.id);
      this.releasing.get(m.id)?.();
      this.releasing.delete(m.id);
    }
  }

  /** A burst's room in its subscription's share is free once its sink applied it (back-pressure through the pools). */
  private take(h: Handoff): void {
    for (const burst of h.bursts) {
      const subscription = this.subscriptions.get(burst.id);
      if (!subscription) continue;
      const { counter } = subscription;
      const size = handedOffSize(burst);
      let applied: void | Promise<void> = undefined;
      try {
        applied = subscription.take(h.buffer, burst);
      } finally {
        if (applied) void applied.finally(() => counter.taken(size));
        else counter.taken(size);
      }
    }
  }

  private exited(worker: Worker, code: number): void {
    if (this.worker !== worker) return; // ended by close()
    this.worker = undefined;
    for (const [id, resolve] of this.releasing) {
      this.subscriptions.delete(id);
      resolve();
    }
    this.releasing.clear();
    this.restarts += 1;
    this.logger.error(
      { thread: this.index, exitCode: code, workers: [...this.subscriptions.values()].map((s) => String(s.config.workerId)) },
      'ingest thread died: its sources are reset and it is started again',
    );
    for (const s of this.subscriptions.values()) s.threadDied();
    this.restartTimer = setTimeout(() => {
      this.restartTimer = undefined;
      if (!this.closing && !this.worker && this.subscriptions.size > 0) this.start();
    }, this.restartDelayMs);
  }

  send(m: ToThread): void {
    this.post(m);
  }

  private post(m: ToThread): void {
    this.worker?.postMessage(m);
  }
}
