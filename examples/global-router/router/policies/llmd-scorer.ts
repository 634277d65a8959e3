// llm-d's inference scheduler: a weighted sum of scorers in [0, 1], highest wins (max-score-picker),
// with its default profile's weights: prefix-cache-scorer 3 (the prompt's cached fraction),
// queue-scorer 2 (queue length min-max normalized across the candidates: the shortest scores 1,
// all equal score 1) and kv-cache-utilization-scorer 2 (1 − KV usage). The queue here is this
// router's requests awaiting their first token per rank (the relay does not carry engines' waiting
// counts); KV usage is the relay's (unknown counts as empty).
import { DEFAULT_LLMD_WEIGHTS } from '../defaults';
import type { Candidate } from '../candidates';
import { best, cachedFraction, nonNegative, ranksOf, type Policy, type RandomSource } from './policy';

export interface LlmdScorerOptions {
  weights?: { prefix: number; queue: number; kvUsage: number };
  random?: RandomSource;
}

export function llmdScorer(options: LlmdScorerOptions = {}): Policy {
  const w = options.weights ?? DEFAULT_LLMD_WEIGHTS;
  for (const [k, v] of Object.entries(w)) nonNegative(`weights.${k}`, v);
  const random = options.random ?? Math.random;
  return {
    name: 'llm-d',
    usesPrefix: true,
    choose: (candidates) => {
      const queue = (c: Candidate) => c.awaitingFirstToken / ranksOf(c);
      const queues = candidates.map(queue);
      const [min, max] = [Math.min(...queues), Math.max(...queues)];
      const queueScore = (c: Candidate) => (max === min ? 1 : (max - queue(c)) / (max - min));
      return best(candidates, (c) => [w.prefix * cachedFraction(c) + w.queue * queueScore(c) + w.kvUsage * (1 - (c.kvUsage ?? 0))], random);
    },
  };
}
