// The pool actor's native state (hashing-ckf-cbi1.md §4): per-(workerId, dpRank) lineage of engine
// external ids → canonical hashes, owner counting with one physical fingerprint per resident hash,
// the cuckoo filter and the publication window drained into absolute bucket images.
//
// Contract:
// - Canonical hashes come from each stored block's `tokensHashes` (block hashes computed with
//   ./hashing); engine ids are lineage only and never enter the filter.
// - A failing store (ParentBlockNotFound, InvalidBlockSequence, OwnershipDegreeOverflow,
//   AllocationFailed, TrackedBlockLimit) leaves the state untouched. TrackedBlockLimit: the store would
//   take the pool's tracked blocks (lineage entries, all sources) past `maxTrackedBlocks`; it is
//   rejected whole and counted (`trackedBlockLimitRejections`) until removals make room. Removals process every id and report the first
//   error (IndexerInvariantViolation). Capacity exhaustion is not an error: it is counted
//   (`capacityFailures`), the ownership is kept, and a later store of the hash retries admission.
// - Every applied event counts as one pending event (even when it fails); drain() resets the count.
// - Call sizes are bounded (nativeLimits, native/core/native_limits.h): a synchronous apply, store or
//   remove above maxSyncBatchWords words, an async apply above maxAsyncBatchWords, words() above
//   maxSyncFilterWords buckets, drain() above as many dirty buckets and drainDelta() above
//   maxSyncWindowBuckets throw a RangeError and change nothing (drainAsync and copyWordsAsync have
//   no such bound).
// - applyAsync() copies the encoded batch before it returns: the arrays are free to reuse at once.
// - Not thread-safe by design: while an async call (apply, drainAsync, word copy) is in flight, a
//   synchronous call on the same PoolFilterState throws Error{code: 'PoolBusy'}. Async calls made
//   meanwhile are queued and run in the order they were made, up to nativeLimits.maxQueuedPoolCalls
//   in flight (PoolBusy past it): the next apply so starts the moment the one before ends.
// - `reserve` sizes the owner table for `blocks` hashes and each new source's lineage table for
//   `perSource` ids (out of a budget of `blocks` over all sources) at construction: filling to there
//   then grows no table. The tables are mapped up front and count in stateBytes from the start; the
//   lineage tables of the `sources` it names are made with the owner table (a source's first event
//   then maps nothing), any other source's at its first event while the budget lasts.
// - poolStateMemory() sums stateBytes over every state of the process (all threads) until each is
//   freed, with its peak: a pool's new generation reserves only once its predecessor's tables are
//   freed (producer/pool-actor.ts), so the peak stays at one reservation per pool.
// - close() frees the native memory at once, on the calling thread; any later call throws
//   Error{code: 'PoolClosed'}. release() frees it off the calling thread instead (a reservation's munmap
//   takes milliseconds in huge pages, up to ~150 ms for 200 MiB in small ones) and settles once
//   every table is unmapped and its bytes left poolStateMemory(); later calls throw PoolClosed as
//   after close(). Without either, the memory is freed when the object is garbage-collected.
import type * as Binding from '../../binding';
import type { PoolStats, PoolTableStats } from '../../binding';
import { DEFAULT_CKF_MAX_KICKS, DEFAULT_CKF_SEED } from '../config/defaults';
import { MAX_U32, MAX_U64 } from '../config/limits';
import { relayAddon } from './addon';
import { nativeLimits } from './limits';

const addon = relayAddon();

export type { PoolStats, PoolTableStats };

export type PoolErrorCode =
  | 'ParentBlockNotFound'
  | 'InvalidBlockSequence'
  | 'OwnershipDegreeOverflow'
  | 'IndexerInvariantViolation'
  | 'AllocationFailed'
  | 'TrackedBlockLimit';

/** u64 values: a BigUint64Array (fastest) or bigints in [0, 2^64). */
export type U64List = BigUint64Array | readonly bigint[];

