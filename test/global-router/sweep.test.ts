// The sweep's statistics: ours against every baseline paired by window, the verdict per load, and
// partial sweeps merged into one.
import type { PolicyName } from '../../examples/global-router/router';
import type { RunResult } from '../../examples/global-router/sim/experiment';
import type { RunSummary } from '../../examples/global-router/sim/metrics';
import { aggregate, mergeSweeps, paired, verdicts } from '../../examples/global-router/sim/sweep';

function run(policy: PolicyName, seed: number, goodputPerS: number, p50: number, load = 0.5): RunResult {
  const summary = { goodputPerS, ttftMs: { p50, p90: p50, p99: p50, mean: p50 }, sloAttainment: 0.5, hitRate: 0.1, balance: 1 } as RunSummary;
  return { policy, load, seed, view: 'oracle', routers: 1, speed: null, capacityPerS: 1, offeredPerS: 1, summary, wallSeconds: 1 };
}

describe('paired comparison', () => {
  // The windows differ far more than the policies: unpaired intervals overlap, the paired one does not.
  const windows = [1, 5, 2, 8, 3];
  const runs = windows.flatMap((g, i) => [run('kv-aware', i + 1, g + 0.2, 1000 * g - 50), run('llm-d', i + 1, g, 1000 * g), run('random', i + 1, g + (i % 2 ? -0.05 : 0.25), 1000 * g - 300)]);

  it('takes the differences window by window', () => {
    const p = paired(runs, 'kv-aware', 'llm-d', 0.5);
    expect(p.seeds).toEqual([1, 2, 3, 4, 5]);
    expect(p.goodput.mean).toBeCloseTo(0.2, 9);
    expect(p.goodput.ci95).toBeCloseTo(0, 9);
    expect(p.ttftP50Ms.mean).toBeCloseTo(-50, 9);
  });

  it('pairs only the windows both ran', () => {
    const p = paired(runs.filter((r) => !(r.policy === 'llm-d' && r.seed === 2)), 'kv-aware', 'llm-d', 0.5);
    expect(p.seeds).toEqual([1, 3, 4, 5]);
  });

  it('calls ours best only when every paired interval is above zero, and says how its median TTFT compares with the fastest baseline', () => {
    const [v] = verdicts(aggregate(runs), 'kv-aware', runs);
    expect(v.windows).toBe(5);
    expect(v.bestBaseline).toBe('random');
    // The unpaired intervals overlap widely…
    expect(v.goodput.ours.mean - v.goodput.ours.ci95).toBeLessThan(v.goodput.baseline.mean + v.goodput.baseline.ci95);
    // …ours gains 0.2 on llm-d in every window (beyond chance), but on random −0.05 or +0.25 by window: not beyond chance.
    expect(v.paired.map((p) => p.baseline)).toEqual(['llm-d', 'random']);
    expect(v.goodputBeyondCi).toBe(false);
    expect(v.fastestBaseline).toBe('random');
    expect(v.ttftP50NotWorse).toBe(false);
    expect(v.ttftP50WorseBeyondCi).toBe(true);

    const better = runs.filter((r) => r.policy !== 'random');
    const [w] = verdicts(aggregate(better), 'kv-aware', better);
    expect(w).toMatchObject({ bestBaseline: 'llm-d', goodputBeyondCi: true, fastestBaseline: 'llm-d', ttftP50NotWorse: true, ttftP50BetterBeyondCi: true });
  });
});

describe('merging partial sweeps', () => {
  const a = { file: 'a.json', setup: 'S', runs: [run('kv-aware', 1, 1, 1), run('random', 1, 1, 1)] };
  const b = { file: 'b.json', setup: 'S', runs: [run('kv-aware', 2, 1, 1), run('kv-aware', 1, 1, 1, 0.9)] };

  it('joins the runs of pieces run on the same setup', () => {
    expect(mergeSweeps([a, b]).map((r) => `${r.policy}@${r.load}/${r.seed}`)).toEqual(['kv-aware@0.5/1', 'random@0.5/1', 'kv-aware@0.5/2', 'kv-aware@0.9/1']);
  });

  it('refuses a run present twice, or a piece of another setup', () => {
    expect(() => mergeSweeps([a, b, { ...a, file: 'c.json' }])).toThrow('kv-aware at 0.5 seed 1 (oracle, 1 router(s)) is in both a.json and c.json');
    expect(() => mergeSweeps([a, { ...b, setup: 'T' }])).toThrow(/b\.json was run on another setup than a\.json/);
  });
});
