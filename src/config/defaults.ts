// Every limit, timing and queue default of the relay, defined once. Values come from
// relay-config.md (this project's config file) and wire-contract.md §8 (reference knobs and
// internal constants). Validation bounds live in limits.ts, envelope constants in wire/constants.ts.
// The service takes `ServiceOptions` with every default applied.
import { availableParallelism } from 'os';
import { MAX_INGEST_THREADS } from './limits';

// --- CBI1 bound the hub enforces (hashing-ckf-cbi1.md §3.1): a bigger publication is re-snapshotted ---
export const MAX_DELTA_IMAGES = 349_525;

// --- Adaptive publication pacing (src/publication/pacing.ts) ---
/** A hub asks for longer slices while a subscriber queue at least this full (2 of 16 frames) grows, and for the configured one once every queue is below it. */
export const PACING_STRETCH_OCCUPANCY = 0.125;
/** Largest factor the configured publication threshold and delay are stretched by. */
export const PACING_MAX_STRETCH = 1024;
/** A stretched slice never waits longer than this for its delay... */
export const PACING_MAX_SLICE_MS = 1_000;
/**
 * ...nor takes in more blocks than this: a quarter of the images of one delta frame, so the delta
 * (about one bucket image per block, a few more after cuckoo relocations) stays within the 4 MiB
 * frame bound instead of turning into a re-snapshot.
 */
export const PACING_MAX_SLICE_BLOCKS = Math.floor(MAX_DELTA_IMAGES / 4);
/**
 * A live subscriber asks for longer slices for at most this long after its queue last stood below
 * PACING_STRETCH_OCCUPANCY: a pause (a 1 s snapshot install, a GC) is paced for; a reader that
 * stopped, or that reads but never catches up, then lags at the configured pace alone.
 */
export const PACING_PAUSE_BUDGET_MS = 2_000;
/**
 * A subscriber still taking its snapshot asks for longer slices only while the chunk in flight has
 * been pending less than PACING_SNAPSHOT_LATENCY_MS plus its size at PACING_SNAPSHOT_MIN_BYTES_PER_S
 * (a 4 MiB chunk: 0.6 s). Slower than that it is no consumer pacing can save: deltas queue behind its
 * snapshot at the configured pace, as in the reference.
 */
export const PACING_SNAPSHOT_LATENCY_MS = 100;
export const PACING_SNAPSHOT_MIN_BYTES_PER_S = 8 * 1024 * 1024;

// --- Internal constants (wire-contract.md §8.2; not configurable) ---
/** Deltas a hub remembers so a new subscriber can share a recent snapshot encoding. */
export const DEFAULT_PUBLICATION_CAPACITY = 64;
/** Images a hub takes in a row before giving up on a producer that keeps outrunning them. */
export const HUB_SNAPSHOT_ATTEMPTS = 3;
/** Engine batches a pool actor holds before applying them; a batch that does not fit resets its source. */
export const ACTOR_MAILBOX_CAPACITY = 256;
/** Blocks those batches may hold in all (one bigger batch is taken alone). */
export const PENDING_BLOCK_PERMITS = 65_536;
/** ...and events (block-less ones, e.g. AllBlocksCleared, cost no block permit but are work and memory). */
export const PENDING_EVENT_PERMITS = 65_536;
/**
 * A pool actor keeps one inbox buffer grown past INGEST_RETAINED_BUFFER_BYTES for this long after its
 * last use: a run of large bursts reuses it instead of allocating megabytes per burst on the event
 * loop (external memory that made V8 collect: a 30 ms pause), and it is given back once they stop.
 */
export const POOL_LARGE_INBOX_HOLD_MS = 1_000;
/** Byte accounting of one queued frame: payload length plus this overhead. */
export const FRAME_OVERHEAD_BYTES = 256;

