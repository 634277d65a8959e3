// The simulation's report: a Markdown table and an SVG plot of the same rows.
import { barChart } from './svg';
import type { ScenarioResult } from './scenario';

const pct = (x: number) => (Number.isFinite(x) ? `${(100 * x).toFixed(1)} %` : '-');
const num = (x: number, digits = 0) => (Number.isFinite(x) ? x.toFixed(digits) : '-');

export function scenarioLabel(r: ScenarioResult): string {
  return `${r.policy}, WAN ${r.wanDelayMs} ms${r.down ? `, ${r.down.dc} relay down` : ''}`;
}

export function markdownTable(results: readonly ScenarioResult[]): string {
  const header =
    '| Scenario | Prefix-hit rate | Router estimate | Balance (max/mean) | Decision p50 / p99 | Sim TTFT p50 / p99 | Requests per DC | Loop behind p99 |\n' +
    '| --- | ---: | ---: | ---: | ---: | ---: | --- | ---: |\n';
  const rows = results.map((r) => {
    const perDc = Object.entries(r.perDc).map(([dc, n]) => `${dc} ${n}`).join(', ');
    const rejected = r.rejected > 0 ? `; ${r.rejected} rejected` : '';
    return `| ${scenarioLabel(r)} | ${pct(r.hitRate)} | ${pct(r.estimatedHitRate)} | ${num(r.balance, 2)} | ${num(r.decisionUs.p50)} / ${num(r.decisionUs.p99)} µs | ${num(r.ttftMs.p50)} / ${num(r.ttftMs.p99)} ms | ${perDc}${rejected} | ${num(r.lateMsP99)} ms |`;
  });
  return header + rows.join('\n') + '\n';
}

/** The relay-down rows in words: when the relay stopped, when the router noticed, what went there after. */
export function downNotes(results: readonly ScenarioResult[]): string {
  return results
    .filter((r) => r.down)
    .map((r) => {
      const d = r.down!;
      const seen = d.invalidatedAtRequest === null ? 'never saw its replica invalidated' : `saw its replica invalidated at request ${d.invalidatedAtRequest}`;
      return (
        `- ${scenarioLabel(r)}: the relay stopped before request ${d.downAtRequest}; the router ${seen}; ` +
        `${d.routedAfterDown} request(s) went to ${d.dc} after the stop, ${d.routedAfterInvalidation} after the invalidation; ` +
        `hit rate after the stop ${pct(d.hitRateAfterDown)}.`
      );
    })
    .join('\n');
}

export function svgPlot(results: readonly ScenarioResult[], subtitle: string): string {
  return barChart(
    'KV-aware global routing over three DC relays',
    results.map(scenarioLabel),
    [
      { title: 'Prefix-hit rate (cached / prompt tokens)', max: 1, rows: results.map((r) => [{ value: r.hitRate, text: pct(r.hitRate) }]) },
      {
        title: 'Load balance, max/mean requests per DC',
        rows: results.map((r) => [{ value: r.balance, text: num(r.balance, 2), color: '#d08a3a' }]),
      },
      {
        title: 'Decision latency p50 / p99 (µs, log scale)',
        log: true,
        rows: results.map((r) => [
          { value: r.decisionUs.p50, text: `p50 ${num(r.decisionUs.p50)}`, color: '#5a9a5a' },
          { value: r.decisionUs.p99, text: `p99 ${num(r.decisionUs.p99)}`, color: '#9ac09a' },
        ]),
      },
    ],
    subtitle,
  );
}
