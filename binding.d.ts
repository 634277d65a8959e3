// Types of the native addons' surface: kv_dc_relay_core.node (native/bindings/core: hashing, CKF,
// CBI1; what a consumer loads) and kv_dc_relay.node (native/bindings/relay: pool state, engine
// decoder, ingest sockets). `CoreAddon` and `RelayAddon` at the end say which export is in which.
// Only src/native/ imports this file.

/** XXH3-64 of `data` with a 64-bit seed. */
export function xxh3(data: Uint8Array, seed: bigint): bigint;

// --- CBI1 codec (core addon; native/core/cbi1*, native/bindings/core/cbi1*) ---
// Errors: TypeError / RangeError for bad arguments; codec errors are Errors whose `code` is the
// ImagesWireError name (Format errors as 'Format.<FormatError>') with their details as properties.

/** CKF filter format. `bucketCount` is a power of two in 2..=2^24. */
export interface FilterFormat {
  seed: bigint;
  bucketCount: number;
}

/** A format as it appears on the wire (CkfFormat); identity fields, when given, must be 1/16/4. */
export interface FilterFormatInput {
  seed: bigint;
  bucketCount: number | bigint;
  formatVersion?: number;
  fingerprintBits?: number;
  slotsPerBucket?: number;
}

export interface Cbi1Header {
  wireVersion: number;
  flags: number;
  fingerprintBits: number;
  slotsPerBucket: number;
  formatVersion: number;
  seed: bigint;
  bucketCount: number;
  dcId: bigint;
  /** The frame's publication sequence. */
  epoch: bigint;
  checksum: number;
}

export interface DecodedDelta {
  kind: 'delta';
  header: Cbi1Header;
  baseEpoch: bigint;
  buckets: Uint32Array;
  values: BigUint64Array;
}

export interface DecodedChunk {
  kind: 'chunk';
  header: Cbi1Header;
  chunkIndex: number;
  chunkCount: number;
  bucketOffset: number;
  words: BigUint64Array;
}

export type DecodedFrame = DecodedDelta | DecodedChunk;

/** A completed snapshot: sparse nonzero bucket images (the rest of the table is zero). */
export interface AssembledSnapshot {
  epoch: bigint;
  buckets: Uint32Array;
  values: BigUint64Array;
}

export interface Cbi1Constants {
  readonly headerLen: number;
  readonly snapshotChunkBuckets: number;
  readonly maxBucketCount: number;
  readonly maxFrameBytes: number;
  readonly maxDeltaImages: number;
  readonly wireVersion: number;
  readonly flagSnapshotChunk: number;
  readonly flagDelta: number;
  readonly formatVersion: number;
  readonly fingerprintBits: number;
  readonly slotsPerBucket: number;
}

export const cbi1Constants: Cbi1Constants;
export function validateFilterFormat(format: FilterFormatInput): FilterFormat;
export function snapshotChunkCount(format: FilterFormatInput): number;
export function encodeDelta(
  format: FilterFormatInput,
  dcId: bigint,
  baseSequence: bigint,
  sequence: bigint,
  buckets: Uint32Array,
  values: BigUint64Array,
): Buffer;
/** Chunk frames as views of one ArrayBuffer (src/native/cbi1.ts turns them into Buffers); RangeError above nativeLimits.maxSyncFilterWords words. */
export function encodeSnapshotChunks(format: FilterFormatInput, dcId: bigint, epoch: bigint, words: BigUint64Array): Uint8Array[];
export function encodeSnapshotChunk(
  format: FilterFormatInput,
  dcId: bigint,
  epoch: bigint,
  words: BigUint64Array,
  chunkIndex: number,
): Buffer;
/** Reads `words` on a worker thread (src/native/cbi1.ts copies a SharedArrayBuffer first). */
export function encodeSnapshotAsync(format: FilterFormatInput, dcId: bigint, epoch: bigint, words: BigUint64Array): Promise<Uint8Array[]>;
export function decodeFrame(expected: FilterFormatInput, bytes: Uint8Array): DecodedFrame;

export interface SnapshotAssemblyOptions {
  /** Collect the sparse nonzero images (default true); false only validates order and coverage. */
  images?: boolean;
}

export class SnapshotAssembly {
  constructor(format: FilterFormatInput, options?: SnapshotAssemblyOptions);
  /** null while incomplete; the epoch and sparse images (empty without `images`) once the last chunk arrived. */
  absorb(frame: Uint8Array | DecodedFrame): AssembledSnapshot | null;
  reset(): void;
}

