// One producer generation of one pool (hashing-ckf-cbi1.md §4.6-§4.7; wire-contract.md §8.3).
//
// Engine batches for the pool's sources are converted to pool-state events and applied to the
// native pool state, serialized through one command chain (so a snapshot barrier never interleaves
// with an apply). After each applied slice the publication window is checked: reaching
// `publicationThreshold` pending events publishes a delta at once; the first pending event of a
// window arms a one-shot `publicationDelayMs` timer that flushes whatever is pending.
// Publishing without a listener drops the delta and does not advance the sequence. The listener
// may stretch the slice (threshold and delay) under load (publication/pacing.ts), within a delay
// of PACING_MAX_SLICE_MS and PACING_MAX_SLICE_BLOCKS blocks per delta.
//
// The mailbox (batches accepted but not yet applied) is bounded in batches and in blocks
// (wire-contract.md §8.2): a batch that does not fit is dropped and its source reset, as on a gap
// (later batches rebuild it from live events), and counted — the actor never grows with its backlog.
import type { Logger } from '../log';
import type { EngineEventBatch, SourceKey } from '../ingest/types';
import type { DeltaFrame, PoolFeed, PoolImage, PoolListener } from '../publication/source';
import type { ProducerIdentity } from '../wire/types';
import {
  ACTOR_MAILBOX_CAPACITY,
  INGEST_LOG_MAX_PER_WINDOW,
  INGEST_LOG_WINDOW_MS,
  MAX_DELTA_IMAGES,
  PACING_MAX_SLICE_BLOCKS,
  PACING_MAX_SLICE_MS,
  PENDING_BLOCK_PERMITS,
} from '../config/defaults';
import { ThrottledLogger } from '../ingest/throttle';
import { MAX_U64 } from '../config/limits';
import { encodeDelta, PoolFilterState, type PoolBatchResult, type PoolEvent } from '../native';
import { SaltCache, toPoolEvent, type Conversion, type PoolSemantics } from './events';
import type { PoolMetrics } from '../metrics/registry';

/** Above this many blocks a slice is applied off the event loop. */
const ASYNC_APPLY_BLOCKS = 4096;

/**
 * Whether a slice runs on a worker thread: big slices, and any clear, whose cost is the size of the
 * cleared source (unknown here, up to millions of blocks) rather than of the event.
 */
function offLoop(slice: readonly PoolEvent[]): boolean {
  let blocks = 0;
  for (const e of slice) {
    if (e.kind === 'cleared') return true;
    blocks += e.blockHashes.length;
  }
  return blocks > ASYNC_APPLY_BLOCKS;
}

/** Events of the batches accepted since the last queued command, and what they hold of the mailbox. */
interface Inbox {
  events: PoolEvent[];
  batches: number;
  blocks: number;
}

const sourceKey = (s: SourceKey): string => `${s.workerId}:${s.dpRank}`;

export interface PoolActorOptions {
  key: string;
  producer: ProducerIdentity;
  dcId: bigint;
  semantics: PoolSemantics;
  publicationThreshold: number;
  publicationDelayMs: number;
  /** Tracked-block bound of the pool state (limits.maxTrackedBlocksPerPool); default: the native maximum. */
  maxTrackedBlocks?: number;
  logger: Logger;
  /**
   * Called once when this generation fenced itself (IndexerInvariantViolation, sequence exhaustion,
   * or a command that failed unexpectedly); the producer replaces it with a new generation.
   */
  onFenced?(reason: string): void;
}

export class PoolActor implements PoolFeed {
  readonly producer: ProducerIdentity;
  readonly dcId: bigint;
  private readonly state: PoolFilterState;
  private readonly format: { seed: bigint; bucketCount: number };
  private readonly salts = new SaltCache();
  /** A misbehaving source can be rejected thousands of times a second; each must not be a log line. */
  private readonly warnings: ThrottledLogger;
  private listener: PoolListener | undefined;
  private lastSequence = 0n;
  private chain: Promise<void> = Promise.resolve();
  /**
   * Events of the batches that arrived since the last queued command: the apply command queued for
   * the first of them takes them all, so a burst of engine messages costs one native apply per
   * publication slice rather than one per message. Queuing any other command closes it (order).
   */
  private inbox: Inbox | undefined;
  /** Batches and blocks accepted and not yet applied (the mailbox bound). */
  private queuedBatches = 0;
  private queuedBlocks = 0;
  /** Sources reset with no batch accepted since: another reset would clear nothing. */
  private readonly resetQueued = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  /** The listener's pacing request: the configured slice times this. */
  private stretch = 1;
  /** Blocks of the events applied since the last drain. */
  private pendingBlocks = 0;
  private ended: 'retired' | 'fenced' | undefined;
  private readonly counters: Omit<PoolMetrics, 'pool' | 'publicationSliceMs'> = {
    eventsApplied: 0,
    eventsDroppedBlockSize: 0,
    eventErrors: 0,
    deltasPublished: 0,
    deltasDropped: 0,
    capacityFailures: 0,
    parentNotFound: 0,
    unknownRemovals: 0,
    mailboxOverflows: 0,
    storesRejectedAtLimit: 0,
    trackedBlocks: 0,
  };

