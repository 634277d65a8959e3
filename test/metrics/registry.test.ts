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

test('connection admission: open connections by state, refusals by reason, first-call timeouts', async () => {
  const registry = createRelayMetrics({
    producer: () => producerSample(0),
    connections: () => ({ pending: 3, established: 5, refusedTotal: { total: 1, per_ip: 14, reserved: 2 }, firstCallTimeoutsTotal: 7 }),
  });
  const text = await registry.metrics();
  expect(text).toContain('kv_dc_relay_grpc_connections{state="pending"} 3');
  expect(text).toContain('kv_dc_relay_grpc_connections{state="established"} 5');
  expect(text).toContain('kv_dc_relay_grpc_connections_refused_total{reason="per_ip"} 14');
  expect(text).toContain('kv_dc_relay_grpc_connections_refused_total{reason="reserved"} 2');
  expect(text).toContain('kv_dc_relay_grpc_connections_refused_total{reason="total"} 1');
  expect(text).toContain('kv_dc_relay_grpc_connection_first_call_timeouts_total 7');
});