// --- Hashing, CKF helpers (core addon), pool state (relay addon; native/pool, native/bindings/relay/pool_*) 
// Errors: TypeError / RangeError for bad arguments; domain errors are Errors with a string `code`.

/** compute_salt_hash(cache_namespace, lora_name); null/undefined/"" mean absent. */
export function saltSeed(cacheNamespace?: string | null, loraName?: string | null): bigint;
/** Per-block mm hashes, indexed by block; null/undefined/missing entries hash plain tokens. */
export type MmHashList = ReadonlyArray<BigUint64Array | readonly bigint[] | null | undefined>;
/** Block hashes (§1.3). kvBlockSize 0 → RangeError. */
export function blockHashes(
  tokens: Uint32Array,
  kvBlockSize: number,
  eagle: boolean,
  seed: bigint,
  mmHashes?: MmHashList | null,
): BigUint64Array;
/** Block hashes chained into canonical sequence hashes (§1.5) in one call. */
export function sequenceHashes(
  tokens: Uint32Array,
  kvBlockSize: number,
  eagle: boolean,
  seed: bigint,
  mmHashes?: MmHashList | null,
): BigUint64Array;
export function sequenceHashesFromBlocks(blockHashes: BigUint64Array): BigUint64Array;
export interface HashBatchResult {
  /** All prompts' hashes, concatenated. */
  hashes: BigUint64Array;
  /** Prompt i's hashes are hashes[blockOffsets[i] .. blockOffsets[i+1]). */
  blockOffsets: Uint32Array;
}
/** Many prompts in one call: prompt i is tokens[promptOffsets[i] .. promptOffsets[i+1]). */
export function hashBatch(
  tokens: Uint32Array,
  promptOffsets: Uint32Array,
  kvBlockSize: number,
  eagle: boolean,
  seed: bigint,
  sequence: boolean,
): HashBatchResult;
/** hashBatch on a worker thread, over its own copy of the inputs (free to change once it returns). */
export function hashBatchAsync(
  tokens: Uint32Array,
  promptOffsets: Uint32Array,
  kvBlockSize: number,
  eagle: boolean,
  seed: bigint,
  sequence: boolean,
): Promise<HashBatchResult>;
export function padValueForMmHash(mmHash: bigint): number;
export function hashMmIdentifier(identifier: string): bigint | null;

/** bucket_count(expected); Error.code ExpectedCapacityZero / CapacityOverflow. */
export function ckfBucketCount(expectedBlocks: bigint | number): number;
export interface CkfPrepared {
  fingerprint: number;
  bucketA: number;
  bucketB: number;
}
export function ckfPrepare(hash: bigint, bucketCount: number, seed: bigint): CkfPrepared;
export function bucketContains(word: bigint, fingerprint: number): boolean;

/** The packed event batch layout (native/pool/packed_batch.h), frozen. */
export interface PackedBatchLayout {
  /** u32 per event in `meta`. */
  readonly metaStride: number;
  /** Field offsets inside one event's meta entry. */
  readonly meta: { readonly kind: number; readonly dpRank: number; readonly flags: number; readonly startPosition: number; readonly blockCount: number };
  readonly kind: { readonly stored: number; readonly removed: number; readonly cleared: number };
  readonly flag: { readonly parent: number; readonly start: number };
  /** PoolError number -> name (0: null, no error). */
  readonly errorNames: ReadonlyArray<string | null>;
}
export const packedBatchLayout: PackedBatchLayout;

/**
 * Bounds on one native call (native/core/native_limits.h; exported by both addons). Above them the
 * call throws a RangeError and changes nothing: synchronous calls stay within a few ms of the event
 * loop, and async calls copy their inputs before queueing (within a few ms too).
 */
export interface NativeLimits {
  /** Words of a packed batch applied synchronously (applyBatch), ids of one store/remove. */
  readonly maxSyncBatchWords: number;
  /** Words of a packed batch applyBatchAsync copies and queues. */
  readonly maxAsyncBatchWords: number;
  /** Filter words copied or encoded synchronously: words(), encodeSnapshotChunks. */
  readonly maxSyncFilterWords: number;
  /** tokens.length + promptOffsets.length of one hashBatchAsync call. */
  readonly maxAsyncHashInputs: number;
  /** tokens (+ promptOffsets) of one synchronous blockHashes / sequenceHashes / hashBatch call; xxh3 takes 4 bytes per input. */
  readonly maxSyncHashInputs: number;
  /** Dirty buckets of a window drainDelta ends on the calling thread. */
  readonly maxSyncWindowBuckets: number;
  /** Async calls one PoolFilterState holds in flight (run in the order made); PoolBusy past it. */
  readonly maxQueuedPoolCalls: number;
}
export const nativeLimits: NativeLimits;