// --- Process defaults (relay-config.md) ---
export const DEFAULT_BIND = '127.0.0.1:5561';
/** Host of a `metricsBind` given as a port alone: /metrics is plaintext and unauthenticated (issue #9 Security). */
export const DEFAULT_METRICS_HOST = '127.0.0.1';
export const DEFAULT_EXPECTED_UNIQUE_BLOCKS = 1_048_576;
/** CKF seed (kv-router DEFAULT_SEED). */
export const DEFAULT_CKF_SEED = 0x5deece66d1b54a33n;
/** CKF relocation bound per insert (kv-router DEFAULT_MAX_KICKS; allowed 1..=4096). */
export const DEFAULT_CKF_MAX_KICKS = 500;
/** Time the server lets streams end gracefully before force-closing connections at shutdown. */
export const SHUTDOWN_GRACE_MS = 250;
/**
 * The scheduler slice (µs) a relay process asks for at start (sched_attr.sched_runtime; the kernel's
 * minimum), for its event loop's thread only: it is set with SCHED_FLAG_RESET_ON_FORK, so the ingest,
 * libuv pool and ZMQ I/O threads it starts afterwards keep the default slice (issue 26 item 10: they
 * all inherited it, and the loop had no shorter slice than the threads it waited behind). Linux
 * 6.12+ lets a task whose slice is shorter than the running one's preempt it when it wakes: at full
 * ingest the loop otherwise waits behind busy threads for a default slice. Measured when every
 * thread inherited it (mixed-load, 13 runs each way: loop-delay p99 median 6.3 ms with the default
 * slice, 5.0 ms with this one, ingest unchanged); the loop-only figure is in BENCHMARKS.md
 * (2026-12-06 ingest-hardening). Shares of the CPU do not change; older kernels ignore it.
 */
export const EVENT_LOOP_SLICE_US = 100;

/**
 * `kv-dc-relay serve` has V8 set its old generation's limit to 4x what a full collection left live
 * (V8's largest growing factor; 0 lets V8 choose). Under load its own choice kept the limit ~10 MB
 * above a ~23 MB live heap (its memory reducer shrinks it when the main thread allocates little), so
 * a major collection ran 2-4 times a second, each with up to ~12 ms of marking steps on the event
 * loop and a 2-8 ms pause. mixed-load, 10-s windows: 3-5 major GCs per run instead of 26-40,
 * loop-delay p99 3.9-5.2 ms (9 runs, 5- and 10-s windows) against 5.6-10.7 ms (7 runs), the heap's
 * committed size the same (42 MB). The heap's maximum is unchanged.
 */
export const GC_HEAP_GROWING_PERCENT = 300;
/** Upper bound of a complete shutdown (process contract). */
export const SHUTDOWN_DEADLINE_MS = 5_000;

/**
 * A /metrics scrape renders its metrics in turns of the event loop of about this long, yielding
 * between them (src/metrics/scrape-registry.ts): at 512 sources one turn took 5-7 ms, 20+ ms the
 * first time while V8 compiled it.
 */
export const SCRAPE_SLICE_MS = 2;

/**
 * A scrape's response leaves in pieces of about this many characters, one per turn of the event
 * loop (cut at line ends): the 475 KB text of 512 sources written at once held the loop ~1.3 ms.
 */
export const SCRAPE_WRITE_PIECE_CHARS = 64 * 1024;

/**
 * zlib level of a gzip /metrics response (to clients that send Accept-Encoding: gzip, as Prometheus
 * does). Compressed on libuv's pool, off the event loop; at 512 sources (~475 KB) level 1 takes ~4 ms
 * of a pool thread for ~46 KB, level 6 ~8.5 ms for ~41 KB.
 */
export const SCRAPE_GZIP_LEVEL = 1;

// --- TLS on the gRPC listener (README "Security"; plaintext when `tls` is omitted) ---
/** With a CA, client certificates are asked for; this makes one the CA verifies mandatory for the handshake. */
export const DEFAULT_TLS_REQUIRE_CLIENT_CERT = false;
/** How often the certificate, key and CA files are checked for a change (a rotation applies within it). */
export const TLS_FILES_POLL_MS = 1_000;

