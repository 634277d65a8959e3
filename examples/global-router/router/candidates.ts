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
  /** Requests this router has sent to the pool and not yet released. */
  inflight: number;
  /** The pool's concurrency: the relay's max_concurrency, else the router's default. */
  capacity: number;
  /** Relay-published KV usage (used / total blocks) when every rank reported; null otherwise. */
  kvUsage: number | null;
  /** The replica was invalidated recently: use the pool only if nothing else is eligible. */
  lastResort: boolean;
}

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
  inflight(poolKey: string): number;
  lastResort(poolKey: string): boolean;
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
      inflight: input.inflight(pool.poolKey),
      capacity: capacityOf(pool, input.defaultCapacity),
      kvUsage: kvUsageOf(pool),
      lastResort: input.lastResort(pool.poolKey),
    });
  }
  return { candidates, skipped };
}

function capacityOf(pool: PoolQueryResult, fallback: number): number {
  const published = pool.servingLoad?.deployment?.maxConcurrency;
  return published !== undefined && published > 0n ? Number(published) : fallback;
}

/** Only a complete window counts: partial coverage publishes 0, which must not read as idle. */
function kvUsageOf(pool: PoolQueryResult): number | null {
  const load = pool.load;
  if (!load || load.totalKvBlocks === 0n || load.kvObservedRanks !== load.kvExpectedRanks) return null;
  return Number(load.kvUsedBlocks) / Number(load.totalKvBlocks);
}
