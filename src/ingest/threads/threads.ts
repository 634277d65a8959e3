// The main thread's ingest threads (limits.ingestThreads). An engine worker's subscription runs on
// the thread its id shards to (shard.ts), which owns its sockets, decoding and hashing, and hands its
// decoded bursts to the main thread; or, hosted, on its sink's thread (the host's sink, e.g. a pool
// applied on a thread: protocol.ts), where its bursts are applied in place. A thread that dies (an
// uncaught error or rejection in it) is logged at error and counted, and started again: its
// subscriptions that deliver to the main thread are reset and reopened there, and resubscribe and
// replay; its host's sinks died with it together with the subscriptions that fed them (the host
// hears it), which stay closed until their owner replaces them. Threads start with their first
// subscription or host message and end when closed. A thread is never terminate()d: zeromq.js
// aborts the process when a thread ends with a receive pending (thread.ts), so a thread always ends
// itself after closing its sockets.
import type { TransferListItem, Worker } from 'worker_threads';
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
} from '../../config/defaults';
import type { IngestSink, KvEventEndpointConfig, KvEventSubscription } from '../types';
import { handedOffSize, HandoffRing, readHandoff, type Handoff, type HandoffBounds } from './handoff';
import type { FromThread, HostedSink, ThreadSubscriberOptions, ToThread } from './protocol';
import { threadOf } from './shard';
import { spawnThread } from './spawn';
import { ThreadSubscription, type SubscriptionHost } from './subscription';

export interface IngestThreadsOptions {
  threads: number;
  logger: SubscriptionHost['logger'];
  /** Hand-off bounds per thread (defaults: an even share of INGEST_HANDOFF_MAX_MESSAGES, _BLOCKS, _BYTES; INGEST_HANDOFF_WAIT_MS). */
  handoff?: Partial<HandoffBounds>;
  restartDelayMs?: number;
  /** A host every thread runs (protocol.ts ThreadHost), and its main-thread side. */
  host?: ThreadsHost;
}

/** The main thread's side of the threads' host. */
export interface ThreadsHost {
  /** Its module on the threads (ThreadData.host). */
  module: string;
  /** A message of the host on thread `thread`. */
  receive(thread: number, message: unknown): void;
  /** Thread `thread` died, with every sink its host had and their subscriptions (its restart starts the host afresh). */
  died(thread: number): void;
}

export type { HostedSink };

export class IngestThreads {
  private readonly threads: IngestThread[];

  constructor(options: IngestThreadsOptions) {
    if (!Number.isInteger(options.threads) || options.threads < 1) throw new RangeError('threads must be a positive integer');
    this.threads = Array.from({ length: options.threads }, (_, index) => new IngestThread(index, options));
  }

  get count(): number {
    return this.threads.length;
  }

  /**
   * A worker's subscription, run once started on the thread its id shards to, its bursts and resets
   * to `sink` on the main thread; or with `hosted` on that sink's thread, applied there in place
   * (`sink` unused): no burst of a hosted subscription crosses threads.
   */
  subscribe(config: KvEventEndpointConfig, sink: IngestSink, options: ThreadSubscriberOptions = {}, hosted?: HostedSink): KvEventSubscription {
    const index = hosted === undefined ? threadOf(config.workerId, this.threads.length) : hosted.thread;
    const thread = this.threads[index];
    if (!thread) throw new RangeError(`hosted sink on thread ${index}, of ${this.threads.length}`);
    return new ThreadSubscription(thread, config, sink, options, hosted);
  }

  /**
   * A message to the host on `thread`, in order with the subscriptions' messages; while the thread
   * restarts it waits for the restarted host (which has none of the dead one's sinks).
   */
  sendHost(thread: number, message: unknown, transfer?: readonly ArrayBuffer[]): void {
    this.threads[thread].sendHost(message, transfer);
  }

  /** Thread deaths so far (each followed by a restart). */
  get restarts(): number {
    return this.threads.reduce((n, t) => n + t.restarts, 0);
  }

  /** @internal Test hook: the thread of a worker's subscription dies of an uncaught error. */
  crash(workerId: bigint): void {
    this.threads.find((t) => t.runs(workerId))?.crash();
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
  /** Host messages sent in this turn, posted together (before any other message: order), or kept while the thread is down. */
  private hostOutbox: unknown[] = [];
  private hostTransfer: ArrayBuffer[] = [];
  private restartTimer: NodeJS.Timeout | undefined;
  private closing = false;

  constructor(
    readonly index: number,
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

  /** Whether a subscription of the worker runs here. */
  runs(workerId: bigint): boolean {
    return [...this.subscriptions.values()].some((s) => s.config.workerId === workerId);
  }

  sendHost(message: unknown, transfer: readonly ArrayBuffer[] = []): void {
    if (this.closing) return;
    if (this.hostOutbox.length === 0) queueMicrotask(() => this.flushHost());
    this.hostOutbox.push(message);
    this.hostTransfer.push(...transfer);
    if (!this.worker && !this.restartTimer) this.start();
  }

  /** Posts the host messages sent so far (kept while the thread is down: its next start posts them first). */
  private flushHost(): void {
    const worker = this.worker;
    if (!worker || this.hostOutbox.length === 0) return;
    const messages = this.hostOutbox;
    const transfer = this.hostTransfer;
    this.hostOutbox = [];
    this.hostTransfer = [];
    worker.postMessage({ type: 'host', messages } satisfies ToThread, transfer);
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
      index: this.index,
      bounds,
      closeTimeoutMs: INGEST_THREAD_CLOSE_TIMEOUT_MS,
      ...(this.options.host ? { host: this.options.host.module } : {}),
    });
    this.worker = worker;
    worker.on('message', (m: FromThread) => {
      if (this.worker === worker) this.dispatch(m, ring);
    });
    // E.g. out of memory; an uncaught error in the thread's code arrives as 'fatal' instead.
    worker.on('error', (err) => this.logger.error({ thread: this.index, err: err.message }, 'ingest thread failed'));
    worker.on('exit', (code) => this.exited(worker, code));
    // The host's sinks first: subscriptions name them.
    this.flushHost();
    for (const s of this.subscriptions.values()) if (!s.orphaned) this.post(s.openMessage());
  }

  private dispatch(m: FromThread, ring: HandoffRing): void {
    if (m.type === 'warn') return this.logger.warn(m.obj, m.msg);
    if (m.type === 'fatal') return this.logger.error({ thread: this.index, err: m.message }, 'ingest thread failed');
    if (m.type === 'host') {
      for (const message of m.messages) this.options.host?.receive(this.index, message);
      return;
    }
    if (m.type === 'events') {
      try {
        return this.take(readHandoff(m.buffer ?? ring.data, m.base, m.length));
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
    this.options.host?.died(this.index);
    for (const s of this.subscriptions.values()) s.threadDied();
    this.restartTimer = setTimeout(() => {
      this.restartTimer = undefined;
      if (!this.closing && !this.worker && (this.hostOutbox.length > 0 || [...this.subscriptions.values()].some((s) => !s.orphaned))) this.start();
    }, this.restartDelayMs);
  }

  send(m: ToThread, transfer?: readonly TransferListItem[]): void {
    this.post(m, transfer);
  }

  private post(m: ToThread, transfer?: readonly TransferListItem[]): void {
    this.flushHost();
    this.worker?.postMessage(m, transfer);
  }
}