export interface Limits {
  maxCatalogSubscribers: number;
  maxPoolStreamsTotal: number;
  maxSubscribersPerPool: number;
  maxInitializedPoolHubs: number;
  maxReadinessSubscribers: number;
  maxLoadSubscribers: number;
  maxServingLoadSubscribers: number;
  /** Open TCP connections of the gRPC listener; more are closed on accept. */
  maxConnections: number;
  /**
   * Open gRPC connections from one source (an IPv4 address; an IPv6 /64); more from it are closed
   * on accept, so one host cannot take the slots of everyone else (src/transport/admission.ts).
   * Unset: maxConnections x PER_IP_CONNECTION_SHARE, at least 1.
   */
  maxConnectionsPerIp?: number;
  /**
   * Blocks one pool tracks (engine lineage entries over all its sources). At the bound a store that
   * would add blocks is rejected whole and counted; removals make room again.
   */
  maxTrackedBlocksPerPool: number;
  /**
   * Blocks each pool's tables are sized for when the pool is created (its owner table, and its lineage
   * tables split evenly over the sources its workers name): filling to there grows no table. 0 = none,
   * the tables grow as they fill (docs/incoming/pool-reserve.md: ~45-50 B per reserved block per pool).
   */
  reservePoolBlocks: number;
  /**
   * Threads that receive, decode and hash engine KV events (each engine worker's sockets live on one
   * of them); 0 = on the main thread. The pool state stays on the main thread (single writer).
   */
  ingestThreads: number;
}

export interface Timing {
  poolHeartbeatMs: number;
  readinessHeartbeatMs: number;
  /** 0 = catalog heartbeat off (this project's default). */
  catalogHeartbeatMs: number;
  snapshotProgressTimeoutMs: number;
  loadWindowMs: number;
  publicationThreshold: number;
  publicationDelayMs: number;
  healthProbeMs: number;
  /** A connection without an open stream for this long is closed (GOAWAY); clients reconnect on demand. */
  connectionIdleMs: number;
  /**
   * A connection on which no authorized call started this long after accept is closed: the TLS
   * handshake, the HTTP/2 preface and the first request all fit in it (grpc-js's idle timer starts
   * only with a session, and a TLS ClientHello alone would keep a socket forever).
   */
  connectionFirstCallMs: number;
}

export interface Queues {
  publicationQueueCapacity: number;
  publicationQueueBytes: number;
  encodingConcurrency: number;
  maxMessageBytes: number;
}

/** WAN knobs of the reference that the config file does not expose. */
export interface Wan {
  keepaliveIntervalMs: number;
  keepaliveTimeoutMs: number;
  loadFanoutCapacity: number;
}

export interface ServiceOptions {
  limits: Limits;
  timing: Timing;
  queues: Queues;
  wan: Wan;
}

export const DEFAULT_LIMITS: Readonly<Limits> = Object.freeze({
  maxCatalogSubscribers: 64,
  maxPoolStreamsTotal: 64,
  maxSubscribersPerPool: 64,
  maxInitializedPoolHubs: 64,
  maxReadinessSubscribers: 64,
  maxLoadSubscribers: 64,
  maxServingLoadSubscribers: 64,
  maxConnections: 256,
  // 64 Mi blocks, the slots of the largest filter (2^24 buckets x 4): about 3 GiB of producer state
  // at ~46 B per block (BENCHMARKS.md, pool-memory).
  maxTrackedBlocksPerPool: 67_108_864,
  // Opt-in: the memory is taken at pool creation whether or not the blocks ever come.
  reservePoolBlocks: 0,
  // One per core: on 2 cores the main thread (pool apply, gRPC) and one ingest thread (ZMQ I/O,
  // decode, hashing) split the work of the firehose.
  ingestThreads: Math.min(availableParallelism(), MAX_INGEST_THREADS),
});

export const DEFAULT_TIMING: Readonly<Timing> = Object.freeze({
  poolHeartbeatMs: 10_000,
  readinessHeartbeatMs: 10_000,
  catalogHeartbeatMs: 0,
  snapshotProgressTimeoutMs: 60_000,
  loadWindowMs: 1_000,
  publicationThreshold: 16,
  publicationDelayMs: 1,
  healthProbeMs: 1_000,
  connectionIdleMs: 300_000,
  // Real clients start their first call right after the handshake (milliseconds, a WAN TLS
  // handshake well under a second); 5 s is the least a held-open socket costs an attacker per slot.
  connectionFirstCallMs: 5_000,
});