export type PoolEvent =
  | {
      kind: 'stored';
      workerId: bigint;
      dpRank: number;
      /** Engine id of the block before blockHashes[0], or null for a root. */
      parentHash: bigint | null;
      /** Engine start position; only a non-zero start without a parent matters (InvalidBlockSequence). */
      startPosition?: number | null;
      /** Engine external ids (lineage only). */
      blockHashes: U64List;
      /** Block hashes of the blocks' tokens (§1.3), same length as blockHashes. */
      tokensHashes: U64List;
    }
  | { kind: 'removed'; workerId: bigint; dpRank: number; blockHashes: U64List }
  | { kind: 'cleared'; workerId: bigint; dpRank: number };

export interface PoolBatchResult {
  /** Per event: null, or the error that rejected (store) or interrupted (removal) it. */
  outcomes: (PoolErrorCode | null)[];
  errorCount: number;
  /** Blocks omitted for capacity in this batch. */
  capacityFailures: number;
  /** Removals of ids this source never stored (idempotent no-ops) in this batch. */
  unknownRemovals: number;
  /** Tracked blocks (lineage entries, all sources) after the batch: stats().lineageEntries without building stats. */
  trackedBlocks: number;
  /** Fingerprints in the filter after the batch: stats().residentCount without building stats. */
  residentBlocks: number;
  /** Bytes of the state's tables after the batch: filter words, owner and lineage tables (both of a table that drains). */
  stateBytes: number;
}

export interface BucketImages {
  buckets: Uint32Array;
  values: BigUint64Array;
}

/**
 * A publication window ended off the event loop: its image count and, when one frame carries them
 * (and it was not discarded), the delta frame.
 */
export type DrainedWindow = Binding.DrainedWindow;
/** The delta a window ends as: baseSequence -> sequence, published by the relay dcId. */
export type WindowEnd = Binding.WindowEnd;

export interface PoolFilterStateOptions {
  /** Power of two in [2, 2^24] (see ckfBucketCount). */
  bucketCount: number;
  seed?: bigint;
  /** Relocation bound, 1..4096. */
  maxKicks?: number;
  /** Bound on tracked blocks (lineage entries over all sources), 1 .. 2^31 - 1; default: the largest. */
  maxTrackedBlocks?: number;
  /** Tables reserved at construction (limits.reservePoolBlocks); default: none, they grow as they fill. */
  reserve?: PoolReservation;
}

/** blocks: 0 .. min(2^26, maxTrackedBlocks); perSource: 0 .. blocks. */
export interface PoolReservation {
  blocks: number;
  perSource: number;
  /** Sources whose lineage tables are made at construction (at most 65536); default: none. */
  sources?: readonly SourceRef[];
}

/** A (worker, dp rank) source of a pool. */
export interface SourceRef {
  workerId: bigint;
  dpRank: number;
}

// The packed encoding is defined once, natively (native/pool/packed_batch.h).
const LAYOUT = addon.packedBatchLayout;
/** u32 entries of one event in a packed batch's meta. */
export const META_STRIDE = LAYOUT.metaStride;

/** Words the packed event whose meta entry starts at meta[at] occupies (packed_batch.h PackedEventWords). */
export function packedEventWords(meta: Uint32Array, at: number): number {
  const count = meta[at + LAYOUT.meta.blockCount];
  if (meta[at + LAYOUT.meta.kind] === LAYOUT.kind.stored) return 1 + (meta[at + LAYOUT.meta.flags] & LAYOUT.flag.parent ? 1 : 0) + 2 * count;
  return 1 + count;
}

/** The kind of the packed event whose meta entry starts at meta[at]. */
export function packedKind(meta: Uint32Array, at: number): PoolEvent['kind'] {
  const kind = meta[at + LAYOUT.meta.kind];
  return kind === LAYOUT.kind.stored ? 'stored' : kind === LAYOUT.kind.removed ? 'removed' : 'cleared';
}

/** Engine ids (blocks) the packed event at meta[at] carries. */
export function packedBlockCount(meta: Uint32Array, at: number): number {
  return meta[at + LAYOUT.meta.blockCount];
}

/** The (workerId, dpRank) of the packed event at meta[at] whose words start at words[wordsAt]. */
export function packedSource(meta: Uint32Array, at: number, words: BigUint64Array, wordsAt: number): { workerId: bigint; dpRank: number } {
  return { workerId: words[wordsAt], dpRank: meta[at + LAYOUT.meta.dpRank] };
}

