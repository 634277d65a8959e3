// The seam between engine KV-event ingest and the producer. Ingest turns engine ZMQ streams (vLLM /
// SGLang wire format) into ordered, filtered batches per source; the producer implements IngestSink
// and owns everything that depends on the deployment (block size, hash format, canonical hashing).

/** One KV-event source: a worker's data-parallel rank (engine-inputs.md §1.1; pool actor §4.2). */
export interface SourceKey {
  workerId: bigint;
  dpRank: number; // absolute data-parallel rank
}

/**
 * A decoded engine event. Only primary-tier (GPU / no medium) events of the main attention group
 * reach the sink; everything else is dropped by ingest and counted as `ignored`.
 */
export type EngineKvEvent =
  | {
      kind: 'stored';
      /** Engine block hashes (external ids, u64), one per block, in chain order. */
      blockHashes: bigint[];
      /** Engine hash of the block before blockHashes[0]; null at the start of a sequence. */
      parentBlockHash: bigint | null;
      /** Concatenated tokens of all blocks (normally blockHashes.length × blockSize; may be short). */
      tokenIds: Uint32Array;
      /** The engine's block size for this event; the producer drops blocks whose size differs. */
      blockSize: number;
      /** LoRA adapter name (salts canonical hashes); null for the base model. */
      loraName: string | null;
      /** Per block: the MM hashes found in extra_keys (engine order), or null; absent when no block has MM. */
      mmHashes?: (bigint[] | null)[];
    }
  | { kind: 'removed'; blockHashes: bigint[] }
  | { kind: 'cleared' };

export interface EngineEventBatch {
  source: SourceKey;
  /** The engine's batch sequence (strictly increasing per source between resets). */
  sequence: bigint;
  /** Engine wall-clock timestamp in seconds (float). */
  timestamp: number;
  /** May be empty when every event of the batch was ignored. */
  events: EngineKvEvent[];
}

/** overflow: messages held back behind a replay outgrew their bounds and were dropped. */
export type ResetReason = 'gap' | 'restart' | 'disconnect' | 'overflow';

/** Implemented by the producer. Calls are synchronous and in order per source. */
export interface IngestSink {
  /**
   * One engine batch, in order per source. After a replay the sink has seen every batch the engine
   * published since the last reset (a sequence may be skipped only when the engine's batch could not
   * be decoded, which is counted as malformed).
   */
  batch(b: EngineEventBatch): void;
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
  /** Times the held-back messages outgrew their bounds and were dropped (each resets the source). */
  overflows: number;
  /** Live messages below the stream's sequence that no restart confirmed (dropped). */
  outOfOrder: number;
  /** Sequence gaps detected. */
  gaps: number;
  /** Replay requests sent. */
  replays: number;
  /** sink.reset calls. */
  resets: number;
  /** Events dropped by the tier / attention-group filter, and unknown event types. */
  ignored: number;
}

export interface SourceStats extends IngestCounters {
  source: SourceKey;
  /** ZMQ connections up on this rank's socket (after the ZMTP handshake; several only in bind mode). */
  connections: number;
  /** Last sequence delivered (or skipped as malformed), null before the first one. */
  lastSequence: bigint | null;
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
  /** Rank r uses this endpoint's port + (r − dpStartRank), as vLLM does. */
  endpoint: string;
  /** The engine's replay ROUTER (port offset per rank likewise); absent = no replay. */
  replayEndpoint?: string;
  /** ZMQ prefix filter; "" accepts every topic. */
  topic: string;
  /** connect: dial the engine's PUB; bind: bind a SUB that engines dial into. */
  mode: 'connect' | 'bind';
}