export const DEFAULT_QUEUES: Readonly<Queues> = Object.freeze({
  publicationQueueCapacity: 16,
  publicationQueueBytes: 16_777_216,
  encodingConcurrency: 2,
  maxMessageBytes: 8_388_608,
});

/**
 * Default `limits.maxConnectionsPerIp` as a share of `limits.maxConnections`: 32 of the default 256.
 * A router host runs a few consumer processes with one connection each per relay; 32 leaves room
 * for a NAT'd group of them, and scaled with maxConnections one source never holds more than 1/8.
 */
export const PER_IP_CONNECTION_SHARE = 1 / 8;
/**
 * Share of `limits.maxConnections` kept for sources that made an authorized call before: a source
 * never seen to make one may open a connection only while fewer than the other 3/4 of the slots
 * are held by connections that have not made a call yet (src/transport/admission.ts).
 */
export const RESERVED_CONNECTION_SHARE = 1 / 4;
/** Sources remembered as having made an authorized call (most recent kept): 32 B each at most. */
export const KNOWN_PEER_SOURCES = 4_096;

export const DEFAULT_WAN: Readonly<Wan> = Object.freeze({
  keepaliveIntervalMs: 20_000,
  keepaliveTimeoutMs: 10_000,
  loadFanoutCapacity: 16,
});

export interface ServiceOptionsInput {
  limits?: Partial<Limits>;
  timing?: Partial<Timing>;
  queues?: Partial<Queues>;
  wan?: Partial<Wan>;
}

/** Applies the defaults to every omitted field (partial groups are fine). */
export function resolveServiceOptions(input: ServiceOptionsInput = {}): ServiceOptions {
  return {
    limits: { ...DEFAULT_LIMITS, ...stripUndefined(input.limits) },
    timing: { ...DEFAULT_TIMING, ...stripUndefined(input.timing) },
    queues: { ...DEFAULT_QUEUES, ...stripUndefined(input.queues) },
    wan: { ...DEFAULT_WAN, ...stripUndefined(input.wan) },
  };
}

function stripUndefined<T extends object>(group: Partial<T> | undefined): Partial<T> {
  if (!group) return {};
  return Object.fromEntries(Object.entries(group).filter(([, v]) => v !== undefined)) as Partial<T>;
}

// --- Diagnostics and the status view (src/diagnostics; docs: operations) ---
/** How often the diagnostics sample sources and pools (and so the resolution of an event's age). */
export const DIAGNOSTICS_INTERVAL_MS = 1_000;
/** A source without a connection this long after its start or after a loss is warned about. */
export const DIAGNOSTICS_NOT_CONNECTED_MS = 10_000;
/** A pool still empty this long after its engines began to publish is warned about. */
export const DIAGNOSTICS_POOL_EMPTY_MS = 10_000;
/** A block-size mismatch stays active (status, gauge) this long after the last store it dropped. */
export const DIAGNOSTICS_BLOCK_SIZE_HOLD_MS = 60_000;
/** A warning that still holds is said again at most this often. */
export const DIAGNOSTICS_REPEAT_MS = 600_000;
/**
 * The share of the host's memory the configured pools' reserved tables (limits.reservePoolBlocks) may
 * take before the relay warns at start: the reservation is taken whether or not the blocks come, and
 * under Linux's default overcommit a reservation past memory shows as memory pressure, not an error.
 */
export const RESERVATION_WARN_MEMORY_SHARE = 0.5;
/**
 * Bytes a pool's reserved tables take per reserved block: the owner table ~19.4 B and the lineage
 * tables 24-31 B (BENCHMARKS.md "pool-reserve": 47.4-48 measured), rounded up.
 */
