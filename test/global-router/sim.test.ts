// A short run of the multi-DC simulation (three DCs, each a relay over simulated engines, a WAN
// delay proxy, the shared workload on a fixed seed): KV-aware routing wins on hit rate, and a DC
// whose relay dies gets no traffic once the router has seen its replica invalidated.
import { runScenario, type ScenarioResult } from '../../examples/global-router/sim/scenario';
import { markdownTable, svgPlot } from '../../examples/global-router/sim/report';

const RUN = { requests: 200, intervalMs: 20, wanDelayMs: 1 };
const SEED = 7;
// Smaller caches than the full run's, so a 200-request run already evicts: that is where routing matters.
const CLUSTER = { capacityBlocks: 1024 };
// About 15 s per run on a quiet 2-core machine; generous for a shared one.
const RUN_TIMEOUT_MS = 240_000;

describe('multi-DC simulation', () => {
  const results: ScenarioResult[] = [];

  it('KV-aware routing beats random on prefix-hit rate by a clear margin', async () => {
    const kv = await runScenario({ name: 'kv', policy: 'kv-aware', run: RUN, cluster: CLUSTER, workload: { seed: SEED } });
    const random = await runScenario({ name: 'random', policy: 'random', run: RUN, cluster: CLUSTER, workload: { seed: SEED } });
    results.push(kv, random);
    expect(kv.requests).toBe(RUN.requests * 0.8); // every measured request was routed
    expect(random.requests).toBe(RUN.requests * 0.8);
    expect(kv.hitRate - random.hitRate).toBeGreaterThan(0.1);
    // No DC starves or takes everything.
    expect(kv.balance).toBeLessThan(1.6);
    expect(random.estimatedHitRate).toBe(0); // random never looks at the cache
    expect(kv.estimatedHitRate).toBeGreaterThan(0);
  }, RUN_TIMEOUT_MS);

  it('sends nothing to a DC after its relay died and its replica was invalidated', async () => {
    const down = await runScenario({ name: 'down', policy: 'kv-aware', run: { ...RUN, relayDownAt: 0.5 }, cluster: CLUSTER, workload: { seed: SEED } });
    results.push(down);
    expect(down.down).toBeDefined();
    const d = down.down!;
    expect(d.downAtRequest).toBe(100);
    expect(d.invalidatedAtRequest).not.toBeNull();
    expect(d.routedAfterInvalidation).toBe(0);
    expect(down.rejected).toBe(0); // the other two DCs took everything
    const others = Object.entries(down.perDc).filter(([dc]) => dc !== d.dc);
    expect(others.every(([, n]) => n > 0)).toBe(true);
  }, RUN_TIMEOUT_MS);

  it('reports the runs as a table and an SVG plot', () => {
    const table = markdownTable(results);
    expect(table.split('\n').filter((l) => l.startsWith('| kv-aware') || l.startsWith('| random'))).toHaveLength(3);
    expect(table).toContain('relay down');
    const svg = svgPlot(results, 'test');
    expect(svg.startsWith('<svg')).toBe(true);
    expect(svg.match(/<rect /g)!.length).toBeGreaterThanOrEqual(1 + 3 * 4); // background + 4 bars per row
  });
});