export interface PoolBatchSummary {
  /** One PoolError number per event (packedBatchLayout.errorNames; 0 = ok). */
  errors: Uint8Array;
  capacityFailures: number;
  unknownRemovals: number;
  /** Lineage entries over all sources after the batch (PoolStats.lineageEntries). */
  trackedBlocks: number;
  /** Fingerprints in the filter after the batch (PoolStats.residentCount). */
  residentBlocks: number;
  /** Bytes of the state's tables after the batch: filter words, owner and lineage tables (both of a table that drains). */
  stateBytes: number;
}
/** A publication window ended as the delta baseSequence -> sequence of the relay dcId. */
export interface WindowEnd {
  dcId: bigint;
  baseSequence: bigint;
  sequence: bigint;
}
export interface DrainedWindow {
  imageCount: number;
  payload: Buffer | null;
}
export interface PoolStats {
  bucketCount: number;
  residentCount: number;
  ownedHashes: number;
  lineageEntries: number;
  sourceCount: number;
  pendingEvents: number;
  dirtyBuckets: number;
  capacityFailures: number;
  unknownRemovals: number;
  parentNotFound: number;
  invariantViolations: number;
  /** Stores rejected whole (TrackedBlockLimit) because lineageEntries had reached maxTrackedBlocks. */
  trackedBlockLimitRejections: number;
  maxTrackedBlocks: number;
  loadFactor: number;
  rngState: bigint;
}
/** How a pool's tables grew (tableStats()): summed over the owner table and the present sources' lineage tables. */
export interface PoolTableStats {
  ownerGrowths: number;
  ownerMigrated: number;
  lineageGrowths: number;
  lineageMigrated: number;
  /** Lineage entries new sources may still reserve (of reserveBlocks). */
  reservedLineageLeft: number;
}
/** Native pool filter state; see src/native/pool.ts for the contract. */
export class PoolFilterState {
  /**
   * maxTrackedBlocks: 1 .. 2^31 - 1 (default: the largest), the bound on lineageEntries.
   * reserveBlocks: 0 .. min(2^26, maxTrackedBlocks), the owner table's reserved entries and the lineage
   * tables' budget; reservePerSource: 0 .. reserveBlocks, each new source's lineage reservation (required
   * with reserveBlocks); reserveWorkerIds / reserveDpRanks (same length, at most 65536): the sources
   * whose lineage tables are made now rather than at their first event.
   */
  constructor(
    bucketCount: number,
    seed: bigint,
    maxKicks: number,
    maxTrackedBlocks?: number,
    reserveBlocks?: number,
    reservePerSource?: number,
    reserveWorkerIds?: BigUint64Array,
    reserveDpRanks?: Uint32Array,
  );
  /** The tables' growths and moves so far (walks every source: not for the apply path). */
  tableStats(): PoolTableStats;
  /** Bytes the state's tables hold now (what applies report as stateBytes), reserved tables included. */
  stateBytes(): number;
  /**
   * Whether a reservation's tables (filter words, owner table, named sources' lineage tables) have
   * every page faulted in by the populating thread; true without a reservation.
   */
  tablesPopulated(): boolean;
  /**
   * Packed events (packedBatchLayout; PoolEventBatch writes them): meta has 5 u32 per event
   * [kind (1 stored, 2 removed, 3 cleared), dpRank, flags (1 parent, 2 start; stored only),
   * startPosition, blockCount (0 for cleared)]; words holds per event workerId, then for stored
   * [parent ext id if flag 1], blockCount ext ids, blockCount tokens hashes, for removed blockCount
   * ext ids. A malformed batch, or one above nativeLimits.maxSyncBatchWords words, is a RangeError
   * and applies nothing. The result goes into the caller's arrays (reusable: no object made per
   * call): errors[i] for each event i (errors holds at least one byte per event), and `summary` (at
   * least 5 numbers): capacityFailures, unknownRemovals, trackedBlocks, residentBlocks, stateBytes.
   */
  applyBatchInto(meta: Uint32Array, words: BigUint64Array, errors: Uint8Array, summary: Float64Array): void;
  /**
   * applyBatchInto on a worker thread, over a copy taken before it returns (up to nativeLimits.maxAsyncBatchWords);
   * with `end` (not undefined) the same job then ends the window as drainAsync(end) does, in `drained`.
   */
  applyBatchAsync(meta: Uint32Array, words: BigUint64Array, end?: WindowEnd | null): Promise<PoolBatchSummary & { drained?: DrainedWindow | null }>;
  store(
    workerId: bigint,
    dpRank: number,
    parent: bigint | null,
    startPosition: number | null,
    extIds: BigUint64Array,
    tokensHashes: BigUint64Array,
  ): string | null;
  remove(workerId: bigint, dpRank: number, extIds: BigUint64Array): string | null;
  clear(workerId: bigint, dpRank: number): string | null;
  contains(hash: bigint): boolean;
  owners(hash: bigint): number;
  isResident(hash: bigint): boolean;
  pendingEvents(): number;
  hasPendingPublication(): boolean;
  /** RangeError above nativeLimits.maxSyncFilterWords dirty buckets (use drainAsync). */
  drain(): { buckets: Uint32Array; values: BigUint64Array } | null;
  /**
   * Ends the window on a worker thread: with `end` it is encoded there as one CBI1 delta frame in the
   * pool's own format, with null it is discarded (counted only). null when nothing changed; payload
   * null when discarded or when the images exceed one delta frame.
   */
  drainAsync(end: WindowEnd | null): Promise<DrainedWindow | null>;
  /** drainAsync on the calling thread; RangeError above nativeLimits.maxSyncWindowBuckets dirty buckets. */
  drainDelta(end: WindowEnd | null): DrainedWindow | null;
  /** Buckets touched since the window began (what a drain walks). */
  dirtyBuckets(): number;
  stats(): PoolStats;
  /** RangeError above nativeLimits.maxSyncFilterWords buckets. */
  words(): BigUint64Array;
  copyWordsAsync(): Promise<BigUint64Array>;
  close(): void;
  /** Frees the state on the releaser's thread (no libuv worker waits for it); settles on the calling thread once its tables are unmapped (later calls throw PoolClosed). */
  release(): Promise<void>;
}

