// A FixedHistogram renders exactly as a prom-client Histogram fed the same observations (text and
// JSON, labelled and not, before and after the first observation), through the relay's registry.
import { Histogram, Registry } from 'prom-client';
import { FixedHistogram } from '../../src/metrics/fixed-histogram';
import { ScrapeRegistry } from '../../src/metrics/scrape-registry';
import { DeltaLatencyMetrics } from '../../src/metrics/registry';

const BUCKETS = [0.001, 0.002, 0.005, 0.01, 0.5, 1];
// On a bound, between bounds, below the first, above the last (+Inf only), zero, and a fraction that does not sum exactly.
const VALUES = [0.001, 0.0015, 0.0001, 7, 0, 0.1, 0.2, 0.30000000000000004, 1, 0.005];

function pair(): { ours: ScrapeRegistry; theirs: Registry; fixed: FixedHistogram[]; prom: Histogram[] } {
  const ours = new ScrapeRegistry();
  const theirs = new Registry();
  const fixed = [
    new FixedHistogram({ name: 'h_plain_seconds', help: 'plain', buckets: BUCKETS }),
    new FixedHistogram({ name: 'h_stage_seconds', help: 'by "stage"\\', buckets: BUCKETS, label: { name: 'stage', values: ['a', 'b'] } }),
  ];
  const prom = [
    new Histogram({ name: 'h_plain_seconds', help: 'plain', buckets: BUCKETS, registers: [theirs] }),
    new Histogram({ name: 'h_stage_seconds', help: 'by "stage"\\', buckets: BUCKETS, labelNames: ['stage'], registers: [theirs] }),
  ];
  for (const h of fixed) ours.registerMetric(h.asMetric());
  return { ours, theirs, fixed, prom };
}

async function expectSameRendering(ours: Registry, theirs: Registry): Promise<void> {
  expect(await ours.metrics()).toBe(await theirs.metrics());
  expect(await ours.getMetricsAsJSON()).toEqual(await theirs.getMetricsAsJSON());
}

test('renders as prom-client before any observation: the unlabelled series at zero, no labelled series yet', async () => {
  const { ours, theirs } = pair();
  await expectSameRendering(ours, theirs);
  expect(await ours.metrics()).toContain('h_plain_seconds_count 0');
  expect(await ours.metrics()).not.toContain('h_stage_seconds_count');
});

test('renders as prom-client after the same observations, a labelled series appearing once observed', async () => {
  const { ours, theirs, fixed, prom } = pair();
  const [plain, stage] = fixed;
  const [promPlain, promStage] = prom;
  for (const v of VALUES) {
    plain.series().observe(v);
    promPlain.observe(v);
    stage.series('a').observe(v * 2);
    promStage.observe({ stage: 'a' }, v * 2);
  }
  await expectSameRendering(ours, theirs);
  expect(await ours.metrics()).not.toContain('stage="b"');
  // Series render in the order declared; prom-client's in the order first observed (the same order
  // for the relay's stages, which every delta observes in turn).
  stage.series('b').observe(0.003);
  promStage.labels('b').observe(0.003);
  await expectSameRendering(ours, theirs);
  expect(await ours.metrics()).toContain('h_stage_seconds_bucket{le="0.005",stage="b"} 1');
  expect(await ours.metrics()).toContain(`h_plain_seconds_count ${VALUES.length}`);
});

test('rejects a value that is not a finite number, an undeclared label value, and unordered buckets', () => {
  const { fixed } = pair();
  expect(() => fixed[0].series().observe(Number.NaN)).toThrow(TypeError);
  expect(() => fixed[0].series().observe(Number.POSITIVE_INFINITY)).toThrow(TypeError);
  expect(fixed[0].series().count).toBe(0);
  expect(() => fixed[1].series('c')).toThrow(/no series for label value c/);
  expect(() => fixed[1].series()).toThrow(RangeError);
  expect(() => new FixedHistogram({ name: 'x', help: 'x', buckets: [0.1, 0.1] })).toThrow(/increasing/);
});

test('resetMetrics() zeroes every series', async () => {
  const { ours, fixed } = pair();
  fixed[0].series().observe(0.5);
  fixed[1].series('a').observe(0.5);
  ours.resetMetrics();
  expect(await ours.metrics()).toContain('h_plain_seconds_count 0');
  expect(await ours.metrics()).not.toContain('h_stage_seconds_count');
});

test('DeltaLatencyMetrics: a delta observes the whole and each stage, in seconds', async () => {
  const metrics = new DeltaLatencyMetrics();
  const registry = new ScrapeRegistry();
  registry.registerMetric(metrics.total.asMetric());
  registry.registerMetric(metrics.stages.asMetric());
  metrics.observe({ handoffMs: 1.5, poolMs: 3 });
  metrics.observe({ handoffMs: 0.5, poolMs: 30 });
  const text = await registry.metrics();
  expect(text).toContain('kv_dc_relay_pool_delta_latency_seconds_count 2');
  expect(Number(/^kv_dc_relay_pool_delta_latency_seconds_sum (\S+)$/m.exec(text)![1])).toBeCloseTo(0.035, 12);
  expect(text).toContain('kv_dc_relay_pool_delta_latency_seconds_bucket{le="0.005"} 1');
  expect(text).toContain('kv_dc_relay_pool_delta_stage_seconds_bucket{le="0.001",stage="handoff"} 1');
  expect(Number(/^kv_dc_relay_pool_delta_stage_seconds_sum\{stage="handoff"\} (\S+)$/m.exec(text)![1])).toBeCloseTo(0.002, 12);
  expect(text).toContain('kv_dc_relay_pool_delta_stage_seconds_bucket{le="0.05",stage="pool"} 2');
  expect(text).toContain('kv_dc_relay_pool_delta_stage_seconds_count{stage="pool"} 2');
});
