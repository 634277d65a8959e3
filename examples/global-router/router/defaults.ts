// Every default of the global router, in one place (README "Global router" documents them).

/**
 * Prefill throughput of one engine rank, tokens per ms, for the KV-aware policy's time estimate:
 * Llama-3.1-8B on an A100-80GB prefills about 11 tokens/ms in 8192-token chunks with a few thousand
 * tokens of context (sim/engine/calibration.ts). Set it to your model and GPU's measured rate.
 */
export const DEFAULT_PREFILL_TOKENS_PER_MS = 11;
/** Concurrency assumed for a pool whose relay publishes no max_concurrency (serving-load deployment). */
export const DEFAULT_POOL_CAPACITY = 64;
/**
 * After a DC's replica is invalidated its pool is used only as a last resort for this long, or until
 * the replica is installed again: an invalidation usually means the relay connection is in trouble,
 * and the catalog is lost moments later when it is.
 */
export const DEFAULT_INVALID_REPLICA_HOLD_MS = 5_000;
/**
 * After a request to a pool fails (connection refused or reset, no answer in time) the pool is used
 * only as a last resort for this long, or until a request there succeeds: a partitioned or dead DC
 * otherwise looks idle, since its failed requests leave the router's book, and attracts more. When
 * the hold passes, the next request probes it (a circuit breaker's half-open state).
 */
export const DEFAULT_FAILURE_HOLD_MS = 5_000;
/**
 * A relay publishes a load window every window_ms (timing.loadWindowMs, 1 s by default): a DC whose
 * relay has sent none for this many windows is silent (its stream is held: a WAN partition, a
 * stalled relay) and its pools are a last resort until a window arrives; never sooner than the
 * client's load-stream floor (LOAD_SILENCE_MIN_MS, 3 s), after which it ends and reopens the stream.
 * Long before the client's pool-stream silence limit (maxReplicaAgeMs, 30 s) drops the replica.
 */
export const DEFAULT_SILENCE_WINDOWS = 3;
/** How long the CLI waits for every DC's catalog, readiness and replicas before routing anyway. */
export const DEFAULT_READY_WAIT_MS = 10_000;
/** Dynamo's KV router: cost = overlap_score_weight × prefill blocks + decode blocks (its default weight). */
export const DEFAULT_DYNAMO_OVERLAP_WEIGHT = 1;
/** llm-d's default scheduling profile: prefix-cache-scorer 3, queue-scorer 2, kv-cache-utilization-scorer 2. */
export const DEFAULT_LLMD_WEIGHTS = Object.freeze({ prefix: 3, queue: 2, kvUsage: 2 });
/** Consistent hashing with bounded loads (Mirrokni et al. 2018): no DC above 1.25 × its fair share. */
export const DEFAULT_CHWBL_LOAD_FACTOR = 1.25;
/** Tokens of the prompt that key consistent hashing: two 512-token blocks (the trace's system prompt and session). */
export const DEFAULT_CHWBL_KEY_TOKENS = 1024;
/** Points on the hash ring per unit of DC weight (per rank). */
export const DEFAULT_CHWBL_POINTS_PER_RANK = 64;
