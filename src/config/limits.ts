// Validation bounds of the config file and bounds on what a gRPC peer may send; none is a tunable
// (tunables live in defaults.ts).

/** Characters of a peer-supplied text (an etcd key, a problem quoting a value) in one log field (log.ts clipForLog). */
export const LOG_FIELD_MAX_CHARS = 512;
/** runtime_config.data_parallel_size range. */
export const MAX_DP_SIZE = 4096;
export const MAX_U32 = 0xffff_ffff;
export const MAX_U64 = 0xffff_ffff_ffff_ffffn;
/** limits.maxTrackedBlocksPerPool bound: the native owner count's range (native pool_filter_state.h kMaxTrackedBlocks). */
export const MAX_TRACKED_BLOCKS_PER_POOL = 2 ** 31 - 1;
/** limits.ingestThreads bound (each thread holds its own V8 heap, zeromq context and decoder). */
export const MAX_INGEST_THREADS = 256;
/** ExplicitIdentityMap bounds (identity-topology-load.md §1.2). */
export const IDENTITY_MAP_MAX_ENTRIES = 32;
export const IDENTITY_KEY_MAX_BYTES = 128;
export const IDENTITY_VALUE_MAX_BYTES = 1024;
/** Largest expectedUniqueBlocks whose bucket count, next_pow2(max(2, (5n + 15) / 16)), is still 2^24. */
export const MAX_EXPECTED_UNIQUE_BLOCKS = 53_687_091;
/**
 * limits.reservePoolBlocks bound: the most unique blocks any pool's filter is sized for (a typo cannot
 * map terabytes; ~3 GiB of tables per pool at this bound). Below the native pool's kMaxReservedBlocks.
 */
export const MAX_RESERVE_POOL_BLOCKS = MAX_EXPECTED_UNIQUE_BLOCKS;
/** Config file changes are debounced so an editor's burst of writes is read once. */
export const CONFIG_WATCH_DEBOUNCE_MS = 100;
/** Backstop poll of the config file for filesystems where fs.watch misses events (network mounts). */
export const CONFIG_WATCH_POLL_MS = 1000;

// Validation bounds of the tunables (wire-contract.md §8.1).
/** Timer rule: non-zero and at most one year. */
export const MAX_TIMER_DURATION_MS = 31_536_000_000;
/** CBI1 max frame (4 194 368) plus 64 KiB of envelope headroom. */
export const MIN_MAX_MESSAGE_BYTES = 4_259_904;
/** One maximum frame (4 194 368) plus its 256 bytes of queue accounting. */
export const MIN_PUBLICATION_QUEUE_BYTES = 4_194_624;

// etcd discovery (README "Discovery from etcd").
/** etcd raises shorter lease TTLs to about 2 s (1.5 x its election timeout), so shorter ones are refused. */
export const MIN_ETCD_LEASE_TTL_S = 2;
export const MAX_ETCD_LEASE_TTL_S = 3_600;
/** A discovery value larger than this is rejected unread (a worker or endpoint entry is a few hundred bytes). */
export const MAX_DISCOVERY_VALUE_BYTES = 65_536;
/** A Dynamo discovery value (a model card carries its tokenizer and config file references) larger than this is rejected unread. */
export const MAX_DYNAMO_VALUE_BYTES = 1_048_576;

// What a gRPC peer may send (hostile input is bounded before anything is allocated for it).
/**
 * Largest request message the server reads. Requests are a few hundred bytes (a subscriber id of at
 * most 128 bytes and an expected producer); responses keep `maxMessageBytes`.
 */
export const MAX_REQUEST_BYTES = 16_384;
/** HTTP/2 streams one connection may have open at once (SETTINGS_MAX_CONCURRENT_STREAMS). */
export const MAX_CONCURRENT_STREAMS_PER_CONNECTION = 128;
/**
 * Largest zstd window a compressed request may declare. Not the receive limit: a streaming
 * compressor that does not know the size up front (tonic's, at zstd's default level: 2 MiB)
 * declares a window far above a small request, so this is 8 MiB (window log 23, the most zstd's
 * standard levels choose). Decoding is synchronous, so one such buffer exists at a time.
 */
export const ZSTD_MAX_WINDOW_BYTES = 8_388_608;