function checkU64(v: bigint, what: string): void {
  if (typeof v !== 'bigint') throw new TypeError(`${what} must be a bigint`);
  if (v < 0n || v > MAX_U64) throw new RangeError(`${what} must be in [0, 2^64)`);
}

function checkU32(v: number, what: string): void {
  if (typeof v !== 'number') throw new TypeError(`${what} must be a number`);
  if (!Number.isInteger(v) || v < 0 || v > MAX_U32) throw new RangeError(`${what} must be an integer in [0, 2^32)`);
}

function checkList(list: U64List, what: string): void {
  if (list instanceof BigUint64Array) return;
  if (!Array.isArray(list)) throw new TypeError(`${what} must be a BigUint64Array or bigint[]`);
  for (const v of list) checkU64(v, what);
}

function toU64Array(list: U64List, what: string): BigUint64Array {
  checkList(list, what);
  return list instanceof BigUint64Array ? list : BigUint64Array.from(list);
}

/** Encodes events into the packed form of PoolFilterState.applyPacked; reusable after reset(). */
export class PoolEventBatch {
  private meta = new Uint32Array(64 * META_STRIDE);
  private words = new BigUint64Array(1024);
  private metaLen = 0;
  private wordsLen = 0;

  get length(): number {
    return this.metaLen / META_STRIDE;
  }

  /** Bytes its arrays hold (grown to the largest batch encoded since it was made). */
  get capacityBytes(): number {
    return this.meta.byteLength + this.words.byteLength;
  }

  reset(): void {
    this.metaLen = 0;
    this.wordsLen = 0;
  }

  add(ev: PoolEvent): this {
    switch (ev.kind) {
      case 'stored':
        return this.addStored(ev.workerId, ev.dpRank, ev.parentHash, ev.startPosition ?? null, ev.blockHashes, ev.tokensHashes);
      case 'removed':
        return this.addRemoved(ev.workerId, ev.dpRank, ev.blockHashes);
      case 'cleared':
        return this.addCleared(ev.workerId, ev.dpRank);
    }
  }

  addStored(
    workerId: bigint,
    dpRank: number,
    parentHash: bigint | null,
    startPosition: number | null,
    extIds: U64List,
    tokensHashes: U64List,
  ): this {
    if (extIds.length !== tokensHashes.length) throw new RangeError('blockHashes and tokensHashes differ in length');
    if (parentHash !== null) checkU64(parentHash, 'parentHash');
    if (startPosition !== null) checkU32(startPosition, 'startPosition');
    checkList(extIds, 'blockHashes');
    checkList(tokensHashes, 'tokensHashes');
    const flags = (parentHash !== null ? LAYOUT.flag.parent : 0) | (startPosition !== null ? LAYOUT.flag.start : 0);
    this.header(LAYOUT.kind.stored, workerId, dpRank, flags, startPosition ?? 0, extIds.length);
    this.ensureWords(1 + 2 * extIds.length);
    if (parentHash !== null) this.words[this.wordsLen++] = parentHash;
    this.putList(extIds);
    this.putList(tokensHashes);
    return this;
  }

  addRemoved(workerId: bigint, dpRank: number, extIds: U64List): this {
    checkList(extIds, 'blockHashes');
    this.header(LAYOUT.kind.removed, workerId, dpRank, 0, 0, extIds.length);
    this.ensureWords(extIds.length);
    this.putList(extIds);
    return this;
  }

  addCleared(workerId: bigint, dpRank: number): this {
    this.header(LAYOUT.kind.cleared, workerId, dpRank, 0, 0, 0);
    return this;
  }

  /**
   * Appends events already packed (e.g. by the native engine decoder). Checked only by length here;
   * the pool validates the encoding when it applies the batch.
   */
  append(meta: Uint32Array, words: BigUint64Array): this {
    if (meta.length % META_STRIDE !== 0) throw new RangeError('packed meta length is not a multiple of the stride');
    this.ensureMeta(meta.length);
    this.meta.set(meta, this.metaLen);
    this.metaLen += meta.length;
    this.ensureWords(words.length);
    this.words.set(words, this.wordsLen);
    this.wordsLen += words.length;
    return this;
  }

