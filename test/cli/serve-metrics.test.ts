// The metrics HTTP surface of `serve`: Prometheus text with the reference names, and /healthz.
import { createRelayMetrics, type ProducerMetrics } from '../../src/metrics/registry';
import type { PublicationStats } from '../../src/publication/stats';
import { EventLoopDelayMonitor } from '../../src/metrics/event-loop';
import { isLoopbackAddress, startMetricsServer, type MetricsServer } from '../../src/metrics/server';

let server: MetricsServer | undefined;
afterEach(async () => server?.close());

const producer: ProducerMetrics = {
  catalogPoolCount: 2,
  fencedGenerationsTotal: 1,
  topology: { ready: 1, unavailable: 2, unknown: 0 },
  degradedLoadCoveragePoolCount: 1,
  ingest: [{ source: { workerId: 18446744073709551615n, dpRank: 3 }, events: 5, blocks: 9, malformed: 1, rejectedRanks: 6, overflows: 7, outOfOrder: 8, refusedPeers: 9, gaps: 2, replays: 3, resets: 1, ignored: 4, droppedBlockSize: 14, connections: 1, lastSequence: 10n, mismatchedBlockSize: 32 }],
  ingestThreadRestarts: 13,
  pools: [{ pool: 'abc:def/0011', eventsApplied: 5, eventsDroppedBlockSize: 1, eventErrors: 0, deltasPublished: 4, deltasDropped: 1, capacityFailures: 0, parentNotFound: 0, unknownRemovals: 2, mailboxOverflows: 3, publicationSliceMs: 64, storesRejectedAtLimit: 11, trackedBlocks: 12, filterResidentBlocks: 10, filterLoad: 0.25, stateBytes: 65536 }],
  keptPageBytes: 4194304,
};

