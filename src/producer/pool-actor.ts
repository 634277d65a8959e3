// One producer generation of one pool (hashing-ckf-cbi1.md §4.6-§4.7; wire-contract.md §8.3).
//
// Packed engine events of the pool's sources (decoded and hashed by ingest) are applied to the
// native pool state, serialized through one command chain (so a snapshot barrier never interleaves
// with an apply). The batches handed over in one event-loop turn (each ingest thread's hand-off is
// a port message of its own) are applied together, in slices of about SLICE_BLOCKS blocks, each on
// a libuv worker thread: the event loop, which serves every gRPC stream, heartbeat and timer, never
// runs a large apply (a synchronous apply held it for ~60 % of its time at 3 M blocks/s, and a
// growing table's rehash for tens of ms); an inbox of at most SYNC_APPLY_BLOCKS blocks and no reset,
// with nothing in flight, is applied on the loop instead (no worker round trip for a small message).
// A pool hosted on an ingest thread takes what that thread's own sockets received through
// received(): with nothing queued or in flight, a small burst is applied in the call, command- and
// promise-free (the common case at low rates). The pool stays single-writer: the native state runs its async calls
// one after another in the order they were made, and the next slice is handed over while one runs
// (APPLIES_IN_FLIGHT), so the pool's thread goes straight on to it instead of idling while the event
// loop, woken by the finished slice, handles it and makes the next call (a growing pool's applies
// were busy ~75 % of a window with one apply in flight). Results are handled in order.
// When a slice is handed over it is known whether it ends the publication window:
// `publicationThreshold` pending events or more publish one delta at once, drained and encoded by the
// same worker job; otherwise the first pending event of a window arms a one-shot `publicationDelayMs`
// timer that flushes whatever is pending. At most one window end is in flight, since each delta's base
// is the sequence the one before it published. Unlike the reference, which checks
// after every command, a backlog (many thresholds' worth in one slice) so becomes one delta rather
// than one per threshold: deltas cut inside one slice would reach the transport in the same turn
// anyway, so merging them costs no latency, and a burst of frames written in one turn (taken only
// when the loop next polls the sockets) would fill subscriber queues and make pacing stretch every
// subscriber's slice.
// Publishing without a listener drops the delta and does not advance the sequence. The listener
// may stretch the slice (threshold and delay) under load (publication/pacing.ts), within a delay
// of PACING_MAX_SLICE_MS and PACING_MAX_SLICE_BLOCKS blocks per delta.
//
// The mailbox (batches accepted but not yet applied) is bounded in batches, events and blocks
// (wire-contract.md §8.2): a batch that does not fit is dropped and its source reset, as on a gap
// (later batches rebuild it from live events), and counted — the actor never grows with its backlog.
import { setImmediate as nextTurn } from 'timers/promises';
import { monotonicMs } from '../clock';
import { MESSAGE_INFO_STRIDE, type PackedEngineEvents, type SourceKey } from '../ingest/types';
import type { DeltaFrame, PoolFeed, PoolImage, PoolListener } from '../publication/source';
import type { ProducerIdentity } from '../wire/types';
import {
  ACTOR_MAILBOX_CAPACITY,
  POOL_LARGE_INBOX_HOLD_MS,
  INGEST_LOG_MAX_PER_WINDOW,
  INGEST_RETAINED_BUFFER_BYTES,
  INGEST_LOG_WINDOW_MS,
  PACING_MAX_SLICE_BLOCKS,
  PACING_MAX_SLICE_MS,
  PENDING_BLOCK_PERMITS,
  PENDING_EVENT_PERMITS,
} from '../config/defaults';
import { ThrottledLogger } from '../ingest/throttle';
import { MAX_U64 } from '../config/limits';
import { CKF_SLOTS_PER_BUCKET } from '../wire/constants';
import {
  META_STRIDE,
  packedBlockCount,
  packedKind,
  packedEventWords,
  packedSource,
  PoolEventBatch,
  nativeLimits,
  PoolFilterState,
  type DrainedWindow,
  type WindowEnd,
  type PoolBatchResult,
} from '../native';
import type { DeltaTiming, PoolMetrics } from '../metrics/registry';
import { PoolCounters } from './pool-counters';
import type { PoolGeneration } from './pool-generation';
import type { HostedPoolOptions } from './pool-host-protocol';

/**
 * Blocks one apply takes (one bigger event is a slice of its own): a delta is cut after a slice at
 * the earliest, so this bounds how long a backlog's first changes wait for their delta (~1 ms).
 */