  /** Views of the encoded events (valid until the next add/reset). */
  packed(): { meta: Uint32Array; words: BigUint64Array } {
    return { meta: this.meta.subarray(0, this.metaLen), words: this.words.subarray(0, this.wordsLen) };
  }

  private header(kind: number, workerId: bigint, dpRank: number, flags: number, start: number, count: number): void {
    checkU64(workerId, 'workerId');
    checkU32(dpRank, 'dpRank');
    this.ensureMeta(META_STRIDE);
    const m = this.meta;
    const i = this.metaLen;
    const at = LAYOUT.meta;
    m[i + at.kind] = kind;
    m[i + at.dpRank] = dpRank;
    m[i + at.flags] = flags;
    m[i + at.startPosition] = start;
    m[i + at.blockCount] = count;
    this.metaLen += META_STRIDE;
    this.ensureWords(1);
    this.words[this.wordsLen++] = workerId;
  }

  private ensureMeta(extra: number): void {
    if (this.metaLen + extra <= this.meta.length) return;
    let size = this.meta.length * 2;
    while (size < this.metaLen + extra) size *= 2;
    const grown = new Uint32Array(size);
    grown.set(this.meta.subarray(0, this.metaLen));
    this.meta = grown;
  }

  private ensureWords(extra: number): void {
    if (this.wordsLen + extra <= this.words.length) return;
    let size = this.words.length * 2;
    while (size < this.wordsLen + extra) size *= 2;
    const grown = new BigUint64Array(size);
    grown.set(this.words.subarray(0, this.wordsLen));
    this.words = grown;
  }

  // Lists are checked before the event header is written, so a bad event leaves the batch intact.
  private putList(list: U64List): void {
    if (list instanceof BigUint64Array) {
      this.words.set(list, this.wordsLen);
    } else {
      const w = this.words;
      let j = this.wordsLen;
      for (const v of list) w[j++] = v;
    }
    this.wordsLen += list.length;
  }
}

function toResult(summary: Binding.PoolBatchSummary): PoolBatchResult {
  return resultOf(summary.errors, summary.errors.length, summary);
}

/** An apply's totals, as the summary of applyBatchInto has them. */
type BatchTotals = Omit<PoolBatchResult, 'outcomes' | 'errorCount'>;

/** A result to fill (resultOf). */
function blankResult(): PoolBatchResult {
  return { outcomes: [], errorCount: 0, capacityFailures: 0, unknownRemovals: 0, trackedBlocks: 0, residentBlocks: 0, stateBytes: 0 };
}

/** An apply's result from its first `n` error numbers and its totals, written into `into` (a new one by default). */
function resultOf(errors: Uint8Array, n: number, totals: BatchTotals, into: PoolBatchResult = blankResult()): PoolBatchResult {
  const { errorNames } = LAYOUT;
  const { outcomes } = into;
  outcomes.length = n;
  let errorCount = 0;
  for (let i = 0; i < n; i++) {
    const code = errors[i];
    outcomes[i] = code === 0 ? null : (errorNames[code] as PoolErrorCode);
    if (code !== 0) errorCount++;
  }
  into.errorCount = errorCount;
  into.capacityFailures = totals.capacityFailures;
  into.unknownRemovals = totals.unknownRemovals;
  into.trackedBlocks = totals.trackedBlocks;
  into.residentBlocks = totals.residentBlocks;
  into.stateBytes = totals.stateBytes;
  return into;
}

function encode(events: readonly PoolEvent[] | PoolEventBatch, into: PoolEventBatch): PoolEventBatch {
  if (events instanceof PoolEventBatch) return events;
  into.reset();
  for (const ev of events) into.add(ev);
  return into;
}