// --- Engine KV-event batch decoder (relay addon; native/ingest/engine_decode*) ---
// Errors: TypeError / RangeError for bad arguments; a rejected payload throws an Error with
// code 'MalformedKvBatch' or 'RankOutOfRange' (with `rank`), or 'AllocationFailed'.

/** Indices into the results array of EngineBatchDecoder (`count` = its minimum length). */
export const engineDecodeSlots: {
  readonly metaEnd: number;
  readonly wordsEnd: number;
  readonly timestamp: number;
  readonly dpRank: number;
  readonly events: number;
  readonly blocks: number;
  readonly ignored: number;
  readonly droppedBlockSize: number;
  readonly droppedNoCompleteBlock: number;
  readonly lastDroppedBlockSize: number;
  readonly needMeta: number;
  readonly needWords: number;
  readonly count: number;
};
export class EngineBatchDecoder {
  constructor(
    workerId: bigint,
    kvBlockSize: number,
    eagle: boolean,
    dpStartRank: number,
    dpSize: number,
    results: Float64Array,
    bounds: { maxBlocksPerEvent: number; maxMessageWords: number; retainedBytes: number },
  );
  /** true: appended, results hold the summary; false: nothing written, results hold needMeta / needWords. */
  decodeInto(
    payload: Uint8Array,
    fallbackRank: number,
    meta: Uint32Array,
    metaOffset: number,
    words: BigUint64Array,
    wordsOffset: number,
  ): boolean;
}

// --- Dynamo event-plane decoder (relay addon; native/ingest/router_event_decode*) ---
// Errors: TypeError / RangeError for bad arguments only; a malformed message is a record with status
// `malformed` (errorOf says why), never a throw.