const SLICE_BLOCKS = 4096;

/**
 * An inbox of at most this many blocks, with no apply in flight, is applied on the event loop (tens
 * of microseconds) rather than on a libuv worker: a worker's round trip is two thread wake-ups per
 * inbox, most of the relay's CPU per message at low rates where each inbox is one small engine
 * message (issue 30 item 2).
 */
const SYNC_APPLY_BLOCKS = 256;

/** Inbox buffers kept for reuse: about the slices in flight while ingest threads fill the mailbox. */
const SPARE_INBOXES = 8;

/**
 * Applies handed to the native state at once: one running and the next queued behind it, which the
 * pool's worker thread takes as soon as the first ends (at most nativeLimits.maxQueuedPoolCalls).
 */
const APPLIES_IN_FLIGHT = 2;

/** Event boundaries of a packed batch: events [from, to) occupy words [wordsFrom, wordsTo). */
interface Slice {
  from: number;
  to: number;
  wordsFrom: number;
  wordsTo: number;
  /** Engine ids the slice's stores and removals carry. */
  blocks: number;
}

/**
 * The next slice of events [from, limit): as many as SLICE_BLOCKS blocks and one async apply's
 * copied words allow, or the one event that alone is bigger. A window stretched by pacing is so
 * applied in pieces, and checked against PACING_MAX_SLICE_BLOCKS after each.
 */
function slice(meta: Uint32Array, from: number, limit: number, wordsFrom: number): Slice {
  let words = wordsFrom;
  let blocks = 0;
  let to = from;
  for (; to < limit; to++) {
    const at = to * META_STRIDE;
    const eventWords = packedEventWords(meta, at);
    const eventBlocks = packedBlockCount(meta, at);
    if (to > from && (blocks + eventBlocks > SLICE_BLOCKS || words + eventWords - wordsFrom > nativeLimits.maxAsyncBatchWords)) break;
    words += eventWords;
    blocks += eventBlocks;
  }
  return { from, to, wordsFrom, wordsTo: words, blocks };
}

/** Events of the batches accepted since the last queued command, and what they hold of the mailbox. */
interface Inbox {
  events: PoolEventBatch;
  batches: number;
  eventCount: number;
  blocks: number;
  /** It clears a source (a reset), whose cost is the source's size, not the inbox's. */
  clears: boolean;
  /** When the oldest of its batches was received (monotonicMs); Infinity for none (a reset alone). */
  receivedAtMs: number;
  /** When that batch reached this actor (monotonicMs). */
  admittedAtMs: number;
  /** Settles once the inbox was applied (or its apply failed). */
  applied: Promise<void>;
}

const sourceKey = (s: SourceKey): string => `${s.workerId}:${s.dpRank}`;

/** The sources a burst's messages name (nearly always the one rank of its socket). */
function burstSources(b: PackedEngineEvents): SourceKey[] {
  const ranks = new Set<number>();
  for (let i = 0; i < b.messages; i++) ranks.add(b.messageInfo[i * MESSAGE_INFO_STRIDE]);
  return [...ranks].map((dpRank) => ({ workerId: b.workerId, dpRank }));
}

