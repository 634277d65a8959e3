// The relay's metric registry samples each provider once per scrape, and afresh on the next one.
import { createRelayMetrics, type ProducerMetrics } from '../../src/metrics/registry';

function producerSample(applied: number): ProducerMetrics {
  return {
    catalogPoolCount: 1,
    fencedGenerationsTotal: 0,
    topology: { ready: 1, unavailable: 0, unknown: 0 },
    degradedLoadCoveragePoolCount: 0,
    ingest: [],
    ingestThreadRestarts: 0,
    pools: [{
      pool: 'p', eventsApplied: applied, eventsDroppedBlockSize: 0, eventErrors: 0, deltasPublished: 0, deltasDropped: 0,
      capacityFailures: 0, parentNotFound: 0, unknownRemovals: 0, mailboxOverflows: 0, publicationSliceMs: 20,
      storesRejectedAtLimit: 0, trackedBlocks: 7, filterResidentBlocks: 7, filterLoad: 0.5, stateBytes: 4096,
    }],
    keptPageBytes: 0,
  };
}

test('one producer sample per scrape, a new one on the next scrape', async () => {
  let samples = 0;
  const registry = createRelayMetrics({ producer: () => producerSample(++samples * 10) });
  const first = await registry.metrics();
  expect(samples).toBe(1);
  expect(first).toContain('kv_dc_relay_pool_events_applied_total{pool="p"} 10');
  expect(first).toContain('kv_dc_relay_pool_tracked_blocks{pool="p"} 7');
  await new Promise((resolve) => setImmediate(resolve));
  const second = await registry.metrics();
  expect(samples).toBe(2);
  expect(second).toContain('kv_dc_relay_pool_events_applied_total{pool="p"} 20');
});
