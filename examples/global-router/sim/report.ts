// The sweep's report: one Markdown table (per load, per policy, mean ± 95 % CI over seeds), the
// verdict per load, and an SVG of goodput, median TTFT and hit rate against offered load.
import type { PolicyName } from '../router';
import type { MeanCi } from './stats';
import type { Aggregate, Verdict } from './sweep';
import { lineChart, type LinePanel, type Series } from './svg';

const COLORS: Record<string, string> = {
  'kv-aware': '#c0392b',
  'dynamo-cost': '#2e86c1',
  'llm-d': '#8e44ad',
  chwbl: '#16a085',
  'least-load': '#d68910',
  'round-robin': '#7f8c8d',
  random: '#34495e',
};

const ci = (m: MeanCi, digits: number, scale = 1) =>
  Number.isFinite(m.mean) ? `${(m.mean * scale).toFixed(digits)}${Number.isFinite(m.ci95) ? ` ± ${(m.ci95 * scale).toFixed(digits)}` : ''}` : '-';

export function sweepTable(aggregates: readonly Aggregate[], ours: PolicyName): string {
  const rows = [...aggregates].sort((a, b) => a.load - b.load || b.metrics.goodputPerS.mean - a.metrics.goodputPerS.mean);
  const header =
    '| Load | Policy | Goodput (req/s at SLO) | SLO attainment | Prefix-hit rate | TTFT p50 (ms) | TTFT p99 (ms) | Balance |\n' +
    '| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n';
  return (
    header +
    rows
      .map((a) => {
        const m = a.metrics;
        const name = a.policy === ours ? `**${a.policy}**` : a.policy;
        return `| ${Math.round(a.load * 100)} % | ${name} | ${ci(m.goodputPerS, 2)} | ${ci(m.sloAttainment, 1, 100)} % | ${ci(m.hitRate, 1, 100)} % | ${ci(m.ttftP50Ms, 0)} | ${ci(m.ttftP99Ms, 0)} | ${ci(m.balance, 2)} |`;
      })
      .join('\n') +
    '\n'
  );
}

export function verdictTable(verdicts: readonly Verdict[]): string {
  const header =
    '| Load | Best baseline (goodput) | Goodput: ours / baseline (req/s) | Intervals apart | Paired gain per window (req/s) | Paired interval > 0 | TTFT p50: ours / lowest baseline | Not worse |\n' +
    '| ---: | --- | ---: | :---: | ---: | :---: | ---: | :---: |\n';
  return (
    header +
    verdicts
      .map(
        (v) =>
          `| ${Math.round(v.load * 100)} % | ${v.bestBaseline} | ${ci(v.goodput.ours, 2)} / ${ci(v.goodput.baseline, 2)} | ${v.goodputBeyondCi ? 'yes' : 'no'} | ${ci(v.pairedGain, 2)} | ${v.pairedBeyondCi ? 'yes' : 'no'} | ${v.ttftP50.ours.toFixed(0)} / ${v.ttftP50.bestBaseline.toFixed(0)} ms | ${v.ttftP50NotWorse ? 'yes' : 'no'} |`,
      )
      .join('\n') +
    '\n'
  );
}

export function sweepSvg(aggregates: readonly Aggregate[], ours: PolicyName, subtitle: string): string {
  const policies = [...new Set(aggregates.map((a) => a.policy))];
  const series = (pick: (a: Aggregate) => MeanCi, scale = 1): Series[] =>
    policies.map((p) => ({
      name: p,
      color: COLORS[p] ?? '#000',
      bold: p === ours,
      points: aggregates.filter((a) => a.policy === p).map((a) => ({ x: a.load, y: pick(a).mean * scale, ci: pick(a).ci95 * scale })),
    }));
  const panels: LinePanel[] = [
    { title: 'Goodput at the TTFT SLO (req/s)', format: (y) => y.toFixed(1), series: series((a) => a.metrics.goodputPerS) },
    { title: 'TTFT p50 (ms, log scale)', log: true, format: (y) => y.toFixed(0), series: series((a) => a.metrics.ttftP50Ms) },
    { title: 'Prefix-hit rate (%)', format: (y) => y.toFixed(0), series: series((a) => a.metrics.hitRate, 100) },
  ];
  return lineChart('Global routing over three DC relays: Mooncake trace load sweep', subtitle, panels, 'offered load (share of ideal-reuse capacity)');
}
