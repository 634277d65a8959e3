// Dynamo's KV router cost, per pool: cost = overlap_score_weight × prefill blocks + decode blocks,
// lowest wins (docs/router/kv_cache_routing.md, "Cost Calculation"). Prefill blocks are the
// request's uncached blocks plus those this router has queued at the pool until their first token;
// decode blocks are the blocks of its requests in flight there plus the request's own. Dynamo scores
// equal workers; across DCs of different sizes the cost is taken per rank. A temperature above 0
// samples by softmax over the costs normalized to the largest, as Dynamo's --router-temperature.
import { DEFAULT_DYNAMO_OVERLAP_WEIGHT } from '../defaults';
import type { Candidate } from '../candidates';
import { best, nonNegative, ranksOf, uncachedTokens, type Policy, type RandomSource } from './policy';

export interface DynamoCostOptions {
  overlapWeight?: number;
  temperature?: number;
  random?: RandomSource;
}

export function dynamoCost(c: Candidate, overlapWeight: number): number {
  const prefillBlocks = (c.pendingPrefillTokens + uncachedTokens(c)) / c.blockSize;
  const decodeBlocks = c.activeBlocks + Math.ceil(c.promptTokens / c.blockSize);
  return (overlapWeight * prefillBlocks + decodeBlocks) / ranksOf(c);
}

export function dynamoCostPolicy(options: DynamoCostOptions = {}): Policy {
  const weight = nonNegative('overlapWeight', options.overlapWeight ?? DEFAULT_DYNAMO_OVERLAP_WEIGHT);
  const temperature = nonNegative('temperature', options.temperature ?? 0);
  const random = options.random ?? Math.random;
  return {
    name: 'dynamo-cost',
    usesPrefix: true,
    choose: (candidates) => {
      if (temperature === 0) return best(candidates, (c) => [-dynamoCost(c, weight)], random);
      const costs = candidates.map((c) => dynamoCost(c, weight));
      const scale = Math.max(...costs) || 1;
      const weights = costs.map((x) => Math.exp(-x / scale / temperature));
      let u = random() * weights.reduce((a, b) => a + b, 0);
      for (let i = 0; i < candidates.length; i++) if ((u -= weights[i]) < 0) return candidates[i];
      return candidates[candidates.length - 1];
    },
  };
}
