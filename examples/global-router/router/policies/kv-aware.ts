// Our policy: route to the pool where the request's first token is expected soonest, in absolute
// work converted to time. The wait ahead is this router's prefill queued at the pool, placed on the
// pool's ranks as the DC's own router places it (each on the shortest queue), so a wait is the
// shortest rank queue, not the pool's average; the request's own uncached prefill runs on one rank;
// both at the per-rank prefill rate. Memory pressure stretches it as a queue near saturation does:
// the estimate is divided by (1 − KV usage), the relay-published share of blocks held by running
// requests (all routers' traffic). A cached prefix is worth exactly the prefill it saves; the load
// terms grow without bound under saturation. Plus the round trip. The shape of Mooncake's Conductor
// (estimated queueing + prefill time per instance), with DCs of any size.
//
// Triage, when the request carries a TTFT target: if no pool is expected to meet it, the request is
// sent where the wait is already longest, not where it is shortest. In overload, sending a request
// that will miss its target anyway to the shortest queue only lengthens the one queue that still
// serves requests within theirs; when every policy equalizes the queues, every queue ends up beyond
// every target (measured in docs/router-evaluation.md, "Why kv-aware loses at 110 %"). A request is
// judged lost only on the optimistic estimate (memory free): the memory stretch is a guess, and a
// request sent away on it that would have met its target costs goodput below the knee.
import { DEFAULT_PREFILL_TOKENS_PER_MS } from '../defaults';
import type { Candidate } from '../candidates';
import { best, positive, ranksOf, uncachedTokens, type Policy, type RandomSource } from './policy';

export interface KvAwareOptions {
  /** Prefill throughput of one rank (tokens per ms). */
  prefillTokensPerMs?: number;
  random?: RandomSource;
}

/** KV usage is capped here so a full pool costs 20 × its estimate, not infinity (a full pool still drains). */
const MAX_KV_USAGE = 0.95;

/** The shortest of `ranks` queues after placing each pending prefill on the shortest one (as the DC's router does). */
export function shortestQueue(prefills: readonly number[], ranks: number): number {
  const queues = new Array<number>(Math.max(1, Math.round(ranks))).fill(0);
  for (const p of prefills) {
    let k = 0;
    for (let i = 1; i < queues.length; i++) if (queues[i] < queues[k]) k = i;
    queues[k] += p;
  }
  return Math.min(...queues);
}

/** Time to the first token at this pool were its memory free: the queue ahead and the request's own prefill at full rate, plus the round trip, ms. */
export function unstretchedTtftMs(c: Candidate, prefillTokensPerMs: number): number {
  return c.rttMs + (shortestQueue(c.pendingPrefills, ranksOf(c)) + uncachedTokens(c)) / prefillTokensPerMs;
}

/** Expected time to the first token at this pool, ms: the prefill part stretched by memory pressure. */
export function estimatedTtftMs(c: Candidate, prefillTokensPerMs: number): number {
  const usage = Math.min(MAX_KV_USAGE, Math.max(c.kvUsage ?? 0, 0));
  return c.rttMs + (unstretchedTtftMs(c, prefillTokensPerMs) - c.rttMs) / (1 - usage);
}

/**
 * Lowest estimated time to first token; ties go to fewer blocks in flight per rank, then at random.
 * With a TTFT target no pool is expected to meet, the highest estimate instead (triage, above).
 */
export function kvAware(options: KvAwareOptions = {}): Policy {
  const rate = positive('prefillTokensPerMs', options.prefillTokensPerMs ?? DEFAULT_PREFILL_TOKENS_PER_MS);
  const random = options.random ?? Math.random;
  return {
    name: 'kv-aware',
    usesPrefix: true,
    choose: (candidates, request) => {
      const slo = request.ttftSloMs;
      const doomed = slo !== undefined && candidates.every((c) => unstretchedTtftMs(c, rate) > slo);
      const sign = doomed ? 1 : -1;
      return best(candidates, (c) => [sign * estimatedTtftMs(c, rate), -c.activeBlocks / ranksOf(c)], random);
    },
  };
}