export const RESERVED_BYTES_PER_BLOCK = 50;
/** Warnings of one kind said in one round; the rest are one summary line (the status view lists them all). */
export const DIAGNOSTICS_MAX_LINES_PER_ROUND = 10;
/** A pool's delta latency p99 in the status view is over at most this many recent deltas... */
export const DELTA_LATENCY_RECENT_SAMPLES = 512;
/** ...published within this long. */
export const DELTA_LATENCY_RECENT_MS = 60_000;
/** How long `kv-dc-relay status` waits for the relay's answer. */
export const STATUS_TIMEOUT_MS = 5_000;

// --- etcd discovery and relay shards (README "Discovery from etcd", "Relay shards") ---
/** Lease TTL of a relay shard (its address and pool claims) and of a registered worker entry. */
export const DEFAULT_ETCD_LEASE_TTL_S = 10;
/**
 * Off: a shard that cannot confirm its lease stops serving within the TTL even when it sees no
 * sibling, because a shard cut off from etcd cannot know that none started meanwhile.
 */
export const DEFAULT_LONE_SHARD_KEEPS_SERVING = false;
/**
 * Keys per page of a full etcd read (discovery/mirror.ts). Halved while a page's response is over
 * grpc-js's 4 MiB receive limit; 256 small Dynamo entries (cards of a few KiB) fit in one page.
 */
export const ETCD_READ_PAGE_KEYS = 256;
/** Retry delay of a failed etcd read, watch or lease grant: doubling from this with jitter... */
export const ETCD_RETRY_INITIAL_MS = 200;
/** ...up to this. */
export const ETCD_RETRY_MAX_MS = 5_000;
/** Deadline of one unary etcd request (a dead member fails over or reports within it). */
export const ETCD_REQUEST_TIMEOUT_MS = 5_000;
/**
 * Pause between two applications of etcd changes while more keep coming: a burst of registrations
 * is applied in batches instead of once per watch event. A change after a quiet spell applies at once.
 */
export const DISCOVERY_BATCH_INTERVAL_MS = 50;
/** gRPC keepalive on the etcd connection, so a silent network loss ends the watch (etcd's floor is 5 s). */
export const ETCD_KEEPALIVE_MS = 10_000;

// --- Consumer library and CLI (consumer.md §1.4, hashing-ckf-cbi1.md §2.1) ---
/** Reconnect backoff of every consumer stream: 100 ms doubling to 5 s, with equal jitter. */
export const CLIENT_BACKOFF_INITIAL_MS = 100;
export const CLIENT_BACKOFF_MAX_MS = 5_000;
/**
 * After an established stream breaks (it had been healthy at least CLIENT_BACKOFF_MAX_MS: a relay
 * that worked, not a crash loop), retries stay at most this far apart for the recovery window, and
 * so do the channel's dials (src/client/relay-channel.ts): a relay restarted within the window is found again
 * within this delay plus its round trips (issue #9: every consumer on the new relay within 2 s of it
 * listening; doubling to 5 s would leave up to 5 s of it to luck). A dial of a port nobody listens
 * on costs a SYN and a RST.
 */
export const CLIENT_RECOVERY_BACKOFF_MAX_MS = 250;
/** How long after such a loss the short cap holds; then the delay doubles on to CLIENT_BACKOFF_MAX_MS.
 *  A supervised process restarts in seconds (systemd, a container's first restart). */
export const CLIENT_RECOVERY_WINDOW_MS = 10_000;
/** Positions re-probed below the tentative prefix depth (kv-router DEFAULT_VERIFICATION_WINDOW). */
export const DEFAULT_VERIFICATION_WINDOW = 2;
export const MAX_VERIFICATION_WINDOW = 8;
/** A consumer's subscriber id leaves room for the per-stream suffix within the 128-byte wire limit. */
export const CLIENT_SUBSCRIBER_ID_MAX_BYTES = 118;
/** A pool stream silent for longer drops its replica and resubscribes (consumer.md §1.6; > the 10 s pool heartbeat). */
export const DEFAULT_MAX_REPLICA_AGE_MS = 30_000;
/** A load or serving-load stream silent for longer than max(this, LOAD_SILENCE_WINDOWS x its window_ms)
 *  is dropped and reopened (consumer.md §1.4, Pylon: 3 s). */
