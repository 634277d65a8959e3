// Per-source families are rendered by SourceSeriesText, not prom-client: the text must be prom-client's
// to the byte (prom-client's own rendering of the same registered metrics is the reference), and a
// source's lines are made again only when one of its values changed.
import { Registry } from 'prom-client';
import { createRelayMetrics, type ProducerMetrics } from '../../src/metrics/registry';
import { ScrapeTurns } from '../../src/metrics/scrape-turns';
import { SourceSeriesText } from '../../src/metrics/source-series';
import type { SourceStats } from '../../src/ingest/types';

function stats(workerId: bigint, dpRank: number, n: number): SourceStats {
  return {
    source: { workerId, dpRank }, events: n, blocks: n * 3, malformed: n % 2, rejectedRanks: 0, overflows: 0, outOfOrder: 1e21, refusedPeers: 0,
    gaps: 0.5, replays: 2 ** 53, resets: 0, ignored: 7, droppedBlockSize: 0, connections: n % 3, lastSequence: null, mismatchedBlockSize: 0,
  };
}

function producerWith(ingest: SourceStats[]): ProducerMetrics {
  return {
    catalogPoolCount: 1, fencedGenerationsTotal: 0, topology: { ready: 1, unavailable: 0, unknown: 0 }, degradedLoadCoveragePoolCount: 0,
    ingest, ingestThreadRestarts: 0, pools: [], keptPageBytes: 0,
  };
}

/** prom-client's rendering of every registered metric (its Registry.metrics(), which the relay's registry overrides). */
const promClientText = (registry: Registry): Promise<string> => Registry.prototype.metrics.call(registry);

test("the relay's scrape text is prom-client's rendering of the same metrics, byte for byte, as the sources change", async () => {
  const ingest = [stats(18446744073709551615n, 3, 5), ...Array.from({ length: 300 }, (_, i) => stats(BigInt(1000 + i), i % 4, i))];
  const ages = ingest.map((s, i) => ({ worker: s.source.workerId.toString(), dpRank: s.source.dpRank, seconds: i === 0 ? NaN : i / 7 }));
  const registry = createRelayMetrics({
    producer: () => producerWith(ingest),
    diagnostics: () => ({ active: { source_not_connected: 1, block_size_mismatch: 0, pool_empty_while_publishing: 0 }, lastEventAge: ages }),
  });
  const check = async (): Promise<string> => {
    const [ours, theirs] = await Promise.all([registry.metrics(), promClientText(registry)]);
    expect(ours).toBe(theirs);
    await new Promise((resolve) => setImmediate(resolve));
    return ours;
  };
  const first = await check();
  expect(first).toContain('kv_dc_relay_ingest_events_total{worker="18446744073709551615",dp_rank="3"} 5');
  expect(first).toContain('kv_dc_relay_ingest_out_of_order_total{worker="1000",dp_rank="0"} 1e+21');
  expect(first).toContain('kv_dc_relay_ingest_last_event_age_seconds{worker="18446744073709551615",dp_rank="3"} Nan');
  // A record changed in place (same object), one replaced, one gone, one new.
  ingest[1].events += 1;
  ingest[2] = { ...ingest[2], gaps: 4 };
  ingest.splice(3, 1);
  ingest.push(stats(99n, 0, 1));
  ages.splice(3, 1);
  const second = await check();
  expect(second).toContain('kv_dc_relay_ingest_events_total{worker="1000",dp_rank="0"} 1');
  expect(second).toContain('kv_dc_relay_ingest_gaps_total{worker="1001",dp_rank="1"} 4');
  expect(second).not.toContain('worker="1002"');
  expect(second).toContain('kv_dc_relay_ingest_events_total{worker="99",dp_rank="0"} 1');
});

test('a record handed out again with the same values is not rendered again; a changed one is', async () => {
  const rendered: number[] = [];
  const series = new SourceSeriesText<{ id: number; n: number }>(
    [{ name: 'a_total', help: 'A', type: 'counter', value: (r) => r.n }, { name: 'b', help: 'B\\ with a\nnewline', type: 'gauge', value: (r) => r.n * 2 }],
    (r) => (rendered.push(r.id), `id="${r.id}"`),
  );
  const records = [{ id: 1, n: 1 }, { id: 2, n: 2 }, { id: 3, n: 3 }];
  expect(await series.render(records)).toEqual([
    '# HELP a_total A\n# TYPE a_total counter\na_total{id="1"} 1\na_total{id="2"} 2\na_total{id="3"} 3',
    '# HELP b B\\\\ with a\\nnewline\n# TYPE b gauge\nb{id="1"} 2\nb{id="2"} 4\nb{id="3"} 6',
  ]);
  expect(rendered).toEqual([1, 2, 3]);
  records[1].n = 5;
  expect((await series.render(records))[0]).toBe('# HELP a_total A\n# TYPE a_total counter\na_total{id="1"} 1\na_total{id="2"} 5\na_total{id="3"} 3');
  expect(rendered).toEqual([1, 2, 3, 2]);
  // A record left out is forgotten: handed out again, it is rendered again.
  await series.render([records[0]]);
  await series.render(records);
  expect(rendered).toEqual([1, 2, 3, 2, 2, 3]);
});

test('with a spent slice the render yields every few records and between families; the text is the same', async () => {
  const families = [{ name: 'a_total', help: 'A', type: 'counter' as const, value: (r: { id: number }) => r.id }, { name: 'b', help: 'B', type: 'gauge' as const, value: (r: { id: number }) => -r.id }];
  const records = Array.from({ length: 1000 }, (_, id) => ({ id }));
  const whole = await new SourceSeriesText(families, (r) => `id="${r.id}"`).render(records);
  let turns = 0;
  let on = true;
  const count = (): void => void (on && (turns += 1, setImmediate(count)));
  setImmediate(count);
  const sliced = await new SourceSeriesText(families, (r) => `id="${r.id}"`).render(records, new ScrapeTurns(0));
  on = false;
  expect(sliced).toEqual(whole);
  expect(turns).toBeGreaterThanOrEqual(Math.floor(records.length / 32) + families.length - 1);
});