/** u32 slots of one message's record in RouterEventDecoder.decodeBatch's records (`stride` each), and the record's codes. */
export const routerEventRecord: {
  readonly status: number;
  readonly flags: number;
  readonly publisherLo: number;
  readonly publisherHi: number;
  readonly sequenceLo: number;
  readonly sequenceHi: number;
  readonly workerLo: number;
  readonly workerHi: number;
  readonly eventIdLo: number;
  readonly eventIdHi: number;
  readonly dpRank: number;
  readonly kind: number;
  readonly blocks: number;
  readonly metaEnd: number;
  readonly wordsEnd: number;
  readonly stride: number;
  /** status values */
  readonly ok: number;
  readonly malformed: number;
  readonly otherTopic: number;
  /** flags bits */
  readonly hasEnvelope: number;
  readonly counted: number;
  readonly otherTier: number;
  readonly unsupportedDomain: number;
  /** decodeBatch formats */
  readonly formatEnvelope: number;
  readonly formatFramed: number;
  readonly formatJson: number;
};
export class RouterEventDecoder {
  /** `sizes` (length >= 2) receives [metaEnd, wordsEnd] (or the lengths needed) after each decodeBatch. */
  constructor(topic: string, legacyTopic: string, sizes: Float64Array);
  /**
   * Decodes `count` messages laid end to end in `arena` (message i ends at ends[i]). true: records
   * and the packed events (message order) are written; false: records are written, meta / words are
   * not (they must grow to sizes[0] / sizes[1]).
   */
  decodeBatch(
    arena: Uint8Array,
    ends: Uint32Array,
    count: number,
    format: number,
    records: Uint32Array,
    meta: Uint32Array,
    words: BigUint64Array,
  ): boolean;
  /** Why message `index` of the last decodeBatch was malformed ('' if it was not). */
  errorOf(index: number): string;
}

// --- ZMQ ingest sockets (relay addon; native/bindings/relay/zmq_subscriber.cc) ---
// A SUB socket on libzmq's C API (bound at run time to the libzmq zeromq.js's addon carries:
// native/ingest/libzmq.h) in the context of the calling thread (one per JS environment),
// read without a JS object per message. Monitor events and a ZAP handler on the same context keep
// zeromq.js's connection semantics. Errors: TypeError for bad arguments; an Error with code
// (EADDRINUSE, EINVAL, EPROTONOSUPPORT, EMFILE, ENOENT, EZMQ; ESOCKETCLOSED once closed; ENOLIBZMQ
// when no loaded object carries libzmq 4.3+, i.e. zeromq.js was not required first).

/** Fields of a received message's record (`stride` numbers each) and its status values. */
export const zmqRecord: {
  readonly stride: number;
  readonly ok: number;
  /** Not 3 frames: the record's third field is the frame count. */
  readonly frameCount: number;
  /** A sequence frame not 8 bytes long: the record's third field is its length. */
  readonly sequenceLength: number;
};
/** The monitor events ingest acts on (libzmq's ZMQ_EVENT_* values). */
export const zmqEvents: {
  readonly connected: number;
  readonly connectDelayed: number;
  readonly connectRetried: number;
  readonly accepted: number;
  readonly disconnected: number;
  readonly handshakeSucceeded: number;
  readonly handshakeFailedAuth: number;
};
export interface ZmqSubscriberOptions {
  receiveHighWaterMark: number;
  maxMessageSize: number;
  /** The context's socket limit (taken when the thread's context is created). */
  maxSockets: number;
  /** ZAP domain: every connection is judged by the allow-list registered under it (zmqAllowPeers). */
  zapDomain?: string;
}
export class ZmqSubscriber {
  /** onReadable: messages are queued (read them with receive()); onEvent: a monitor event (ZMQ_EVENT_*). */
  constructor(options: ZmqSubscriberOptions, onReadable: () => void, onEvent: (event: number, value: number, address: string) => void);
  readonly closed: boolean;
  /** The last receive() stopped at a message its arena had no room left for (read it next). */
  readonly pending: boolean;
  subscribe(topic: string): void;
  /** The bound endpoint (port 0 or * shows the chosen port). */
  bind(endpoint: string): string;
  connect(endpoint: string): void;
  disconnect(endpoint: string): void;
  /**
   * Reads the queued messages, at most maxMessages (and what records / sequences hold): n >= 0 read,
   * payloads copied into arena; or -bytes when the next payload needs an arena that large (it is kept).
   * Payloads are valid until the next call. An element of records past its maxMessages records is set
   * to `pending` (1 or 0), so a reader needs no accessor call per wake-up.
   */
  receive(arena: Uint8Array, records: Uint32Array, sequences: BigUint64Array, maxMessages: number): number;
  close(): void;
}
/** Registers the peers (IP addresses) a socket with ZAP domain `domain` accepts, in this thread's context. */
export function zmqAllowPeers(domain: string, peers: string[], maxSockets: number): void;
export function zmqForgetPeers(domain: string): void;
/** SUB sockets of this thread's context not closed yet (each keeps the thread's event loop alive). */
export function zmqOpenSockets(): number;
/** The loaded object whose libzmq ingest uses (zeromq.js's addon) and its version; ENOLIBZMQ when none. */
export function zmqLibrary(): { path: string; version: string };
/**
 * Sets the calling thread's fair-scheduler slice (sched_attr.sched_runtime) to `microseconds`, an
 * integer in [100, 100000]. Returns false where the kernel or a sandbox does not let it be set (the
 * thread keeps its slice); RangeError / TypeError on a bad argument.
 */