/** What a pool actor logs with (a pino Logger, or an ingest thread's port to the main thread's). */
export interface PoolLogger {
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** HostedPoolOptions: what is also sent to a pool hosted on an ingest thread (its own fields cross no thread). */
export interface PoolActorOptions extends HostedPoolOptions {
  logger: PoolLogger;
  /** Where its metrics are counted (default: counters of its own); a thread-hosted pool's are shared with the main thread. */
  counters?: PoolCounters;
  /**
   * An inbox of at most this many blocks, with nothing in flight, is applied on the calling thread
   * (default SYNC_APPLY_BLOCKS, for the event loop; an ingest thread that hosts the pool takes more).
   */
  syncApplyBlocks?: number;
  /**
   * Called once when this generation fenced itself (IndexerInvariantViolation, sequence exhaustion,
   * or a command that failed unexpectedly); the producer replaces it with a new generation.
   */
  onFenced?(reason: string): void;
  /**
   * `batches` batches of `source` were dropped on a full mailbox and the source reset (ingest counts
   * them and replays the source from 0). Called once the pool applied what it held when they were
   * dropped: a replay asked for at once would arrive at a mailbox still full and be dropped again.
   */
  onOverflow?(source: SourceKey, batches: number): void;
  /** A delta went to the listener: the relay's own share of its event→delta time, by stage. */
  onDeltaPublished?(timing: DeltaTiming): void;
  /**
   * Settles (never rejects) once the tables of the generation this one replaces are freed: the
   * native state, and the reservation it makes (limits.reservePoolBlocks), is made only then, so a
   * pool never holds two reservations at once (a re-fence of every pool would double them). Batches,
   * resets and attaches that arrive meanwhile wait in the mailbox, as behind any command.
   */
  after?: Promise<void>;
  /**
   * Whether the listener has yet to take the deltas published so far (a thread-hosted pool's main
   * thread has not handled them): windows then stay open, their changes joining the next delta,
   * until it has, or until a window reaches PACING_MAX_SLICE_BLOCKS. Deltas so never pile up faster
   * than the publication layer takes them (it judges its pacing once per turn of its event loop).
   */
  listenerBehind?(): boolean;
}

/** How a window ends: as the delta `end` to `listener`, or (end null) discarded. */
interface WindowClose {
  end: WindowEnd | null;
  listener: PoolListener | undefined;
  /** When the oldest batch in the window was received (PoolActor.pendingSinceMs). */
  sinceMs: number;
  /** When that batch reached the actor (PoolActor.pendingAdmittedMs). */
  admittedMs: number;
}

export class PoolActor implements PoolGeneration {
  readonly producer: ProducerIdentity;
  readonly dcId: bigint;
  /** Made at construction, or once `after` settled (a command: nothing reads it before). */
  private state!: PoolFilterState;
  private created = false;
  /** The state's reserved tables have every page in (PoolFilterState.tablesPopulated; checked until it holds). */
  private populated = false;
  /** Settles once the native state was freed (after the generation ended), or at once if it never was made. */
  readonly released: Promise<void>;
  private markReleased!: () => void;
  /** A misbehaving source can be rejected thousands of times a second; each must not be a log line. */
  private readonly warnings: ThrottledLogger;
  private listener: PoolListener | undefined;
  private lastSequence = 0n;
  private chain: Promise<void> = Promise.resolve();
  /** Commands queued on the chain and not finished (received() applies in the call only with none). */
  private commands = 0;
  /** retire() was called: what arrives now queues behind it (and is dropped), as before it. */
  private retiring = false;
  /**
   * Events of the batches that arrived since the last queued command: the apply command queued for
   * the first of them takes them all, so a burst of engine messages costs one native apply per
   * publication slice rather than one per message. Queuing any other command closes it (order).
   */
  private inbox: Inbox | undefined;
  /** Applied inboxes' buffers, kept for the next ones (they have grown to the usual burst). */
  private readonly spares: PoolEventBatch[] = [];
  /** One grown past INGEST_RETAINED_BUFFER_BYTES, kept POOL_LARGE_INBOX_HOLD_MS after its last use. */
  private largeSpare: PoolEventBatch | undefined;
  private largeSpareTimer: NodeJS.Timeout | undefined;
  /** Batches, events and blocks accepted and not yet applied (the mailbox bound). */
  private queuedBatches = 0;
  private queuedEvents = 0;
  private queuedBlocks = 0;
  /** Sources with batches dropped on a full mailbox, reported once the mailbox applied what it held. */
  private readonly overflowed = new Map<string, { source: SourceKey; batches: number }>();
  /** Sources reset with no batch accepted since: another reset would clear nothing. */
  private readonly resetQueued = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  /** The listener's pacing request: the configured slice times this. */
  private stretch = 1;
  /** Events and blocks handed to the native state since the last window end was handed over (its pending events). */
  private pendingEvents = 0;
  private pendingBlocks = 0;
  /**
   * When the oldest batch of the pending events was received (Infinity: none stamped). An inbox's
   * slices all carry its oldest batch's time, so a window ended inside an inbox is measured from
   * there: the latency reported is at most the delta's real one plus one inbox's (~1 slice) span.
   */
  private pendingSinceMs = Infinity;
  /** When the batch pendingSinceMs stamps reached this actor. */
  private pendingAdmittedMs = Infinity;
  /** Handling of the applies handed over and not yet handled, oldest first (never rejects). */
  private readonly applying: Promise<void>[] = [];
  /** An apply that ends the window is in flight: the next may not, until its delta took a sequence. */
  private windowEndInFlight = false;
  private ended: 'retired' | 'fenced' | undefined;
  private readonly counters: PoolCounters;
  private readonly syncApplyBlocks: number;
  /** Fingerprint slots of the pool's CKF. */
  private readonly filterSlots: number;
  private readonly ckf: NonNullable<ProducerIdentity['ckfFormat']>;