export class PoolFilterState {
  private readonly native: Binding.PoolFilterState;
  /** Encoding buffer reused by every apply (the native side copies what it applies). */
  private readonly scratch = new PoolEventBatch();
  /** What a synchronous apply writes its result into (applyBatchInto), reused: errors grow to the largest batch. */
  private errors = new Uint8Array(64);
  private readonly summary = new Float64Array(5);
  /** The summary's values as totals (read by resultOf, which copies them). */
  private readonly totals: BatchTotals = blankResult();
  /** applyPackedReused's result. */
  private readonly reused = blankResult();
  readonly bucketCount: number;
  readonly seed: bigint;
  readonly maxKicks: number;

  constructor(opts: PoolFilterStateOptions) {
    this.bucketCount = opts.bucketCount;
    this.seed = opts.seed ?? DEFAULT_CKF_SEED;
    this.maxKicks = opts.maxKicks ?? DEFAULT_CKF_MAX_KICKS;
    const { reserve } = opts;
    if (!reserve) {
      this.native = new addon.PoolFilterState(this.bucketCount, this.seed, this.maxKicks, opts.maxTrackedBlocks);
      return;
    }
    const sources = reserve.sources ?? [];
    this.native = new addon.PoolFilterState(
      this.bucketCount,
      this.seed,
      this.maxKicks,
      opts.maxTrackedBlocks,
      reserve.blocks,
      reserve.perSource,
      BigUint64Array.from(sources, (s) => s.workerId),
      Uint32Array.from(sources, (s) => s.dpRank),
    );
  }

  /** Applies events in order on the calling thread (small batches). */
  apply(events: readonly PoolEvent[] | PoolEventBatch): PoolBatchResult {
    const { meta, words } = encode(events, this.scratch).packed();
    return this.applyPacked(meta, words);
  }

  /**
   * Applies events on a worker thread (big batches), after the async calls made before it. Until it
   * settles: no synchronous call on this PoolFilterState (PoolBusy). The batch is copied before this
   * returns, so a PoolEventBatch passed in may be reset and reused at once.
   */
  async applyAsync(events: readonly PoolEvent[] | PoolEventBatch): Promise<PoolBatchResult> {
    const { meta, words } = encode(events, this.scratch).packed();
    return toResult(await this.native.applyBatchAsync(meta, words));
  }

  /** Applies events already encoded by a PoolEventBatch (or an equivalent encoder); RangeError if malformed. */
  applyPacked(meta: Uint32Array, words: BigUint64Array): PoolBatchResult {
    return this.applyPackedTo(meta, words, blankResult());
  }

  /**
   * applyPacked into one result object that every call of this method reuses (its outcomes
   * included): read it before the next. A pool that applies each small burst as it arrives (hosted
   * on an ingest thread) so makes no objects per message.
   */
  applyPackedReused(meta: Uint32Array, words: BigUint64Array): PoolBatchResult {
    return this.applyPackedTo(meta, words, this.reused);
  }

  private applyPackedTo(meta: Uint32Array, words: BigUint64Array, into: PoolBatchResult): PoolBatchResult {
    const n = Math.floor(meta.length / META_STRIDE);
    // A batch above the bound is refused by the addon before it looks at errors: not grown for it.
    if (this.errors.length < n && n <= nativeLimits.maxSyncBatchWords) this.errors = new Uint8Array(Math.max(n, 2 * this.errors.length));
    this.native.applyBatchInto(meta, words, this.errors, this.summary);
    const s = this.summary;
    const t = this.totals;
    t.capacityFailures = s[0];
    t.unknownRemovals = s[1];
    t.trackedBlocks = s[2];
    t.residentBlocks = s[3];
    t.stateBytes = s[4];
    return resultOf(this.errors, n, t, into);
  }

  /**
   * applyPacked on a worker thread (the arrays are copied before it returns); with `end` the same job
   * then ends the publication window as drainAsync(end) does, in `drained`.
   */
  async applyPackedAsync(meta: Uint32Array, words: BigUint64Array, end?: WindowEnd | null): Promise<PoolBatchResult & { drained?: DrainedWindow | null }> {
    const summary = await this.native.applyBatchAsync(meta, words, end);
    const result: PoolBatchResult & { drained?: DrainedWindow | null } = toResult(summary);
    if (end !== undefined) result.drained = summary.drained ?? null;
    return result;
  }