test('/metrics exposes reference names, ingest counters per source and producer counters', async () => {
  const transport: PublicationStats = {
    subscribers: { catalog: 2, pool: 1, readiness: 0, load: 0, serving_load: 0 },
    laggedTotal: { catalog: 0, pool: 4, readiness: 0, load: 0, serving_load: 0 },
    limitRejectedTotal: { 'pool/per_pool': 3 },
    poolHeartbeatsTotal: 6,
    loadUpdatesTotal: 7,
    requestedHubs: 3,
    initializedHubs: 2,
    readyHubs: 2,
    idleHubs: 1,
  };
  server = await startMetricsServer('127.0.0.1:0', createRelayMetrics({ producer: () => producer, transport: () => transport }), () => true);
  const res = await fetch(`http://${server.address}/metrics`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
  const text = await res.text();
  for (const line of [
    'kv_dc_relay_catalog_pool_count 2',
    'kv_dc_relay_serving_topology_count{state="ready"} 1',
    'kv_dc_relay_serving_topology_count{state="unavailable"} 2',
    'kv_dc_relay_serving_topology_count{state="unknown"} 0',
    'kv_dc_relay_degraded_load_coverage_pool_count 1',
    'kv_dc_relay_subscribers{stream="catalog"} 2',
    'kv_dc_relay_subscriber_limit_rejected_total{stream="pool",scope="per_pool"} 3',
    'kv_dc_relay_ingest_events_total{worker="18446744073709551615",dp_rank="3"} 5',
    'kv_dc_relay_ingest_gaps_total{worker="18446744073709551615",dp_rank="3"} 2',
    'kv_dc_relay_ingest_refused_peers_total{worker="18446744073709551615",dp_rank="3"} 9',
    'kv_dc_relay_ingest_out_of_order_total{worker="18446744073709551615",dp_rank="3"} 8',
    'kv_dc_relay_ingest_overflows_total{worker="18446744073709551615",dp_rank="3"} 7',
    'kv_dc_relay_ingest_rejected_ranks_total{worker="18446744073709551615",dp_rank="3"} 6',
    'kv_dc_relay_ingest_connections{worker="18446744073709551615",dp_rank="3"} 1',
    'kv_dc_relay_ingest_dropped_block_size_total{worker="18446744073709551615",dp_rank="3"} 14',
    'kv_dc_relay_ingest_thread_restarts_total 13',
    'kv_dc_relay_pool_unknown_removals_total{pool="abc:def/0011"} 2',
    'kv_dc_relay_pool_mailbox_overflows_total{pool="abc:def/0011"} 3',
    'kv_dc_relay_pool_publication_slice_ms{pool="abc:def/0011"} 64',
    'kv_dc_relay_pool_stores_rejected_at_limit_total{pool="abc:def/0011"} 11',
    'kv_dc_relay_pool_tracked_blocks{pool="abc:def/0011"} 12',
    'kv_dc_relay_pool_filter_resident_blocks{pool="abc:def/0011"} 10',
    'kv_dc_relay_pool_filter_load{pool="abc:def/0011"} 0.25',
    'kv_dc_relay_pool_state_bytes{pool="abc:def/0011"} 65536',
    'kv_dc_relay_kept_page_bytes 4194304',
    'kv_dc_relay_pool_deltas_published_total{pool="abc:def/0011"} 4',
    'kv_dc_relay_subscriber_lagged_total{stream="pool"} 4',
    'kv_dc_relay_pool_heartbeats_total 6',
    'kv_dc_relay_load_updates_total 7',
    'kv_dc_relay_requested_publication_hub_count 3',
    'kv_dc_relay_initialized_publication_hub_count 2',
    'kv_dc_relay_ready_publication_hub_count 2',
    'kv_dc_relay_idle_publication_hub_count 1',
    'kv_dc_relay_terminal_publication_failures_total 1',
  ]) {
    expect(text).toContain(line);
  }
  expect(text).toContain('# TYPE kv_dc_relay_subscriber_lagged_total counter');
  expect(text).toContain('# TYPE kv_dc_relay_subscribers gauge');
});

test('/healthz is 200 while serving and 503 once shutdown began; other paths 404', async () => {
  let serving = true;
  server = await startMetricsServer('127.0.0.1:0', createRelayMetrics({ producer: () => producer }), () => serving);
  expect((await fetch(`http://${server.address}/healthz`)).status).toBe(200);
  serving = false;
  const res = await fetch(`http://${server.address}/healthz`);
  expect(res.status).toBe(503);
  expect((await fetch(`http://${server.address}/nope`)).status).toBe(404);
});

test('a bad bind address is refused', async () => {
  await expect(startMetricsServer('localhost:1', createRelayMetrics({ producer: () => producer }), () => true)).rejects.toThrow(/invalid metrics bind/);
});

test('/metrics reports the event-loop delay since the previous scrape: a block of the loop shows as its max', async () => {
  const loop = new EventLoopDelayMonitor();
  try {
    server = await startMetricsServer('127.0.0.1:0', createRelayMetrics({ producer: () => producer, eventLoop: () => loop.take() }), () => true);
    // Start the window after the setup's own turns, then hold the loop.
    loop.take();
    const blockMs = 120;
    const until = performance.now() + blockMs;
    while (performance.now() < until);
    await new Promise((resolve) => setTimeout(resolve, 20));
    const text = await (await fetch(`http://${server.address}/metrics`)).text();
    const quantile = (q: string): number => Number(new RegExp(`^kv_dc_relay_event_loop_delay_seconds\\{quantile="${q}"\\} (\\S+)$`, 'm').exec(text)?.[1]);
    expect(quantile('1')).toBeGreaterThanOrEqual(blockMs / 1000);
    expect(quantile('0.5')).toBeLessThanOrEqual(quantile('0.99'));
    expect(quantile('0.99')).toBeLessThanOrEqual(quantile('1'));
    // The scrape began a new window: the block is not reported again.
    expect(loop.take()?.maxMs ?? 0).toBeLessThan(blockMs / 2);
  } finally {
    loop.close();
  }
});

test('only loopback addresses count as loopback (a warning names every other metrics listener)', () => {
  for (const host of ['127.0.0.1', '127.8.9.10', '::1', '0:0:0:0:0:0:0:1', '::ffff:127.0.0.1']) expect(isLoopbackAddress(host)).toBe(true);
  for (const host of ['0.0.0.0', '::', '10.0.0.7', '192.0.2.2', 'fd00::2', '::ffff:10.0.0.7']) expect(isLoopbackAddress(host)).toBe(false);
});