  constructor(private readonly options: PoolActorOptions) {
    this.producer = options.producer;
    this.dcId = options.dcId;
    const ckf = options.producer.ckfFormat;
    if (!ckf) throw new TypeError('producer identity without a CKF format');
    this.ckf = ckf;
    this.filterSlots = Number(ckf.bucketCount) * CKF_SLOTS_PER_BUCKET;
    this.released = new Promise((resolve) => (this.markReleased = resolve));
    this.warnings = new ThrottledLogger(options.logger, INGEST_LOG_MAX_PER_WINDOW, INGEST_LOG_WINDOW_MS);
    this.counters = options.counters ?? new PoolCounters();
    this.counters.publicationSliceMs = this.sliceDelayMs();
    this.syncApplyBlocks = options.syncApplyBlocks ?? SYNC_APPLY_BLOCKS;
    const after = options.after;
    if (after) this.enqueue(() => after.then(() => this.create()));
    else this.create();
  }

  private create(): void {
    // Fenced while it waited (a command failed): nothing will use or free a state made now.
    if (this.ended) return;
    this.state = new PoolFilterState({
      bucketCount: Number(this.ckf.bucketCount),
      seed: this.ckf.seed,
      maxTrackedBlocks: this.options.maxTrackedBlocks,
      reserve: this.options.reserve,
    });
    this.created = true;
    // From creation: a reservation holds its tables before the first block arrives.
    this.counters.stateBytes = this.state.stateBytes();
  }

  get isEnded(): boolean {
    return this.ended !== undefined;
  }

  /**
   * Packed engine events of this pool's sources (synchronous hand-off, copied; applied in order).
   * Returns a promise that settles once they were applied, for a producer that waits for it before
   * it sends more (ingest threads); undefined when they were not taken.
   */
  events(b: PackedEngineEvents): Promise<void> | undefined {
    return this.take(b, false);
  }

  /**
   * A burst the calling thread received itself (the ingest thread that hosts the pool, from its own
   * sockets): with nothing queued or in flight, and within syncApplyBlocks and a synchronous apply's
   * words, it is applied in this call, and no promise is made (undefined: applied or not taken); the
   * receive costs no later turn, command or promise per message (issue 30 item 2). Otherwise as
   * events(). Bursts handed over by another thread go to events(): those of one turn are collected
   * into one inbox, counted against the mailbox.
   */
  received(b: PackedEngineEvents): Promise<void> | undefined {
    return this.take(b, true);
  }

  private take(b: PackedEngineEvents, here: boolean): Promise<void> | undefined {
    if (this.ended) return;
    this.counters.eventsDroppedBlockSize += b.droppedBlockSize;
    if (b.meta.length === 0) return;
    let blocks = 0;
    for (let at = 0; at < b.meta.length; at += META_STRIDE) blocks += packedBlockCount(b.meta, at);
    const events = b.meta.length / META_STRIDE;
    if (here && this.mayApplyNow(blocks, b.words.length)) {
      this.resetsAnswered(b);
      this.applyReceived(b, events, blocks);
      return;
    }
    // An empty mailbox takes any batch, so one larger than the permits is not refused forever.
    if (
      this.queuedBatches > 0 &&
      (this.queuedBatches >= ACTOR_MAILBOX_CAPACITY || this.queuedBlocks + blocks > PENDING_BLOCK_PERMITS || this.queuedEvents + events > PENDING_EVENT_PERMITS)
    ) {
      this.counters.mailboxOverflows += 1;
      for (const source of burstSources(b)) {
        this.warn(
          source,
          'batch',
          `mailbox full (${this.queuedBatches} batches, ${this.queuedEvents} events, ${this.queuedBlocks} blocks): batch dropped, source reset`,
        );
        this.reset(source);
        this.dropped(source);
      }
      return;
    }
    this.resetsAnswered(b);
    const inbox = this.admit(b.messages, events, blocks, 8 * b.words.length > INGEST_RETAINED_BUFFER_BYTES);
    inbox.events.append(b.meta, b.words);
    if (b.receivedAtMs < inbox.receivedAtMs) {
      inbox.receivedAtMs = b.receivedAtMs;
      inbox.admittedAtMs = monotonicMs();
    }
    return inbox.applied;
  }

  /** A burst was taken behind its sources' queued resets: a reset asked for after it is queued anew (it must drop this burst's blocks too). */
  private resetsAnswered(b: PackedEngineEvents): void {
    // Nearly always empty: the burst's sources (and their keys) are not worked out per burst then.
    if (this.resetQueued.size > 0) for (const source of burstSources(b)) this.resetQueued.delete(sourceKey(source));
  }

