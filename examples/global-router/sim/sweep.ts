// The load sweep: every policy at every offered load on every seed (a seed picks the trace window and
// the policies' coins), each run on fresh DCs; then per (policy, load) the mean and 95 % confidence
// interval over the seeds, and ours against each baseline paired by window (every policy replays
// the same windows, so the window-to-window spread, larger than the policies' differences, cancels
// out). Results are appended as they come, so a long sweep can be watched; partial sweeps (pieces of
// loads or seeds run apart) merge into one.
import type { PolicyName } from '../router';
import type { RequestRecord } from './driver';
import { runOnce, type RunResult, type Workload } from './experiment';
import type { RunSummary } from './metrics';
import { meanCi, type MeanCi } from './stats';

export interface SweepSpec {
  policies: readonly PolicyName[];
  loads: readonly number[];
  seeds: readonly number[];
}

/** The metrics aggregated over seeds. */
export const METRICS = {
  goodputPerS: (s: RunSummary) => s.goodputPerS,
  sloAttainment: (s: RunSummary) => s.sloAttainment,
  hitRate: (s: RunSummary) => s.hitRate,
  ttftP50Ms: (s: RunSummary) => s.ttftMs.p50,
  ttftP99Ms: (s: RunSummary) => s.ttftMs.p99,
  balance: (s: RunSummary) => s.balance,
} as const;
export type MetricName = keyof typeof METRICS;

export interface Aggregate {
  policy: PolicyName;
  load: number;
  metrics: Record<MetricName, MeanCi>;
}

/** Each run's result as it comes, with its per-request records (for diagnostics: where requests went, when they met their SLO). */
export async function sweep(workload: Workload, spec: SweepSpec, onRun: (r: RunResult, records: readonly RequestRecord[]) => void): Promise<RunResult[]> {
  const results: RunResult[] = [];
  for (const load of spec.loads) {
    for (const seed of spec.seeds) {
      for (const policy of spec.policies) {
        const { result, records } = await runOnce(workload, { policy, load, seed });
        results.push(result);
        onRun(result, records);
      }
    }
  }
  return results;
}

export function aggregate(results: readonly RunResult[]): Aggregate[] {
  const groups = new Map<string, RunResult[]>();
  for (const r of results) {
    const key = `${r.policy}@${r.load}`;
    groups.set(key, [...(groups.get(key) ?? []), r]);
  }
  return [...groups.values()].map((rs) => ({
    policy: rs[0].policy,
    load: rs[0].load,
    metrics: Object.fromEntries(Object.entries(METRICS).map(([name, pick]) => [name, meanCi(rs.map((r) => pick(r.summary)))])) as Record<MetricName, MeanCi>,
  }));
}

/** Ours minus one baseline, window by window (both replayed the same windows): mean and 95 % interval of the differences. */
export interface Paired {
  baseline: PolicyName;
  /** Goodput, req/s: above zero when ours serves more requests within their SLO. */
  goodput: MeanCi;
  /** Median TTFT, ms: below zero when ours is faster. */
  ttftP50Ms: MeanCi;
}

export interface Verdict {
  load: number;
  /** Windows replayed by ours and by every baseline at this load (the pairs' n). */
  windows: number;
  /** Ours against every baseline, paired by window. */
  paired: Paired[];
  /** The best baseline by mean goodput, and the one with the lowest mean median TTFT. */
  bestBaseline: PolicyName;
  fastestBaseline: PolicyName;
  goodput: { ours: MeanCi; baseline: MeanCi };
  /** Every paired goodput interval lies above zero: ours is the best, beyond the windows' chance. */
  goodputBeyondCi: boolean;
  /** Our mean median TTFT against the lowest baseline's. */
  ttftP50: { ours: number; bestBaseline: number };
  /** The paired median-TTFT difference against the fastest baseline is ≤ 0 on average. */
  ttftP50NotWorse: boolean;
  /** … and its interval lies below zero (ours faster beyond chance); or above zero (slower beyond chance). */
  ttftP50BetterBeyondCi: boolean;
  ttftP50WorseBeyondCi: boolean;
}

