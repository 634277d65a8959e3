// Every default of the global router, in one place (README "Global router" documents them).

/** KV-aware score = prefixWeight × (cached prompt fraction) − loadWeight × utilization. */
export const DEFAULT_PREFIX_WEIGHT = 1;
/**
 * With equal weights a DC holding the whole prompt beats an idle DC holding none of it until it is
 * one full concurrency (utilization 1.0) busier: cache reuse wins while it is cheaper than queueing.
 */
export const DEFAULT_LOAD_WEIGHT = 1;
/** Concurrency assumed for a pool whose relay publishes no max_concurrency (serving-load deployment). */
export const DEFAULT_POOL_CAPACITY = 64;
/**
 * After a DC's replica is invalidated its pool is used only as a last resort for this long, or until
 * the replica is installed again: an invalidation usually means the relay connection is in trouble,
 * and the catalog is lost moments later when it is.
 */
export const DEFAULT_INVALID_REPLICA_HOLD_MS = 5_000;
/** How long the CLI waits for every DC's catalog, readiness and replicas before routing anyway. */
export const DEFAULT_READY_WAIT_MS = 10_000;
