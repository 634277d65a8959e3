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

const signed = (m: MeanCi, digits: number) =>
  Number.isFinite(m.mean) ? `${m.mean >= 0 ? '+' : '−'}${Math.abs(m.mean).toFixed(digits)}${Number.isFinite(m.ci95) ? ` ± ${m.ci95.toFixed(digits)}` : ''}` : '-';
/** A paired difference, bold when its interval excludes zero. */
const diff = (m: MeanCi, digits: number) => (m.mean - m.ci95 > 0 || m.mean + m.ci95 < 0 ? `**${signed(m, digits)}**` : signed(m, digits));

export function verdictTable(verdicts: readonly Verdict[]): string {
  const header =
    '| Load | Windows | Best baseline (goodput) | Goodput: ours / baseline (req/s) | Paired gain (req/s) | Above every baseline beyond the paired intervals | Fastest baseline (TTFT p50) | TTFT p50: ours / baseline (ms) | Paired difference (ms) | Not worse |\n' +
    '| ---: | ---: | --- | ---: | ---: | :---: | --- | ---: | ---: | :---: |\n';
  const ttft = (v: Verdict) => (v.ttftP50BetterBeyondCi ? 'yes, faster beyond the interval' : v.ttftP50NotWorse ? 'yes' : v.ttftP50WorseBeyondCi ? 'no, slower beyond the interval' : 'no (within the interval)');
  return (
    header +
    verdicts
      .map((v) => {
        const best = v.paired.find((p) => p.baseline === v.bestBaseline)!;
        const fastest = v.paired.find((p) => p.baseline === v.fastestBaseline)!;
        return (
          `| ${Math.round(v.load * 100)} % | ${v.windows} | ${v.bestBaseline} | ${ci(v.goodput.ours, 2)} / ${ci(v.goodput.baseline, 2)} | ${diff(best.goodput, 2)} | ${v.goodputBeyondCi ? 'yes' : 'no'} | ` +
          `${v.fastestBaseline} | ${v.ttftP50.ours.toFixed(0)} / ${v.ttftP50.bestBaseline.toFixed(0)} | ${diff(fastest.ttftP50Ms, 0)} | ${ttft(v)} |`
        );
      })
      .join('\n') +
    '\n'
  );
}

/** Ours minus every baseline, paired by window, per load: goodput (req/s) and median TTFT (ms); bold = interval excludes zero. */
export function pairedTables(verdicts: readonly Verdict[], ours: PolicyName): string {
  const baselines = [...new Set(verdicts.flatMap((v) => v.paired.map((p) => p.baseline)))];
  const table = (title: string, cell: (p: Verdict['paired'][number]) => string) =>
    `${title}\n\n| Load | ${baselines.join(' | ')} |\n| ---: | ${baselines.map(() => '---:').join(' | ')} |\n` +
    verdicts.map((v) => `| ${Math.round(v.load * 100)} % | ${baselines.map((b) => { const p = v.paired.find((x) => x.baseline === b); return p ? cell(p) : '-'; }).join(' | ')} |`).join('\n') +
    '\n';
  return (
    table(`Goodput of ${ours} minus each baseline's, same windows (req/s, mean ± 95 % interval of the per-window differences):`, (p) => diff(p.goodput, 2)) +
    '\n' +
    table(`Median TTFT of ${ours} minus each baseline's, same windows (ms; below zero = ${ours} faster):`, (p) => diff(p.ttftP50Ms, 0))
  );
}

export function sweepSvg(aggregates: readonly Aggregate[], ours: PolicyName, subtitle: string, verdicts: readonly Verdict[] = []): string {
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
  if (verdicts.length > 0) {
    const baselines = policies.filter((p) => p !== ours);
    panels.push({
      title: `Goodput, ${ours} minus each (paired, req/s)`,
      signed: true,
      format: (y) => y.toFixed(2),
      series: baselines.map((b) => ({
        name: b,
        color: COLORS[b] ?? '#000',
        points: verdicts.flatMap((v) => v.paired.filter((p) => p.baseline === b).map((p) => ({ x: v.load, y: p.goodput.mean, ci: p.goodput.ci95 }))),
      })),
    });
  }
  return lineChart('Global routing over three DC relays: Mooncake trace load sweep', subtitle, panels, 'offered load (share of ideal-reuse capacity)');
}
