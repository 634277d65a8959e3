// The load sweep: every policy at every offered load on every seed (a seed picks the trace window and
// the policies' coins), each run on fresh DCs; then per (policy, load) the mean and 95 % confidence
// interval over the seeds. Results are appended as they come, so a long sweep can be watched.
import type { PolicyName } from '../router';
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

export async function sweep(workload: Workload, spec: SweepSpec, onRun: (r: RunResult) => void): Promise<RunResult[]> {
  const results: RunResult[] = [];
  for (const load of spec.loads) {
    for (const seed of spec.seeds) {
      for (const policy of spec.policies) {
        const { result } = await runOnce(workload, { policy, load, seed });
        results.push(result);
        onRun(result);
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

export interface Verdict {
  load: number;
  /** The best baseline by mean goodput, and ours. */
  bestBaseline: PolicyName;
  goodput: { ours: MeanCi; baseline: MeanCi };
  /** Ours above the baseline with the two 95 % intervals apart. */
  goodputBeyondCi: boolean;
  /** Ours minus the best baseline, seed by seed (both saw the same windows): mean and 95 % interval. */
  pairedGain: MeanCi;
  /** The paired interval excludes zero (ours better on these windows beyond chance). */
  pairedBeyondCi: boolean;
  /** Our median TTFT against the lowest of the baselines' (means over seeds). */
  ttftP50: { ours: number; bestBaseline: number };
  ttftP50NotWorse: boolean;
}

/** Per load: does `ours` have the best goodput beyond the CIs, and a median TTFT no worse than any baseline's? */
export function verdicts(aggregates: readonly Aggregate[], ours: PolicyName, runs: readonly RunResult[]): Verdict[] {
  const loads = [...new Set(aggregates.map((a) => a.load))].sort((a, b) => a - b);
  return loads.flatMap((load) => {
    const at = aggregates.filter((a) => a.load === load);
    const mine = at.find((a) => a.policy === ours);
    const others = at.filter((a) => a.policy !== ours);
    if (!mine || others.length === 0) return [];
    const best = others.reduce((a, b) => (b.metrics.goodputPerS.mean > a.metrics.goodputPerS.mean ? b : a));
    const o = mine.metrics.goodputPerS;
    const b = best.metrics.goodputPerS;
    const lowestTtft = Math.min(...others.map((a) => a.metrics.ttftP50Ms.mean));
    const goodputOf = (policy: PolicyName, seed: number) => runs.find((r) => r.load === load && r.policy === policy && r.seed === seed)?.summary.goodputPerS;
    const seeds = [...new Set(runs.filter((r) => r.load === load).map((r) => r.seed))];
    const gains = seeds.flatMap((seed) => {
      const [a, b] = [goodputOf(ours, seed), goodputOf(best.policy, seed)];
      return a === undefined || b === undefined ? [] : [a - b];
    });
    const pairedGain = meanCi(gains);
    return [
      {
        load,
        bestBaseline: best.policy,
        goodput: { ours: o, baseline: b },
        goodputBeyondCi: o.mean - o.ci95 > b.mean + b.ci95,
        pairedGain,
        pairedBeyondCi: pairedGain.mean - pairedGain.ci95 > 0,
        ttftP50: { ours: mine.metrics.ttftP50Ms.mean, bestBaseline: lowestTtft },
        ttftP50NotWorse: mine.metrics.ttftP50Ms.mean <= lowestTtft,
      },
    ];
  });
}