  constructor(private readonly options: PoolActorOptions) {
    this.producer = options.producer;
    this.dcId = options.dcId;
    const ckf = options.producer.ckfFormat;
    if (!ckf) throw new TypeError('producer identity without a CKF format');
    this.format = { seed: ckf.seed, bucketCount: Number(ckf.bucketCount) };
    this.state = new PoolFilterState({
      bucketCount: this.format.bucketCount,
      seed: this.format.seed,
      maxTrackedBlocks: options.maxTrackedBlocks,
    });
    this.warnings = new ThrottledLogger(options.logger, INGEST_LOG_MAX_PER_WINDOW, INGEST_LOG_WINDOW_MS);
  }

  get isEnded(): boolean {
    return this.ended !== undefined;
  }

  /** Engine batch of one of this pool's sources (synchronous hand-off; applied in order). */
  batch(b: EngineEventBatch): void {
    if (this.ended) return;
    const events: PoolEvent[] = [];
    for (const ev of b.events) {
      let c: Conversion;
      try {
        c = toPoolEvent(b.source, ev, this.options.semantics, this.salts);
      } catch (err) {
        this.counters.eventErrors += 1;
        this.warn(b.source, ev.kind, `event not convertible: ${(err as Error).message}`);
        continue;
      }
      if ('event' in c) events.push(c.event);
      else if (c.dropped === 'block_size') this.counters.eventsDroppedBlockSize += 1;
    }
    if (events.length === 0) return;
    let blocks = 0;
    for (const e of events) if (e.kind !== 'cleared') blocks += e.blockHashes.length;
    // An empty mailbox takes any batch, so one larger than the permits is not refused forever.
    if (this.queuedBatches > 0 && (this.queuedBatches >= ACTOR_MAILBOX_CAPACITY || this.queuedBlocks + blocks > PENDING_BLOCK_PERMITS)) {
      this.counters.mailboxOverflows += 1;
      this.warn(b.source, 'batch', `mailbox full (${this.queuedBatches} batches, ${this.queuedBlocks} blocks): batch dropped, source reset`);
      this.reset(b.source);
      return;
    }
    this.resetQueued.delete(sourceKey(b.source));
    this.admit(events, blocks);
  }

  /** The source's history is lost: drop all of its blocks (like AllBlocksCleared), in order with its batches. */
  reset(source: SourceKey): void {
    if (this.ended) return;
    const key = sourceKey(source);
    // Taken whatever the mailbox holds: at most one per source, since duplicates are skipped.
    if (this.resetQueued.has(key)) return;
    this.resetQueued.add(key);
    this.admit([{ kind: 'cleared', workerId: source.workerId, dpRank: source.dpRank }], 0);
  }

  private admit(events: PoolEvent[], blocks: number): void {
    this.queuedBatches += 1;
    this.queuedBlocks += blocks;
    if (this.inbox) {
      for (const e of events) this.inbox.events.push(e);
      this.inbox.batches += 1;
      this.inbox.blocks += blocks;
      return;
    }
    const inbox: Inbox = { events, batches: 1, blocks };
    this.enqueue(async () => {
      if (this.inbox === inbox) this.inbox = undefined;
      try {
        await this.apply(inbox.events);
      } finally {
        this.queuedBatches -= inbox.batches;
        this.queuedBlocks -= inbox.blocks;
      }
    });
    this.inbox = inbox;
  }

  attach(listener: PoolListener): Promise<PoolImage> {
    return new Promise<PoolImage>((resolve, reject) => {
      this.enqueue(async () => {
        if (this.ended) {
          reject(new Error(`pool generation ${this.options.key} is ${this.ended}`));
          return;
        }
        try {
          this.flush();
          const words = await this.state.copyWordsAsync();
          this.listener = listener;
          resolve({ sequence: this.lastSequence, words });
        } catch (err) {
          reject(err as Error);
        }
      });
    });
  }

  detach(listener: PoolListener): void {
    if (this.listener === listener) this.listener = undefined;
  }

  /** Withdrawal, replacement or shutdown: the listener hears `retired` after queued work ends. */
  retire(): Promise<void> {
    return this.end('retired');
  }

  /** Waits until every command queued so far has run (tests, orderly shutdown). */
  idle(): Promise<void> {
    return this.chain;
  }