  store(
    workerId: bigint,
    dpRank: number,
    parentHash: bigint | null,
    startPosition: number | null,
    extIds: U64List,
    tokensHashes: U64List,
  ): PoolErrorCode | null {
    return this.native.store(
      workerId,
      dpRank,
      parentHash,
      startPosition,
      toU64Array(extIds, 'extIds'),
      toU64Array(tokensHashes, 'tokensHashes'),
    ) as PoolErrorCode | null;
  }

  remove(workerId: bigint, dpRank: number, extIds: U64List): PoolErrorCode | null {
    return this.native.remove(workerId, dpRank, toU64Array(extIds, 'extIds')) as PoolErrorCode | null;
  }

  clear(workerId: bigint, dpRank: number): PoolErrorCode | null {
    return this.native.clear(workerId, dpRank) as PoolErrorCode | null;
  }

  /** Filter membership of a canonical sequence hash (false positives possible, no false negatives). */
  contains(hash: bigint): boolean {
    return this.native.contains(hash);
  }

  owners(hash: bigint): number {
    return this.native.owners(hash);
  }

  isResident(hash: bigint): boolean {
    return this.native.isResident(hash);
  }

  get pendingEvents(): number {
    return this.native.pendingEvents();
  }

  hasPendingPublication(): boolean {
    return this.native.hasPendingPublication();
  }

  /**
   * Ends the publication window: the absolute images of buckets whose word changed since the last
   * drain, in first-touch order (net reversions dropped). null when nothing changed. Resets
   * pendingEvents either way.
   */
  drain(): BucketImages | null {
    return this.native.drain();
  }

  /**
   * Ends the publication window like drain(), on a worker thread: with `end` it is encoded there as
   * that CBI1 delta frame in the pool's format, with null it is discarded (nobody to publish to; only
   * counted). null when nothing changed; `payload` null when discarded or when the images are more
   * than one delta frame carries (MAX_DELTA_IMAGES), so that the publisher re-snapshots. Busy until
   * it settles.
   */
  drainAsync(end: WindowEnd | null): Promise<DrainedWindow | null> {
    return this.native.drainAsync(end);
  }

  /** drainAsync on the calling thread, for a window of at most nativeLimits.maxSyncWindowBuckets dirty buckets (RangeError above). */
  drainDelta(end: WindowEnd | null): DrainedWindow | null {
    return this.native.drainDelta(end);
  }

  /** Buckets touched since the window began: what ending it walks. */
  get dirtyBuckets(): number {
    return this.native.dirtyBuckets();
  }

  stats(): PoolStats {
    return this.native.stats();
  }

  /** Bytes the tables hold now, reserved ones included (each apply reports the same as stateBytes). */
  stateBytes(): number {
    return this.native.stateBytes();
  }

  /**
   * Whether a reservation's tables (filter words, owner table, the named sources' lineage tables)
   * have every page in: until then, the populating thread still faults them in after construction,
   * and a write may fault a fresh page on the calling thread (2-30 ms for a huge page on the
   * project's VM). True without a reservation.
   */
  tablesPopulated(): boolean {
    return this.native.tablesPopulated();
  }

  /** How the tables grew (tests and benches: walks every source). */
  tableStats(): PoolTableStats {
    return this.native.tableStats();
  }

  /** A copy of every bucket word (tests and small pools: RangeError above nativeLimits.maxSyncFilterWords; use copyWordsAsync). */
  words(): BigUint64Array {
    return this.native.words();
  }

  /** A copy of every bucket word taken on a worker thread, after the async calls made before it. */
  copyWordsAsync(): Promise<BigUint64Array> {
    return this.native.copyWordsAsync();
  }

  close(): void {
    this.native.close();
  }

  /** Frees the native memory on the releaser's thread (no libuv worker waits for it): settles (never rejects) once every table is unmapped. */
  release(): Promise<void> {
    return this.native.release();
  }
}

/** Bytes every pool state of the process holds for its tables, and the most held at once since resetPoolStatePeak(). */
export const poolStateMemory: () => { liveBytes: number; peakBytes: number } = addon.poolStateMemory;
/** Starts poolStateMemory()'s peak again from the bytes held now. */
export const resetPoolStatePeak: () => void = addon.resetPoolStatePeak;