const above = (m: MeanCi) => m.mean - m.ci95 > 0;
const below = (m: MeanCi) => m.mean + m.ci95 < 0;

/** Paired differences ours − baseline over the windows (seeds) both ran at `load`. */
export function paired(runs: readonly RunResult[], ours: PolicyName, baseline: PolicyName, load: number): Paired & { seeds: number[] } {
  const at = (policy: PolicyName) => new Map(runs.filter((r) => r.load === load && r.policy === policy).map((r) => [r.seed, r.summary]));
  const [mine, theirs] = [at(ours), at(baseline)];
  const seeds = [...mine.keys()].filter((s) => theirs.has(s)).sort((a, b) => a - b);
  const diff = (pick: (s: RunSummary) => number) => meanCi(seeds.map((s) => pick(mine.get(s)!) - pick(theirs.get(s)!)));
  return { baseline, goodput: diff(METRICS.goodputPerS), ttftP50Ms: diff(METRICS.ttftP50Ms), seeds };
}

/** Per load: is `ours` the best by goodput beyond the paired intervals against every baseline, and is its median TTFT no worse than the fastest baseline's? */
export function verdicts(aggregates: readonly Aggregate[], ours: PolicyName, runs: readonly RunResult[]): Verdict[] {
  const loads = [...new Set(aggregates.map((a) => a.load))].sort((a, b) => a - b);
  return loads.flatMap((load) => {
    const at = aggregates.filter((a) => a.load === load);
    const mine = at.find((a) => a.policy === ours);
    const others = at.filter((a) => a.policy !== ours);
    if (!mine || others.length === 0) return [];
    const best = others.reduce((a, b) => (b.metrics.goodputPerS.mean > a.metrics.goodputPerS.mean ? b : a));
    const fastest = others.reduce((a, b) => (b.metrics.ttftP50Ms.mean < a.metrics.ttftP50Ms.mean ? b : a));
    const pairs = others.map((o) => paired(runs, ours, o.policy, load));
    const vsFastest = pairs.find((p) => p.baseline === fastest.policy)!;
    return [
      {
        load,
        windows: Math.min(...pairs.map((p) => p.seeds.length)),
        paired: pairs.map(({ seeds: _, ...p }) => p),
        bestBaseline: best.policy,
        fastestBaseline: fastest.policy,
        goodput: { ours: mine.metrics.goodputPerS, baseline: best.metrics.goodputPerS },
        goodputBeyondCi: pairs.every((p) => above(p.goodput)),
        ttftP50: { ours: mine.metrics.ttftP50Ms.mean, bestBaseline: fastest.metrics.ttftP50Ms.mean },
        ttftP50NotWorse: vsFastest.ttftP50Ms.mean <= 0,
        ttftP50BetterBeyondCi: below(vsFastest.ttftP50Ms),
        ttftP50WorseBeyondCi: above(vsFastest.ttftP50Ms),
      },
    ];
  });
}

/**
 * Runs of several partial sweeps (e.g. one load or a few seeds each) as one: they must have been
 * run on the same setup, and no run may appear twice (the same policy, load, seed, view and routers).
 */
export function mergeSweeps(parts: readonly { file: string; setup: string; runs: readonly RunResult[] }[]): RunResult[] {
  const runs: RunResult[] = [];
  const seen = new Map<string, string>();
  for (const part of parts) {
    if (part.setup !== parts[0].setup) throw new RangeError(`${part.file} was run on another setup than ${parts[0].file}:\n  ${part.setup}\n  ${parts[0].setup}`);
    for (const r of part.runs) {
      const key = `${r.policy} at ${r.load} seed ${r.seed} (${r.view}, ${r.routers} router(s)${r.sloToRouter ? ', told the SLO' : ''})`;
      const first = seen.get(key);
      if (first !== undefined) throw new RangeError(`${key} is in both ${first} and ${part.file}`);
      seen.set(key, part.file);
      runs.push(r);
    }
  }
  return runs;
}