  private dropped(source: SourceKey): void {
    const key = sourceKey(source);
    const entry = this.overflowed.get(key);
    if (entry) {
      entry.batches += 1;
      return;
    }
    if (this.overflowed.size === 0) {
      // After every command queued so far, the open inbox (and its reset) included.
      void this.idle().then(() => {
        const reports = [...this.overflowed.values()];
        this.overflowed.clear();
        for (const r of reports) this.options.onOverflow?.(r.source, r.batches);
      });
    }
    this.overflowed.set(key, { source, batches: 1 });
  }

  /** The source's history is lost: drop all of its blocks (like AllBlocksCleared), in order with its batches. */
  reset(source: SourceKey): void {
    if (this.ended) return;
    const key = sourceKey(source);
    // Taken whatever the mailbox holds: at most one per source, since duplicates are skipped.
    if (this.resetQueued.has(key)) return;
    this.resetQueued.add(key);
    const inbox = this.admit(1, 1, 0);
    inbox.clears = true;
    inbox.events.addCleared(source.workerId, source.dpRank);
  }

  /** Accounts a batch to the mailbox; the open inbox, or a new one whose apply is queued now. */
  private admit(batches: number, events: number, blocks: number, large = false): Inbox {
    this.queuedBatches += batches;
    this.queuedEvents += events;
    this.queuedBlocks += blocks;
    // An inbox holds about one slice: its batches count as applied (and ingest threads get their
    // hand-off room back) once it is, so a backlog moves through the pool in a pipeline of slices
    // rather than in one inbox's worth at a time, with the apply thread idle while ingest waits.
    if (this.inbox && this.inbox.blocks > 0 && this.inbox.blocks + blocks > SLICE_BLOCKS) this.inbox = undefined;
    if (this.inbox) {
      this.inbox.batches += batches;
      this.inbox.eventCount += events;
      this.inbox.blocks += blocks;
      return this.inbox;
    }
    let applied!: () => void;
    const inbox: Inbox = {
      events: (large ? this.takeLargeSpare() : undefined) ?? this.spares.pop() ?? new PoolEventBatch(),
      batches,
      eventCount: events,
      blocks,
      clears: false,
      receivedAtMs: Infinity,
      admittedAtMs: Infinity,
      applied: new Promise((resolve) => (applied = resolve)),
    };
    this.enqueue(async () => {
      // Every batch handed over in this loop turn joins the inbox (each ingest thread's hand-off is a
      // port message of its own): one apply, one delta, not one per message of a backlog.
      if (this.inbox === inbox) await nextTurn();
      if (this.inbox === inbox) this.inbox = undefined;
      try {
        await this.apply(inbox);
      } finally {
        // Once its applies were handled: their results name its events.
        void this.settled().then(() => {
          this.queuedBatches -= inbox.batches;
          this.queuedEvents -= inbox.eventCount;
          this.queuedBlocks -= inbox.blocks;
          applied();
          inbox.events.reset();
          // One a large burst grew is kept a moment for the next, then given back (issue 26 items 2, 4).
          if (inbox.events.capacityBytes > INGEST_RETAINED_BUFFER_BYTES) this.keepLargeSpare(inbox.events);
          else if (this.spares.length < SPARE_INBOXES) this.spares.push(inbox.events);
        });
      }
    });
    this.inbox = inbox;
    return inbox;
  }

  private takeLargeSpare(): PoolEventBatch | undefined {
    const spare = this.largeSpare;
    this.largeSpare = undefined;
    return spare;
  }

  private keepLargeSpare(batch: PoolEventBatch): void {
    if (this.ended) return;
    if (!this.largeSpare || batch.capacityBytes > this.largeSpare.capacityBytes) this.largeSpare = batch;
    clearTimeout(this.largeSpareTimer);
    this.largeSpareTimer = setTimeout(() => (this.largeSpare = undefined), POOL_LARGE_INBOX_HOLD_MS);
    this.largeSpareTimer.unref();
  }

