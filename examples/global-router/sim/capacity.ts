// What "100 % load" means: the request rate the cluster sustains when every rank is saturated and
// every reusable prefix is reused (one infinite cache shared by all: the trace's own reuse). Real
// routers reuse less, so they saturate below 100 %; 100 % is the same for every policy. A trace run
// computes it on its own window's records, from cold caches as the run starts (Workload.run).
import { chainHash, ROOT_HASH } from './engine/block-hash';
import type { EngineCalibration } from './engine/calibration';
import { saturatedRequestMs } from './engine/step-time';
import type { TraceRecord } from './trace';

/** Requests per second the cluster's `ranks` sustain on these records at their ideal prefix reuse. */
export function traceCapacityPerS(records: readonly TraceRecord[], blockTokens: number, cal: EngineCalibration, ranks: number): number {
  const seen = new Set<number>();
  let ms = 0;
  for (const r of records) {
    let reused = 0;
    while (reused < r.hashIds.length && seen.has(r.hashIds[reused])) reused++;
    for (const id of r.hashIds) seen.add(id);
    ms += saturatedRequestMs(cal, r.inputLength, Math.min(reused * blockTokens, r.inputLength - 1), r.outputLength);
  }
  return (ranks * 1000 * records.length) / ms;
}

/** The same for explicit token prompts, prefixes compared in blocks of `blockSize`. */
export function tokensCapacityPerS(prompts: readonly { tokens: Uint32Array; outputTokens: number }[], blockSize: number, cal: EngineCalibration, ranks: number): number {
  const seen = new Set<number>();
  let ms = 0;
  for (const p of prompts) {
    let reused = 0;
    let hash = ROOT_HASH;
    let counting = true;
    for (let i = 0; (i + 1) * blockSize <= p.tokens.length; i++) {
      hash = chainHash(hash, p.tokens, i * blockSize, (i + 1) * blockSize);
      if (counting && seen.has(hash)) reused++;
      else counting = false;
      seen.add(hash);
    }
    ms += saturatedRequestMs(cal, p.tokens.length, Math.min(reused * blockSize, p.tokens.length - 1), p.outputTokens);
  }
  return (ranks * 1000 * prompts.length) / ms;
}
