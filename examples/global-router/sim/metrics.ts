// One run's requests → the numbers routers are judged by: prefix-hit rate measured in the engines,
// TTFT at the router (p50/p90/p99), SLO attainment and goodput at a per-request TTFT SLO, balance.
// Only requests after the warm-up count; a request never served counts as missing its SLO.
import type { RequestRecord } from './driver';
import { imbalance, percentile } from './stats';

export interface RunSummary {
  /** Measured requests (after warm-up). */
  requests: number;
  /** Measured requests that got a first token. */
  served: number;
  /** Measured requests with at least one failed attempt. */
  retried: number;
  /** Prompt tokens the serving ranks already held / prompt tokens of the served requests. */
  hitRate: number;
  /** What the routers believed was cached at the DCs they chose / prompt tokens. */
  estimatedHitRate: number;
  ttftMs: { p50: number; p90: number; p99: number; mean: number };
  /** Per output token after the first, median over requests. */
  tpotMsP50: number;
  /** Fraction of measured requests whose TTFT met their SLO. */
  sloAttainment: number;
  /** Requests meeting their TTFT SLO per second of arrivals. */
  goodputPerS: number;
  /** Measured requests per second of arrivals (the offered rate). */
  offeredPerS: number;
  /** max / mean over DCs of requests per rank. */
  balance: number;
  perDc: Record<string, number>;
  preemptions: number;
  /** How far behind wall-clock pacing routing ran, p99 (host load). */
  lateMsP99: number;
}

export interface SummaryOptions {
  warmup: number;
  /** The request's TTFT SLO, ms. */
  sloMs: (record: RequestRecord) => number;
  /** DC name → ranks, for balance per rank. */
  ranks: Record<string, number>;
}

export function summarize(records: readonly RequestRecord[], options: SummaryOptions): RunSummary {
  const measured = [...records].sort((a, b) => a.arrivalMs - b.arrivalMs).slice(options.warmup);
  const served = measured.filter((r) => r.ttftMs !== null);
  const prompt = served.reduce((n, r) => n + r.inputTokens, 0);
  const ttfts = served.map((r) => r.ttftMs!);
  const perDc: Record<string, number> = Object.fromEntries(Object.keys(options.ranks).map((dc) => [dc, 0]));
  for (const r of served) if (r.dc !== null) perDc[r.dc] = (perDc[r.dc] ?? 0) + 1;
  const met = measured.filter((r) => r.ttftMs !== null && r.ttftMs <= options.sloMs(r)).length;
  const span = measured.length > 1 ? (measured[measured.length - 1].arrivalMs - measured[0].arrivalMs) / 1000 : NaN;
  const tpot = served.filter((r) => r.e2eMs !== null && r.outputTokens > 1).map((r) => (r.e2eMs! - r.ttftMs!) / (r.outputTokens - 1));
  return {
    requests: measured.length,
    served: served.length,
    retried: measured.filter((r) => r.failures > 0).length,
    hitRate: served.reduce((n, r) => n + (r.cachedTokens ?? 0), 0) / prompt,
    estimatedHitRate: served.reduce((n, r) => n + Math.min(r.routedMatchedTokens ?? 0, r.inputTokens), 0) / prompt,
    ttftMs: { p50: percentile(ttfts, 0.5), p90: percentile(ttfts, 0.9), p99: percentile(ttfts, 0.99), mean: ttfts.reduce((a, b) => a + b, 0) / ttfts.length },
    tpotMsP50: percentile(tpot, 0.5),
    sloAttainment: met / measured.length,
    goodputPerS: met / span,
    offeredPerS: measured.length / span,
    balance: imbalance(Object.entries(perDc).map(([dc, n]) => n / (options.ranks[dc] ?? 1))),
    perDc,
    preemptions: measured.reduce((n, r) => n + r.preemptions, 0),
    lateMsP99: percentile(measured.map((r) => r.lateMs), 0.99),
  };
}