  attach(listener: PoolListener): Promise<PoolImage> {
    return new Promise<PoolImage>((resolve, reject) => {
      this.enqueue(async () => {
        if (this.ended) {
          reject(new Error(`pool generation ${this.options.key} is ${this.ended}`));
          return;
        }
        try {
          await this.flush();
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

  /** Waits until every command queued so far has run and its applies were handled (tests, orderly shutdown). */
  idle(): Promise<void> {
    return this.chain.then(() => this.settled());
  }

  /** Settles once every apply handed over so far was handled. */
  private settled(): Promise<void> {
    return this.applying[this.applying.length - 1] ?? Promise.resolve();
  }

  metrics(): PoolMetrics {
    return { pool: this.options.key, ...this.counters.values() };
  }

  pace(stretch: number): void {
    if (!Number.isInteger(stretch) || stretch < 1) throw new RangeError(`publication stretch must be a positive integer, got ${stretch}`);
    this.stretch = stretch;
    this.counters.publicationSliceMs = this.sliceDelayMs();
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
    this.commands += 1;
    this.chain = this.chain
      .then(command)
      .catch((err: Error) => this.fence(`pool actor command failed: ${err.message}`))
      .then(() => {
        this.commands -= 1;
      });
  }

  /**
   * Whether a burst of `blocks` blocks and `words` words is applied in the received() call: nothing
   * queued (no command, batch or reset waits: order) and nothing in flight (single writer, results
   * in order), and small enough for a synchronous apply (a large burst goes in slices, off the thread).
   */
  private mayApplyNow(blocks: number, words: number): boolean {
    return (
      this.commands === 0 &&
      this.queuedBatches === 0 &&
      this.applying.length === 0 &&
      !this.retiring &&
      blocks <= this.syncApplyBlocks &&
      words <= nativeLimits.maxSyncBatchWords &&
      this.tablesIn()
    );
  }

  /**
   * Whether an apply may run on this thread as far as the tables go: a fresh reservation's pages are
   * faulted in by the populating thread over its first few hundred ms, and an apply before then
   * faults the pages it writes itself (2-30 ms each for a huge page on the project's VM, several per
   * small apply), so until they are in every apply goes to a worker. Only with nothing in flight.
   */
  private tablesIn(): boolean {
    this.populated ||= this.state.tablesPopulated();
    return this.populated;
  }

  /** A burst applied as it was received (mayApplyNow): its window ends here if small, else in a command. */
  private applyReceived(b: PackedEngineEvents, events: number, blocks: number): void {
    if (b.receivedAtMs < this.pendingSinceMs) this.stamp(b.receivedAtMs, monotonicMs());
    if (!this.applyNow(b.meta, b.words, events, blocks)) return;
    if (!this.windowFull() || !this.mayEndWindow()) this.armTimer();
    else if (!this.endWindowHere()) this.enqueue(() => this.flush());
  }

  /** The pending events' oldest batch, received at `receivedAtMs`, reached this actor at `admittedAtMs`. */
  private stamp(receivedAtMs: number, admittedAtMs: number): void {
    this.pendingSinceMs = receivedAtMs;
    this.pendingAdmittedMs = admittedAtMs;
  }

  /**
   * Hands the batch's slices to the native state, at most APPLIES_IN_FLIGHT at a time; returns once
   * the last was handed over (settled() then covers their handling). The batch must stay unchanged
   * until then: results are reported against its events.
   */
  private async apply(inbox: Inbox): Promise<void> {
    const { meta, words } = inbox.events.packed();
    const count = meta.length / META_STRIDE;
    if (this.applying.length === 0 && !inbox.clears && inbox.blocks <= this.syncApplyBlocks && words.length <= nativeLimits.maxSyncBatchWords && this.tablesIn()) {
      return this.applyHere(inbox, meta, words);
    }
    for (let s = slice(meta, 0, count, 0); s.from < count; s = slice(meta, s.to, count, s.wordsTo)) {
      while (this.applying.length >= APPLIES_IN_FLIGHT) await this.applying[0];
      if (this.ended) return;
      this.pendingEvents += s.to - s.from;
      this.pendingBlocks += s.blocks;
      if (inbox.receivedAtMs < this.pendingSinceMs) this.stamp(inbox.receivedAtMs, inbox.admittedAtMs);
      const m = meta.subarray(s.from * META_STRIDE, s.to * META_STRIDE);
      const w = words.subarray(s.wordsFrom, s.wordsTo);
      // Every applied event is pending until the window ends, so whether this slice ends it is known
      // now: then the same worker job drains (and encodes) it, without a second trip.
      const ends = !this.windowEndInFlight && this.windowFull() && this.mayEndWindow();
      const window = ends ? this.windowEnd() : undefined;
      if (window) this.windowEndInFlight = true;
      const result = this.state.applyPackedAsync(m, w, window?.end);
      // Handled in its turn below; marked handled now, so a rejection waiting for it is not reported.
      result.catch(() => undefined);
      // Never rejects: a failure fences, as a failed command does.
      const handled = this.settled()
        .then(() => result)
        .then((r) => this.applied(m, w, r, window))
        .catch((err: Error) => this.fence(`pool actor command failed: ${err.message}`))
        .finally(() => {
          if (window) this.windowEndInFlight = false;
        });
      this.applying.push(handled);
      void handled.then(() => this.applying.shift());
    }
  }

  /**
   * A small inbox applied on the calling (event-loop) thread: nothing is in flight, so the state is
   * free for a synchronous call and the results stay in order. A window it ends ends as a timer's
   * would (flush(): at once for a small window, on a worker for a large one).
   */
  private async applyHere(inbox: Inbox, meta: Uint32Array, words: BigUint64Array): Promise<void> {
    if (this.ended) return;
    if (inbox.receivedAtMs < this.pendingSinceMs) this.stamp(inbox.receivedAtMs, inbox.admittedAtMs);
    if (!this.applyNow(meta, words, meta.length / META_STRIDE, inbox.blocks)) return;
    if (this.windowFull() && this.mayEndWindow()) await this.flush();
    else this.armTimer();
  }

  /** A synchronous apply of `events` events and `blocks` blocks, pending until their window ends; false if it fenced. */
  private applyNow(meta: Uint32Array, words: BigUint64Array, events: number, blocks: number): boolean {
    this.pendingEvents += events;
    this.pendingBlocks += blocks;
    let result: PoolBatchResult;
    try {
      // Read before the next apply (account and the check below): no result object per burst.
      result = this.state.applyPackedReused(meta, words);
    } catch (err) {
      this.fence(`pool actor command failed: ${(err as Error).message}`);
      return false;
    }
    this.account(meta, words, result);
    if (result.errorCount > 0 && result.outcomes.includes('IndexerInvariantViolation')) {
      this.fence('IndexerInvariantViolation');
      return false;
    }
    return true;
  }

  /** One slice's result, in the order the slices were handed over. */
  private applied(meta: Uint32Array, words: BigUint64Array, result: PoolBatchResult & { drained?: DrainedWindow | null }, window: WindowClose | undefined): void {
    if (this.ended) return;
    this.account(meta, words, result);
    if (result.outcomes.includes('IndexerInvariantViolation')) {
      this.fence('IndexerInvariantViolation');
      return;
    }
    if (window) this.publish(window, result.drained ?? null);
    else this.armTimer();
  }

  private account(meta: Uint32Array, words: BigUint64Array, result: PoolBatchResult): void {
    this.counters.eventsApplied += result.outcomes.length;
    this.counters.eventErrors += result.errorCount;
    this.counters.capacityFailures += result.capacityFailures;
    this.counters.unknownRemovals += result.unknownRemovals;
    this.counters.trackedBlocks = result.trackedBlocks;
    this.counters.filterResidentBlocks = result.residentBlocks;
    this.counters.filterLoad = result.residentBlocks / this.filterSlots;
    this.counters.stateBytes = result.stateBytes;
    if (result.capacityFailures > 0) {
      // Not a fault (hashing-ckf-cbi1.md §4.3: the blocks stay owned and are offered again), but a
      // pool past its CKF's capacity walks maxKicks relocations for every new block, so say it.
      this.warnings.warn(
        {
          pool: this.options.key,
          capacityFailures: this.counters.capacityFailures,
          filterLoad: Number(this.counters.filterLoad.toFixed(3)),
          trackedBlocks: result.trackedBlocks,
        },
        'CKF at capacity: new blocks omitted from the filter after maxKicks relocations each (ingest slows sharply); size expectedUniqueBlocks for this pool',
      );
    }
    if (result.errorCount === 0) return;
    let wordsAt = 0;
    result.outcomes.forEach((error, i) => {
      const at = i * META_STRIDE;
      const eventWords = wordsAt;
      wordsAt += packedEventWords(meta, at);
      if (error === null) return;
      if (error === 'ParentBlockNotFound') this.counters.parentNotFound += 1;
      if (error === 'TrackedBlockLimit') this.counters.storesRejectedAtLimit += 1;
      this.warn(packedSource(meta, at, words, eventWords), packedKind(meta, at), error);
    });
  }

  private warn(source: SourceKey, event: string, error: string): void {
    this.warnings.warn(
      { pool: this.options.key, worker: source.workerId.toString(), dpRank: source.dpRank, event, error },
      'KV event rejected by the pool',
    );
  }

  /** The pending events make a delta now: the (stretched) threshold, or the bound on a delta's blocks. */
  private windowFull(): boolean {
    return this.pendingEvents >= this.sliceThreshold() || this.pendingBlocks >= PACING_MAX_SLICE_BLOCKS;
  }

  /** A window may end unless the listener is behind (listenerBehind), and must once it is as large as a delta may be. */
  private mayEndWindow(): boolean {
    return !this.listener || this.pendingBlocks >= PACING_MAX_SLICE_BLOCKS || !this.options.listenerBehind?.();
  }

  private armTimer(): void {
    // Without a listener a window's end publishes nothing: it ends at the threshold, or at attach()
    // (which flushes first), rather than on a timer that wakes the loop for every small message.
    if (this.timer || this.pendingEvents === 0 || !this.listener) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      // A listener still behind is asked again one slice later.
      if (this.mayEndWindow()) this.enqueue(() => this.flush());
      else this.armTimer();
    }, this.sliceDelayMs());
  }

  /**
   * How the window ends now: a delta after the last sequence to the listener, or a discard without
   * one. The native side walks the window and encodes the delta (on a worker unless it is small): its
   * size is the buckets touched since the last one, which a clear of a large source makes millions.
   */
  private windowEnd(): WindowClose {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    this.pendingEvents = 0;
    this.pendingBlocks = 0;
    const sinceMs = this.pendingSinceMs;
    const admittedMs = this.pendingAdmittedMs;
    this.pendingSinceMs = Infinity;
    this.pendingAdmittedMs = Infinity;
    const listener = this.listener;
    if (!listener || this.lastSequence === MAX_U64) return { end: null, listener, sinceMs, admittedMs };
    return { end: { dcId: this.dcId, baseSequence: this.lastSequence, sequence: this.lastSequence + 1n }, listener, sinceMs, admittedMs };
  }

  /**
   * Drains the window and publishes it (or drops it without a listener). A small window ends here,
   * at once (a worker round trip would add a fraction of a millisecond to every trickle delta); a
   * larger one on a worker.
   */
  private async flush(): Promise<void> {
    await this.settled();
    if (this.ended || this.endWindowHere()) return;
    const window = this.windowEnd();
    this.publish(window, await this.state.drainAsync(window.end));
  }

  /** Ends a small window here and now (nothing may be in flight); false if it is too large to. */
  private endWindowHere(): boolean {
    if (this.state.dirtyBuckets > nativeLimits.maxSyncWindowBuckets) return false;
    const window = this.windowEnd();
    this.publish(window, this.state.drainDelta(window.end));
    return true;
  }

  private publish(window: WindowClose, drained: DrainedWindow | null): void {
    const { end, listener } = window;
    if (!drained || this.ended) return;
    if (!listener) {
      this.counters.deltasDropped += 1; // nobody to publish to: ended without building its images
      return;
    }
    if (!end) {
      this.fence('SequenceExhausted');
      return;
    }
    // The listener may have detached meanwhile (detach is not a command): the delta then goes to nobody.
    if (this.listener !== listener) return;
    // Without a payload (more images than one delta frame carries) the hub re-snapshots: it needs only the count.
    const frame: DeltaFrame = { baseSequence: end.baseSequence, sequence: end.sequence, imageCount: drained.imageCount, payload: drained.payload ?? Buffer.alloc(0) };
    this.lastSequence = end.sequence;
    this.counters.deltasPublished += 1;
    listener.delta(frame);
    if (window.sinceMs !== Infinity) this.options.onDeltaPublished?.({ handoffMs: window.admittedMs - window.sinceMs, poolMs: monotonicMs() - window.admittedMs });
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
    this.retiring = true;
    const done = this.idle().then(() => {
      if (this.ended) return;
      this.stop(how);
      this.listener?.retired();
      this.listener = undefined;
    });
    this.chain = done;
    return done;
  }

  private stop(how: 'retired' | 'fenced'): void {
    clearTimeout(this.largeSpareTimer);
    this.largeSpare = undefined;
    this.ended = how;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    // Applies still in flight finish first (the native state refuses to close under them); their
    // results are ignored. A state not made yet never will be (create() checks). Freed off this
    // thread: a reservation's munmap would hold it (the event loop, or an ingest thread and its
    // other pools) up to ~150 ms; `released` waits for it, so a successor maps only then.
    void this.settled()
      .then(() => (this.created ? this.state.release() : undefined))
      .finally(() => this.markReleased());
  }
}
