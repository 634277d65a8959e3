// How long one engine step (one forward pass of a continuous batch) takes: the measured
// non-attention time for the batch's token count, plus prefill attention by its FLOPs and decode
// attention by the KV bytes it reads. Pure.
import type { EngineCalibration } from './calibration';

export interface StepWork {
  /** Tokens computed in the step: prefill chunk tokens plus one per decoding sequence. */
  tokens: number;
  /** Σ over prefill chunks of the causal (query, key) pairs: c × p + c × (c + 1) / 2 for c tokens after p. */
  prefillPairs: number;
  /** Σ over decoding sequences of their context length (tokens whose KV the step reads). */
  decodeContextTokens: number;
}

/** Piecewise-linear interpolation through the measured points, extrapolated from the last two. */
export function linearMs(cal: EngineCalibration, tokens: number): number {
  const pts = cal.linearMs;
  if (tokens <= pts[0][0]) return pts[0][1];
  let i = 1;
  while (i < pts.length - 1 && pts[i][0] < tokens) i++;
  const [x0, y0] = pts[i - 1];
  const [x1, y1] = pts[i];
  return y0 + ((tokens - x0) * (y1 - y0)) / (x1 - x0);
}

/** Causal attention pairs of `chunk` new tokens after `prefix` tokens already in the KV cache. */
export function prefillPairs(prefix: number, chunk: number): number {
  return chunk * prefix + (chunk * (chunk + 1)) / 2;
}

export function stepMs(cal: EngineCalibration, work: StepWork): number {
  if (work.tokens <= 0) return 0;
  const attention = (work.prefillPairs * cal.attentionFlopsPerPair) / cal.attentionFlopsPerS;
  const decode = (work.decodeContextTokens * cal.kvBytesPerToken) / cal.memoryBytesPerS;
  return linearMs(cal, work.tokens) + 1000 * (attention + decode);
}

/** A prompt's prefill on an idle rank, chunk by chunk at the step budget (the TTFT it gets with no load and no cache). */
export function prefillAloneMs(cal: EngineCalibration, promptTokens: number, budget: number): number {
  let ms = 0;
  for (let done = 0; done < promptTokens; done += budget) {
    const chunk = Math.min(budget, promptTokens - done);
    ms += stepMs(cal, { tokens: chunk, prefillPairs: prefillPairs(done, chunk), decodeContextTokens: 0 });
  }
  return ms;
}

/**
 * GPU time one request costs a saturated rank (perfect batching): its uncached prompt tokens and
 * output tokens at the large-batch per-token cost, its prefill attention, and its decode steps'
 * KV reads. The capacity a load fraction is relative to.
 */
export function saturatedRequestMs(cal: EngineCalibration, promptTokens: number, cachedTokens: number, outputTokens: number): number {
  const [x0, y0] = cal.linearMs[cal.linearMs.length - 2];
  const [x1, y1] = cal.linearMs[cal.linearMs.length - 1];
  const perToken = (y1 - y0) / (x1 - x0);
  const uncached = promptTokens - cachedTokens;
  const attention = (prefillPairs(cachedTokens, uncached) * cal.attentionFlopsPerPair) / cal.attentionFlopsPerS;
  const decodeRead = (outputTokens * (promptTokens + outputTokens / 2) * cal.kvBytesPerToken) / cal.memoryBytesPerS;
  return perToken * (uncached + outputTokens) + 1000 * (attention + decodeRead);
}
