// One DC's answer for a request → the pools the router may choose (Candidates) and why the others
// were skipped. Pure: query() already joined catalog, replica, readiness and load per pool.
import type { PoolQueryResult, QueryResult, ReadinessName } from 'kv-dc-relay/client';

export interface Candidate {
  dc: string;
  poolKey: string;
  endpoint: string;
  promptTokens: number;
  /** Tokens of the prompt cached in the pool per its relay's replica; null = unknown (no usable replica, or not asked). */
  matchedTokens: number | null;
  /** The pool's KV block size (tokens). */
  blockSize: number;
  /** Data-parallel ranks of the pool per its relay's load plane; null when the relay has not said. */
  ranks: number | null;
  /** The pool's concurrency: the relay's max_concurrency, else the router's default. */
  capacity: number;
  /** Relay-published KV usage (used / total blocks) when every rank reported; null otherwise. */
  kvUsage: number | null;
  /** Round trip from this router to the DC for a request (configured per DC). */
  rttMs: number;
  /** This router's own requests to the pool (exact for its traffic, no lag; blind to other routers'). */
  inflight: number;
  awaitingFirstToken: number;
  /** Prompt tokens of its requests not yet at their first token that were not cached when routed. */
  pendingPrefillTokens: number;
  /** The same per request, in the order they were routed. */
  pendingPrefills: readonly number[];
  /** Prompt blocks of its requests in flight. */
  activeBlocks: number;
  /** Why the pool is used only if nothing else is eligible (the DC looks unhealthy), or false. */
  lastResort: LastResort | false;
}

/**
 * Why a pool is a last resort: its replica was invalidated recently; requests sent to it failed
 * (connection refused, reset or timed out) and none has succeeded since; or its relay has sent no
 * load window for several of its windows (a held stream: a WAN partition, a stalled relay).
 */
export type LastResort = 'replicaInvalidated' | 'failing' | 'silent';

/** What this router has outstanding at one pool (see GlobalRouter's bookkeeping). */
export interface PoolWork {
  inflight: number;
  awaitingFirstToken: number;
  pendingPrefillTokens: number;
  pendingPrefills: readonly number[];
  activeBlocks: number;
}

export const NO_WORK: Readonly<PoolWork> = Object.freeze({ inflight: 0, awaitingFirstToken: 0, pendingPrefillTokens: 0, pendingPrefills: Object.freeze([]), activeBlocks: 0 });

export type SkipReason =
  | 'relayUnreachable'
  | 'noCatalog'
  | 'noReadiness'
  | 'unknownModel'
  | 'ambiguousModel'
  | 'loraMismatch'
  | 'noPool'
  | `readiness ${ReadinessName | 'missing'}`;

export interface Skipped {
  dc: string;
  poolKey?: string;
  reason: SkipReason;
}

export interface DcInput {
  dc: string;
  /** The relay connection has a current epoch (GetRelayInfo answered, identity unchanged). */
  connected: boolean;
  hasReadiness: boolean;
  result: QueryResult;
  promptTokens: number;
  /** Whether the policy asked for prefix depth (otherwise the prompt was not hashed). */
  prefix: boolean;
  rttMs: number;
  work(poolKey: string): Readonly<PoolWork>;
  lastResort(poolKey: string): LastResort | false;
  defaultCapacity: number;
}

/** Eligible pools: catalog and readiness present, the model resolved, the pool READY (consumer.md §1.2). */
export function dcCandidates(input: DcInput): { candidates: Candidate[]; skipped: Skipped[] } {
  const { dc, result } = input;
  const skip = (reason: SkipReason) => ({ candidates: [], skipped: [{ dc, reason }] });
  if (!input.connected) return skip('relayUnreachable');
  if (result.kind !== 'ok') return skip(result.kind);
  if (!input.hasReadiness) return skip('noReadiness');
  if (result.pools.length === 0) return skip('noPool');
  const candidates: Candidate[] = [];
  const skipped: Skipped[] = [];
  for (const pool of result.pools) {
    if (pool.readiness !== 'READY') {
      skipped.push({ dc, poolKey: pool.poolKey, reason: `readiness ${pool.readiness ?? 'missing'}` });
      continue;
    }
    candidates.push({
      dc,
      poolKey: pool.poolKey,
      endpoint: pool.endpoint,
      promptTokens: input.promptTokens,
      matchedTokens: input.prefix ? pool.matchedTokens : null,
      blockSize: pool.kvBlockSize,
      ranks: ranksOf(pool),
      capacity: capacityOf(pool, input.defaultCapacity),
      kvUsage: kvUsageOf(pool),
      rttMs: input.rttMs,
      ...input.work(pool.poolKey),
      lastResort: input.lastResort(pool.poolKey),
    });
  }
  return { candidates, skipped };
}

function capacityOf(pool: PoolQueryResult, fallback: number): number {
  const published = pool.servingLoad?.deployment?.maxConcurrency;
  return published !== undefined && published > 0n ? Number(published) : fallback;
}

/** The ranks the relay expects load from (every declared rank of the pool's workers). */
function ranksOf(pool: PoolQueryResult): number | null {
  const ranks = pool.load?.kvExpectedRanks ?? 0;
  return ranks > 0 ? ranks : null;
}

/** Only a complete window counts: partial coverage publishes 0, which must not read as idle. */
function kvUsageOf(pool: PoolQueryResult): number | null {
  const load = pool.load;
  if (!load || load.totalKvBlocks === 0n || load.kvObservedRanks !== load.kvExpectedRanks) return null;
  return Number(load.kvUsedBlocks) / Number(load.totalKvBlocks);
}