  metrics(): PoolMetrics {
    return { pool: this.options.key, ...this.counters, publicationSliceMs: this.sliceDelayMs() };
  }

  pace(stretch: number): void {
    if (!Number.isInteger(stretch) || stretch < 1) throw new RangeError(`publication stretch must be a positive integer, got ${stretch}`);
    this.stretch = stretch;
  }

  private sliceThreshold(): number {
    return this.options.publicationThreshold * this.stretch;
  }

  private sliceDelayMs(): number {
    if (this.stretch === 1) return this.options.publicationDelayMs;
    return Math.max(this.options.publicationDelayMs, Math.min(this.options.publicationDelayMs * this.stretch, PACING_MAX_SLICE_MS));
  }

  private enqueue(command: () => void | Promise<void>): void {
    this.inbox = undefined;
    this.chain = this.chain.then(command).catch((err: Error) => this.fence(`pool actor command failed: ${err.message}`));
  }

  private async apply(events: PoolEvent[]): Promise<void> {
    // Slices never take the window past the threshold, so each delta covers at most
    // publicationThreshold events, as when the reference checks after every command.
    let i = 0;
    while (i < events.length && !this.ended) {
      const room = Math.max(1, this.sliceThreshold() - this.state.pendingEvents);
      const slice = events.slice(i, i + room);
      i += slice.length;
      for (const e of slice) if (e.kind !== 'cleared') this.pendingBlocks += e.blockHashes.length;
      const result = offLoop(slice) ? await this.state.applyAsync(slice) : this.state.apply(slice);
      this.account(slice, result);
      if (result.outcomes.includes('IndexerInvariantViolation')) {
        this.fence('IndexerInvariantViolation');
        return;
      }
      if (this.state.pendingEvents >= this.sliceThreshold() || this.pendingBlocks >= PACING_MAX_SLICE_BLOCKS) this.flush();
      else this.armTimer();
    }
  }

  private account(events: readonly PoolEvent[], result: PoolBatchResult): void {
    this.counters.eventsApplied += events.length;
    this.counters.eventErrors += result.errorCount;
    this.counters.capacityFailures += result.capacityFailures;
    this.counters.unknownRemovals += result.unknownRemovals;
    this.counters.trackedBlocks = this.state.stats().lineageEntries;
    result.outcomes.forEach((error, i) => {
      if (error === null) return;
      if (error === 'ParentBlockNotFound') this.counters.parentNotFound += 1;
      if (error === 'TrackedBlockLimit') this.counters.storesRejectedAtLimit += 1;
      const ev = events[i];
      this.warn({ workerId: ev.workerId, dpRank: ev.dpRank }, ev.kind, error);
    });
  }

  private warn(source: SourceKey, event: string, error: string): void {
    this.warnings.warn(
      { pool: this.options.key, worker: source.workerId.toString(), dpRank: source.dpRank, event, error },
      'KV event rejected by the pool',
    );
  }

  private armTimer(): void {
    if (this.timer || this.state.pendingEvents === 0) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.enqueue(() => this.flush());
    }, this.sliceDelayMs());
  }

  /** Drains the window and publishes it (or drops it without a listener). */
  private flush(): void {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    const batch = this.state.drain();
    this.pendingBlocks = 0;
    if (!batch || this.ended) return;
    const listener = this.listener;
    if (!listener) {
      this.counters.deltasDropped += 1;
      return;
    }
    if (this.lastSequence === MAX_U64) {
      this.fence('SequenceExhausted');
      return;
    }
    const base = this.lastSequence;
    const sequence = base + 1n;
    // The hub turns a publication too big for one delta frame into a re-snapshot; it needs only the count.
    const payload =
      batch.buckets.length > MAX_DELTA_IMAGES
        ? Buffer.alloc(0)
        : encodeDelta(this.format, this.dcId, base, sequence, batch.buckets, batch.values);
    const frame: DeltaFrame = { baseSequence: base, sequence, imageCount: batch.buckets.length, payload };
    this.lastSequence = sequence;
    this.counters.deltasPublished += 1;
    listener.delta(frame);
  }

  private fence(reason: string): void {
    if (this.ended) return;
    this.options.logger.error({ pool: this.options.key, reason }, 'pool generation fenced');
    this.stop('fenced');
    this.listener?.fenced(reason);
    this.listener = undefined;
    this.options.onFenced?.(reason);
  }

  private end(how: 'retired'): Promise<void> {
    this.inbox = undefined;
    const done = this.chain.then(() => {
      if (this.ended) return;
      this.stop(how);
      this.listener?.retired();
      this.listener = undefined;
    });
    this.chain = done;
    return done;
  }

  private stop(how: 'retired' | 'fenced'): void {
    this.ended = how;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.state.close();
  }
}