export const LOAD_SILENCE_MIN_MS = 3_000;
export const LOAD_SILENCE_WINDOWS = 3;
/** Deadline of the GetRelayInfo handshake of each connection epoch (the mTLS tool's connect timeout). */
export const RELAY_INFO_TIMEOUT_MS = 10_000;
/** Window over which a replica's deltas per second are measured. */
export const REPLICA_RATE_WINDOW_MS = 5_000;
/**
 * A consumer's replica budget (src/client/replica-budget.ts), shared by every shard of a
 * ShardedRelayClient: pools it replicates at once, and bytes of their bucket tables (bucket count
 * x 8, allocated at a snapshot's first chunk; the catalog declares it before any is subscribed).
 * A relay's default pool is 4 MiB (2^19 buckets), the largest the wire allows 128 MiB (2^24): 1 GiB
 * holds 256 default pools or 8 of the largest, so a relay listing more cannot take a router's memory.
 */
export const DEFAULT_CLIENT_MAX_REPLICA_POOLS = 256;
export const DEFAULT_CLIENT_MAX_REPLICA_BYTES = 1_073_741_824;
/**
 * The consumer's HTTP/2 receive window, per stream and for the connection (grpc-js
 * `grpc-node.flow_control_window`; node's default is 64 KiB). A busy pool's delta is 25-150 KB, so
 * with 64 KiB the relay sends the rest only after the consumer's event loop acknowledged the start,
 * and a consumer a few ms late on shared cores fills its queue and engages the relay's pacing
 * (BENCHMARKS.md 2026-12-07: with 4 MiB the bench's subscriber never did). The connection window
 * bounds what all of a client's streams hold unread together, so this is also the most it buffers.
 */
export const DEFAULT_CLIENT_FLOW_CONTROL_WINDOW_BYTES = 4 * 1024 * 1024;
/** The window's bounds: HTTP/2's initial window (RFC 9113 §6.9.2; less would only slow snapshots) and its largest (§6.9.1). */
export const HTTP2_MIN_WINDOW_BYTES = 65_535;
export const HTTP2_MAX_WINDOW_BYTES = 2 ** 31 - 1;
/** Redraw period of `watch` on a terminal (and of its replica statistics line otherwise). */
export const WATCH_REFRESH_MS = 500;
/** Errors kept on the `watch` terminal screen. */
export const WATCH_RECENT_ERRORS = 5;
/**
 * How long `query` waits for the catalog and the resolved pools' replicas (--timeout-ms), and after
 * how long `watch` says that a relay it has no catalog from is unreachable, with gRPC's cause.
 */
export const QUERY_TIMEOUT_MS = 5_000;
/**
 * How long `query` keeps reading after its answer is complete. A new subscriber may get a shared
 * snapshot followed by the deltas published since; they arrive right behind it, and an answer taken
 * at the snapshot would miss them.
 */
export const QUERY_SETTLE_MS = 100;

// --- Engine KV-event ingest (engine-inputs.md §1.1–§1.2) ---
/** A replay that stays silent this long is abandoned (vLLM's gRPC bridge uses 5 s). */
export const INGEST_REPLAY_IDLE_TIMEOUT_MS = 5_000;
/** Live messages held back while a replay runs and until they are drained; beyond this the replay is abandoned or the backlog dropped. */
export const INGEST_REPLAY_MAX_BUFFERED = 100_000;
/** The same bound in payload bytes, per rank (a reset when the backlog behind a replay outgrows it). */
export const INGEST_REPLAY_MAX_BUFFERED_BYTES = 64 * 1024 * 1024;
/**
 * Largest engine message frame the SUB and replay DEALER accept; libzmq drops the connection of a
 * peer that sends more, before buffering it. A vLLM batch is tens of KiB (one engine step; a 128
 * k-token prefill in one step is under 1 MiB), so this leaves room and still bounds what one message
 * can make the relay allocate.
 */
