// The seam between engine KV-event ingest and the producer. Ingest turns engine ZMQ streams (vLLM /
// SGLang wire format) into ordered, filtered, hashed packed batches per source, with the pool's
// block size and hash format from the deployment; the producer implements IngestSink and applies them.

/** One KV-event source: a worker's data-parallel rank (engine-inputs.md §1.1; pool actor §4.2). */
export interface SourceKey {
  workerId: bigint;
  dpRank: number; // absolute data-parallel rank
}

/**
 * One burst of a worker's engine messages (the messages a socket had queued at one wake-up), decoded,
 * filtered and hashed by the native decoder into the pool's packed apply batch (packed_batch.h
 * layout: every event names its workerId and dpRank), in arrival order. The arrays are valid only
 * during the sink call: a sink copies what it keeps.
 */
export interface PackedEngineEvents {
  workerId: bigint;
  meta: Uint32Array;
  words: BigUint64Array;
  /** Engine messages in the burst (some may add no event: every event ignored, dropped or none). */
  messages: number;
  /** Per message: its sequence. */
  sequences: BigUint64Array;
  /** Per message, MESSAGE_INFO_STRIDE entries: its dp rank, then where its events end in meta. */
  messageInfo: Uint32Array;
  /** Stores dropped because their block size is not the pool's (counted by the pool). */
  droppedBlockSize: number;
  /** When its first message was decoded, just after its socket read (src/clock.ts monotonicMs). */
  receivedAtMs: number;
  /**
   * The socket still held messages when the burst was cut at INGEST_MESSAGES_PER_TURN: its next
   * burst follows one event-loop turn later.
   */
  cut?: boolean;
}

/** Entries per message in PackedEngineEvents.messageInfo: [dpRank, metaEnd]. */
export const MESSAGE_INFO_STRIDE = 2;

/**
 * overflow: messages held back behind a replay, or decoded bursts waiting for the main thread,
 * outgrew their bounds and were dropped. thread: the ingest thread that owned the source died.
 */
export type ResetReason = 'gap' | 'restart' | 'disconnect' | 'overflow' | 'thread';

/** Implemented by the producer. Calls are synchronous and in order per source. */
export interface IngestSink {
  /**
   * A burst of engine batches, in order per source. After a replay the sink has seen every batch the
   * engine published since the last reset (a sequence may be skipped only when the engine's batch
   * could not be decoded, which is counted as malformed).
   * May return a promise that settles once the batches were applied: an ingest thread holds the
   * burst's hand-off slot until then, so ingest waits for the pool instead of overfilling it.
   * The arrays are views of memory the ingest side writes again once the call returns: a sink copies
   * what it keeps before it returns.
   */
  events(b: PackedEngineEvents): void | Promise<void>;
  /**
   * The source's history is lost (uncovered gap, engine restart, lost connection): drop every block
   * of that source (like AllBlocksCleared); later batches rebuild it from live events.
   */
  reset(source: SourceKey, reason: ResetReason): void;
}

/** Counters per source (stats()). */
export interface IngestCounters {
  /** Events delivered to the sink. */
  events: number;
  /** Blocks in delivered stored/removed events. */
  blocks: number;
  /** Messages that could not be decoded (wrong frame count, bad sequence frame, bad msgpack, wrong types). */
  malformed: number;
  /** Messages dropped because their batch named a dp rank outside the worker's ranks. */
  rejectedRanks: number;
  /**
   * Times the held-back messages outgrew their bounds and were dropped, or the pool's mailbox was
   * full and dropped a batch (added by the producer): each resets the source.
   */
  overflows: number;
  /** Live messages below the stream's sequence that no restart confirmed (dropped). */
  outOfOrder: number;
  /** Connections refused by the bind-mode peer allow-list. */
  refusedPeers: number;
  /** Sequence gaps detected. */
  gaps: number;
  /** Replay requests sent. */
  replays: number;
  /** sink.reset calls, and the pool mailbox's overflows (each resets the source). */
  resets: number;
  /** Events dropped by the tier / attention-group filter, and unknown event types. */
  ignored: number;
  /** Stores dropped because their block size is not the pool's kvBlockSize. */
  droppedBlockSize: number;
}

export interface SourceStats extends IngestCounters {
  source: SourceKey;
  /** ZMQ connections up on this rank's socket (after the ZMTP handshake; several only in bind mode). */
  connections: number;
  /** Last sequence delivered (or skipped as malformed), null before the first one. */
  lastSequence: bigint | null;
  /** The block size of the last store dropped for its block size: what the engine sends (0: none yet). */
  mismatchedBlockSize: number;
}

/** One worker's running subscription, on the main thread (KvEventSubscriber) or on an ingest thread. */
export interface KvEventSubscription {
  readonly config: KvEventEndpointConfig;
  /** Opens every rank's socket (binds complete before this resolves). */
  start(): Promise<void>;
  close(): Promise<void>;
  /**
   * The SUB endpoint of each rank (bound addresses in bind mode). Callers treat it as read-only: the
   * same list while no endpoint moved (the diagnostics round compares it by identity each second).
   */
  endpoints(): string[];
  /** Counters by rank: read-only, the same list and objects while unchanged (stats-board.ts). */
  stats(): SourceStats[];
  /**
   * `batches` batches of `source` were dropped after ingest delivered them (a full pool mailbox):
   * counted as overflows; the source is reset and replayed from 0.
   */
  overflowed(source: SourceKey, batches: number): void;
}

/** pino-compatible subset. */
export interface IngestLogger {
  warn(obj: object, msg: string): void;
}

/** One worker's KV-event publisher, as configured (relay-config.md `workers[].kvEvents`). */
export interface KvEventEndpointConfig {
  workerId: bigint;
  dpSize: number;
  dpStartRank: number;
  /** The pool's block size: stores of another size are dropped and counted. */
  kvBlockSize: number;
  /** The pool hashes in Eagle format (each block's window includes the next block's first token). */
  eagle: boolean;
  /** Rank r uses this endpoint's port + (r − dpStartRank), as vLLM does. */
  endpoint: string;
  /** The engine's replay ROUTER (port offset per rank likewise); absent = no replay. */
  replayEndpoint?: string;
  /** ZMQ prefix filter; "" accepts every topic. */
  topic: string;
  /** connect: dial the engine's PUB; bind: bind a SUB that engines dial into. */
  mode: 'connect' | 'bind';
  /**
   * bind mode: the only peer IP addresses allowed to publish (checked by ZAP before the handshake).
   * Absent, allowAnyPeer must be true.
   */
  allowedPeers?: string[];
  /**
   * bind mode without allowedPeers: anyone who reaches the port may publish, and can make the relay
   * hold an unfinished multipart message of any size (libzmq bounds frames, not messages).
   */
  allowAnyPeer?: boolean;
}