export function setThreadSlice(microseconds: number): boolean;
/** The calling thread's slice in microseconds, or null where the kernel does not report one. */
export function threadSlice(): number | null;
/**
 * Names the calling thread (1 to 15 printable ASCII characters: RangeError otherwise, TypeError for a
 * non-string). False where the kernel refused it.
 */
export function setThreadName(name: string): boolean;
/**
 * Bytes of drained table pages the process keeps for the next table growth (a few seconds, at most
 * 1 GiB): resident memory that no pool's tables account for. TypeError with any argument.
 */
export function keptPageBytes(): number;
/**
 * Bytes every pool state of the process (all threads) holds for its tables, as last counted (at
 * construction, after each apply, until freed), and the most held at once since resetPoolStatePeak.
 */
export function poolStateMemory(): { liveBytes: number; peakBytes: number };
/** Starts poolStateMemory's peak again from the bytes held now. */
export function resetPoolStatePeak(): void;
/**
 * The calling thread's event-loop delay without a timer (no wake-up of its own): a check handle reads,
 * once per loop iteration, the time since the previous one and the part the loop waited in poll.
 */
export class LoopDelay {
  constructor();
  /** Since the previous take() (or construction): delay quantiles in ms and the loop iterations seen; undefined if none. */
  take(): { p50Ms: number; p99Ms: number; maxMs: number; samples: number } | undefined;
  /** Stops watching (idempotent); take() then throws (code ECLOSED). */
  close(): void;
}
/**
 * The calling thread's event-loop iterations, read without a call: a check handle adds one to
 * `counts[0]` once per loop iteration (no JS runs, no wake-up of its own). TypeError with any argument.
 */
export class LoopTurns {
  constructor();
  /** [iterations since construction]; stops moving once closed. */
  readonly counts: Float64Array;
  /** Stops counting (idempotent). */
  close(): void;
}

// --- Which addon exports what ------------------------------------------------------------------
type Surface = typeof import('./binding');
/** kv_dc_relay_core.node: no ingest, pool or ZMQ code. */
export type CoreAddon = Pick<
  Surface,
  | 'xxh3'
  | 'cbi1Constants'
  | 'validateFilterFormat'
  | 'snapshotChunkCount'
  | 'encodeDelta'
  | 'encodeSnapshotChunks'
  | 'encodeSnapshotChunk'
  | 'encodeSnapshotAsync'
  | 'decodeFrame'
  | 'SnapshotAssembly'
  | 'saltSeed'
  | 'blockHashes'
  | 'sequenceHashes'
  | 'sequenceHashesFromBlocks'
  | 'hashBatch'
  | 'hashBatchAsync'
  | 'padValueForMmHash'
  | 'hashMmIdentifier'
  | 'ckfBucketCount'
  | 'ckfPrepare'
  | 'bucketContains'
  | 'nativeLimits'
>;
/** kv_dc_relay.node: what only the relay runs. */
export type RelayAddon = Pick<
  Surface,
  | 'packedBatchLayout'
  | 'nativeLimits'
  | 'PoolFilterState'
  | 'engineDecodeSlots'
  | 'EngineBatchDecoder'
  | 'routerEventRecord'
  | 'RouterEventDecoder'
  | 'zmqRecord'
  | 'zmqEvents'
  | 'ZmqSubscriber'
  | 'zmqAllowPeers'
  | 'zmqForgetPeers'
  | 'zmqOpenSockets'
  | 'zmqLibrary'
  | 'setThreadSlice'
  | 'threadSlice'
  | 'setThreadName'
  | 'keptPageBytes'
  | 'poolStateMemory'
  | 'resetPoolStatePeak'
  | 'LoopDelay'
  | 'LoopTurns'
>;