export const INGEST_MAX_MESSAGE_BYTES = 4 * 1024 * 1024;
/**
 * Blocks one engine event may carry (issue 26 item 2): a larger BlockStored / BlockRemoved is
 * malformed (counted, logged, dropped whole) before any scratch is sized for it. One engine step's
 * store is its prefill's new blocks: vLLM's default block of 16 tokens and a 128 k-token step make
 * 8 192, SGLang's page of 1 token with its default 8 k-token chunk as many; 65 536 leaves 8x that (a
 * 1 M-token step at 16 tokens per block). A 4 MiB message of one-byte ids (4 million blocks) is no
 * engine event: it made the repeat check allocate 224 MiB it never gave back.
 */
export const INGEST_MAX_BLOCKS_PER_EVENT = 65_536;
/**
 * Packed words (8 bytes: ids, token hashes, one per event header) one engine message may decode to,
 * 2 MiB: two full-size stores. A message that would exceed it is malformed; a rank's burst is handed
 * on once it holds this many, so a burst holds at most twice this, and the copies the event loop
 * makes of it (into the pool's inbox) stay well under a millisecond.
 */
export const INGEST_MAX_MESSAGE_WORDS = 262_144;
/**
 * Ingest buffers (receive arena, burst, decoder scratch, hand-off staging, pool inboxes) grown past
 * this many bytes by an outsized message are given back once it was handled, so one burst of large
 * messages does not hold memory for good (256 KiB per buffer: 128 MiB over 512 sources at most).
 */
export const INGEST_RETAINED_BUFFER_BYTES = 256 * 1024;
/**
 * What one engine connection may have queued in the relay's SUB socket before the receive loop reads
 * it. libzmq bounds that queue in messages (INGEST_RECEIVE_HWM, derived from this); when it is full it
 * stops reading the connection, so the backlog waits in the engine's PUB queue (vLLM: 100 000
 * messages) and what overflows there shows up as a gap (replay, or a reset).
 */
export const INGEST_RECEIVE_QUEUE_BYTES = 128 * 1024 * 1024;
/** A dialed engine connection lost without a reconnect scheduled (a protocol error) is dialed again after this. */
export const INGEST_REDIAL_MS = 1_000;
/**
 * SUB receive high-water mark: INGEST_RECEIVE_QUEUE_BYTES of the largest messages (32). Twice the
 * messages a rank handles per turn, so the next burst is queued while one is handled.
 */
export const INGEST_RECEIVE_HWM = INGEST_RECEIVE_QUEUE_BYTES / INGEST_MAX_MESSAGE_BYTES;
/**
 * Replay DEALER receive high-water mark: the live socket's, so one replay holds at most
 * INGEST_RECEIVE_QUEUE_BYTES of complete replies in the relay (issue 26 item 1: 100 000 let one
 * answer of 1 GiB take the relay to 755 MiB). The engine's ROUTER sends its whole replay buffer at
 * once and silently drops what its own queue (vLLM: 1 000) and this one cannot hold; the stream sees
 * the hole in the replies and asks again from it (stream.ts replayed()), each round delivering at
 * least the two queues' worth, so a full vLLM buffer (10 000 batches) takes a few rounds. A dropped
 * tail shows no hole: a round that delivered a full queue's worth is followed by one more from the
 * next sequence (stream.ts replayEnded()).
 */
export const INGEST_REPLAY_RECEIVE_HWM = INGEST_RECEIVE_HWM;
/**
 * Engine messages one rank handles before yielding to the event loop: a backlog would otherwise be
 * drained in one turn, with no transport write completing meanwhile, and its burst of deltas would
 * overflow the queue of every pool subscriber however fast it reads.
 */
export const INGEST_MESSAGES_PER_TURN = 16;
/**
 * Contiguous live messages from a lower sequence that confirm an engine restart on one connection; a
 * shorter run that the old stream interrupts is dropped (engine-inputs.md §1.1: no epoch on the wire).
 */
export const INGEST_RESTART_CONFIRMATIONS = 3;
/** ZMQ sockets a relay process may open (libzmq's default, 1023, is about 500 workers with replay). */
export const INGEST_MAX_ZMQ_SOCKETS = 65_536;
/** Warnings about malformed engine input: at most this many per window per subscriber. */
export const INGEST_LOG_MAX_PER_WINDOW = 10;
export const INGEST_LOG_WINDOW_MS = 10_000;
/**
 * Engine messages the ingest threads may have handed to the main thread and not yet seen applied by
 * their pools, over all threads (each gets an even share). A pool's mailbox counts each message as a
 * batch and drops what does not fit, resetting its source; every thread may feed the same pool, so
 * the threads together hold at most half of one mailbox, and the other half is room for source
 * resets (a mailbox slot each) and in-process ingest. Counting bursts instead let 32 bursts of 16
 * replayed messages per thread overflow the mailbox while a pool cleared a restarted source...
 */
export const INGEST_HANDOFF_MAX_MESSAGES = ACTOR_MAILBOX_CAPACITY / 2;
/** ...their blocks, likewise half of one mailbox's block permits... */
export const INGEST_HANDOFF_MAX_BLOCKS = PENDING_BLOCK_PERMITS / 2;
/**
 * ...and their bytes (about 16 per block of vLLM batches). Beyond any bound the thread waits (its
 * sockets queue in ZMQ, whose bound shows as a gap and a replay)...
 */
export const INGEST_HANDOFF_MAX_BYTES = 512 * 1024;
/** ...for at most this long; then the hand-off is dropped, its sources reset ('overflow') and replayed from 0, as on a full pool mailbox. */
export const INGEST_HANDOFF_WAIT_MS = 1_000;
/**
 * A thread's hand-off ring (HandoffRing), in multiples of its bytes bound: the hand-offs posted and
 * not read yet (the bound counts them until applied, so they stay under it), one that exceeds the
 * bound alone, and the end skipped where one wraps. A hand-off that finds no room travels in a
 * transferred buffer of its own instead.
 */
export const INGEST_HANDOFF_RING_PER_BYTES_BOUND = 4;
/**
 * ...and at least this many of the largest bursts (INGEST_MAX_MESSAGE_WORDS twice, a rank's burst at
 * most): a burst that finds no room travels in a transferred buffer, which the main thread's V8
 * counts as new external memory, and a run of large ones made it collect (a 30 ms pause of the event
 * loop) where a ring region costs nothing (issue 26 item 4).
 */
export const INGEST_HANDOFF_RING_LARGEST_BURSTS = 2;
/**
 * An ingest thread posts at most one hand-off per this long (unless one fills the bounds): at mid
 * rates over many sources a post, and the main thread's wake-up for it, cost more CPU than the small
 * messages they carried (issue 30 item 2); the bursts of every socket read meanwhile go together. A
 * message waits at most this much longer for the pool.
 */
export const INGEST_HANDOFF_COALESCE_MS = 1;
/** The Dynamo event plane's thread reports its sources' counters this often (ingest threads share theirs: StatsBoard). */
export const INGEST_THREAD_STATS_MS = 250;
/** What an ingest thread names itself (setThreadName: top -H, perf, the benches' CPU by thread). */
export const INGEST_THREAD_NAME = 'kvrelay-ingest';
/** A dead ingest thread is started again after this (its sources reset meanwhile; bounds a crash loop). */
export const INGEST_THREAD_RESTART_MS = 200;
/** An ending ingest thread waits this long for its subscribers to close... */
export const INGEST_THREAD_CLOSE_TIMEOUT_MS = 2_000;
/** ...and this long more for their sockets' last receives to settle before it exits. */
export const INGEST_THREAD_EXIT_SETTLE_MS = 20;

// Dynamo event plane (src/dynamo/event-plane).
/** Publishers whose order each event-plane channel remembers (the longest idle is forgotten beyond it). */
export const DYNAMO_MAX_PUBLISHERS_PER_CHANNEL = 65_536;
/** Wait between NATS reconnect attempts. */
export const DYNAMO_NATS_RECONNECT_WAIT_MS = 500;
/** Wait before reading a JetStream stream again that does not exist yet or whose consumer ended. */
export const DYNAMO_STREAM_RETRY_MS = 1_000;
/** JetStream pull expiry of the ordered consumers (their idle heartbeat is half of it). */
export const DYNAMO_JETSTREAM_PULL_EXPIRES_MS = 2_000;
