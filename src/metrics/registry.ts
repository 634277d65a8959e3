// Prometheus metrics of a relay process (wire-contract.md §10.1 names, plus ingest and producer
// counters). Every value is sampled from its owner at scrape time, so nothing here holds state but
// the delta-latency histograms, observed as deltas are published, and the per-source families' text
// of the last scrape (source-series.ts), kept to skip unchanged sources.
import { Counter, Gauge, type Registry } from 'prom-client';
import type { DiagnosticsMetrics } from '../diagnostics/diagnostics';
import type { SourceStats } from '../ingest/types';
import type { PublicationStats, StreamKind } from '../publication/stats';
import type { TlsStats } from '../security/listener-security';
import type { ConnectionStats } from '../transport/admission';
import type { EventLoopDelay } from './event-loop';
import { FixedHistogram } from './fixed-histogram';
import { ScrapeRegistry } from './scrape-registry';
import type { ScrapeTurns } from './scrape-turns';
import { SourceSeriesText, type SourceFamily } from './source-series';

/** Per pool generation counters of the producer. */
export interface PoolMetrics {
  pool: string;
  eventsApplied: number;
  eventsDroppedBlockSize: number;
  eventErrors: number;
  deltasPublished: number;
  deltasDropped: number;
  capacityFailures: number;
  parentNotFound: number;
  unknownRemovals: number;
  /** Batches dropped on a full actor mailbox (their source was reset). */
  mailboxOverflows: number;
  /** Current publication delay: the configured one, stretched by pacing under load (a gauge). */
  publicationSliceMs: number;
  /** Stores rejected whole because the pool held limits.maxTrackedBlocksPerPool blocks. */
  storesRejectedAtLimit: number;
  /** Blocks the pool tracks now (lineage entries over all its sources). */
  trackedBlocks: number;
  /** Fingerprints in the pool's CKF now (tracked blocks less duplicates and capacity omissions). */
  filterResidentBlocks: number;
  /** Those over the CKF's slots (4 per bucket): near 1 every new block walks maxKicks relocations and most are omitted. */
  filterLoad: number;
  /** Bytes of the pool's producer tables: CKF words, owner and lineage tables (both of a table that drains). */
  stateBytes: number;
}

export interface ProducerMetrics {
  catalogPoolCount: number;
  /** Generations fenced by a producer-side failure (each replaced by a new generation). */
  fencedGenerationsTotal: number;
  topology: { ready: number; unavailable: number; unknown: number };
  degradedLoadCoveragePoolCount: number;
  ingest: SourceStats[];
  /** Ingest threads that died and were restarted (their sources reset). */
  ingestThreadRestarts: number;
  pools: PoolMetrics[];
  /** Drained table pages kept for the next growth (native keptPageBytes): RSS beyond the pools' state bytes. */
  keptPageBytes: number;
}

/** State of the etcd deployment source and this relay's shard (src/discovery/etcd-deployment.ts). */
export interface DiscoveryMetrics {
  stale: boolean;
  rejectedEntries: number;
  waitingWorkers: number;
  liveShards: number;
  deploymentPools: number;
  servedPools: number;
}

/** A Dynamo deployment's discovery and event plane (src/dynamo). */
export interface DynamoMetrics {
  discoveryStale: boolean;
  rejectedEntries: number;
  conflicts: number;
  endpoints: number;
  workers: number;
  /** Serving endpoints whose pool does not bind for want of an active KV event source. */
  unboundEndpoints: number;
  /** Logical KV event sources (worker, dp rank) by status, and invalid v1/event_sources entries. */
  eventSources: { missing: number; active: number; ambiguous: number; invalid: number };
  natsConnected: boolean;
  natsReconnects: number;
  /** Channels read: NATS subjects, JetStream streams, ZMQ publishers. */
  channels: { nats: number; jetstream: number; zmq: number };
  messages: number;
  malformed: number;
  otherTopic: number;
  unknownWorker: number;
  duplicates: number;
  gaps: number;
  /** kv_metrics publisher faults on the ZMQ plane, each clearing the load that publisher reported. */
  loadFaults: number;
}

export interface MetricsProviders {
  producer(): ProducerMetrics;
  /** With discovery.dynamo: its discovery and event plane. */
  dynamo?(): DynamoMetrics;
  /** With etcd discovery: its state and this shard's share. */
  discovery?(): DiscoveryMetrics;
  /** The publication layer's counters; without it the transport metrics are not exported. */
  transport?(): PublicationStats;
  /** With `tls`: the listener's certificate and refusals. */
  tls?(): TlsStats;
  /** The gRPC listener's connection admission (src/transport/admission.ts). */
  connections?(): ConnectionStats;
  /** The event-loop delay since the previous scrape (src/metrics/event-loop.ts). */
  eventLoop?(): EventLoopDelay | undefined;
  /** Observed by the producer as deltas are published. */
  deltaLatency?: DeltaLatencyMetrics;
  /** The misconfiguration checks (src/diagnostics) as of their last round. */
  diagnostics?(): DiagnosticsMetrics;
}

/** Seconds: the 5 ms goal of #8 and the tails seen under load (tens to hundreds of ms) each fall on a bound. */
const DELTA_LATENCY_BUCKETS = [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5];

/**
 * The relay's share of a delta's event→delta time, from the ingest receive of its oldest engine
 * message; the stages add up to it. Split where an operator's remedy differs: a slow hand-off means
 * starved ingest threads or a busy event loop, a slow pool its apply (tables growing, a slice behind
 * another) or the delta's drain and encode.
 */
export interface DeltaTiming {
  /** Ingest receive → the pool actor took the batch (decode, hashing, the ingest thread's hand-off). */
  handoffMs: number;
  /** → the delta went to the listener (mailbox, apply, drain and encode). */
  poolMs: number;
}

/**
 * The relay's share of event→delta, whole and by stage: observed where deltas are published (not
 * sampled at scrape time), so made before the producer and registered by createRelayMetrics.
 */
export class DeltaLatencyMetrics {
  readonly total = new FixedHistogram({
    name: 'kv_dc_relay_pool_delta_latency_seconds',
    help: "Time from the ingest receive of the oldest engine message in a pool delta to the delta's publication to its subscribers",
    buckets: DELTA_LATENCY_BUCKETS,
  });
  readonly stages = new FixedHistogram({
    name: 'kv_dc_relay_pool_delta_stage_seconds',
    help: "kv_dc_relay_pool_delta_latency_seconds by stage: handoff (ingest receive to the pool's mailbox), pool (mailbox, apply, drain and encode to publication)",
    label: { name: 'stage', values: ['handoff', 'pool'] },
    buckets: DELTA_LATENCY_BUCKETS,
  });
  // Observed once per delta on the event loop: the series are picked here, not per observation.
  private readonly all = this.total.series();
  private readonly handoff = this.stages.series('handoff');
  private readonly pool = this.stages.series('pool');

  observe(t: DeltaTiming): void {
    this.all.observe((t.handoffMs + t.poolMs) / 1000);
    this.handoff.observe(t.handoffMs / 1000);
    this.pool.observe(t.poolMs / 1000);
  }
}

type Sampler = (set: (labels: Record<string, string>, value: number) => void) => void;

export function createRelayMetrics(sources: MetricsProviders): Registry {
  const registry = new ScrapeRegistry();
  const providers: MetricsProviders = {
    ...sources,
    producer: registry.samples(sources.producer),
    ...(sources.transport ? { transport: registry.samples(sources.transport) } : {}),
    ...(sources.discovery ? { discovery: registry.samples(sources.discovery) } : {}),
    ...(sources.tls ? { tls: registry.samples(sources.tls) } : {}),
    ...(sources.diagnostics ? { diagnostics: registry.samples(sources.diagnostics) } : {}),
    ...(sources.connections ? { connections: registry.samples(sources.connections) } : {}),
    ...(sources.dynamo ? { dynamo: registry.samples(sources.dynamo) } : {}),
  };
  if (sources.deltaLatency) {
    registry.registerMetric(sources.deltaLatency.total.asMetric());
    registry.registerMetric(sources.deltaLatency.stages.asMetric());
  }
  const gauge = (name: string, help: string, labelNames: string[], sample: Sampler): void => {
    new Gauge({
      name, help, labelNames, registers: [registry],
      collect() {
        this.reset();
        sample((labels, value) => this.set(labels, value));
      },
    });
  };
  // Counters are owned elsewhere as running totals; a scrape copies the current totals.
  const counter = (name: string, help: string, labelNames: string[], sample: Sampler): void => {
    new Counter({
      name, help, labelNames, registers: [registry],
      collect() {
        this.reset();
        sample((labels, value) => this.inc(labels, value));
      },
    });
  };
  const perStream = (values: Partial<Record<StreamKind, number>>): Sampler => (set) => {
    for (const [stream, v] of Object.entries(values)) set({ stream }, v ?? 0);
  };
  const transport = providers.transport;
  if (transport) {
    gauge('kv_dc_relay_subscribers', 'Current subscribers per stream', ['stream'], (set) => perStream(transport().subscribers)(set));
    counter('kv_dc_relay_subscriber_lagged_total', 'Streams terminated for lag', ['stream'], (set) => perStream(transport().laggedTotal)(set));
    counter('kv_dc_relay_subscriber_limit_rejected_total', 'Admission rejections', ['stream', 'scope'], (set) => {
      for (const [key, count] of Object.entries(transport().limitRejectedTotal)) {
        const [stream, scope] = key.split('/');
        set({ stream, scope }, count);
      }
    });
    counter('kv_dc_relay_pool_heartbeats_total', 'Pool-stream heartbeats emitted', [], (set) => set({}, transport().poolHeartbeatsTotal));
    counter('kv_dc_relay_load_updates_total', 'Load windows emitted', [], (set) => set({}, transport().loadUpdatesTotal));
    gauge('kv_dc_relay_requested_publication_hub_count', 'Pools whose lazy hub was requested', [], (set) => set({}, transport().requestedHubs));
    gauge('kv_dc_relay_initialized_publication_hub_count', 'Hubs holding a mirror', [], (set) => set({}, transport().initializedHubs));
    gauge('kv_dc_relay_ready_publication_hub_count', 'Hubs with a ready contiguous mirror', [], (set) => set({}, transport().readyHubs));
    gauge('kv_dc_relay_idle_publication_hub_count', 'Ready hubs with no subscribers', [], (set) => set({}, transport().idleHubs));
  }
  const connections = providers.connections;
  if (connections) {
    gauge('kv_dc_relay_grpc_connections', 'Open gRPC connections: pending (no authorized call yet) or established', ['state'], (set) => {
      const c = connections();
      set({ state: 'pending' }, c.pending);
      set({ state: 'established' }, c.established);
    });
    counter('kv_dc_relay_grpc_connections_refused_total', 'gRPC connections closed on accept: total (maxConnections), per_ip (maxConnectionsPerIp), reserved (only slots reserved for known sources left)', ['reason'], (set) => {
      for (const [reason, count] of Object.entries(connections().refusedTotal)) set({ reason }, count);
    });
    counter('kv_dc_relay_grpc_connection_first_call_timeouts_total', 'gRPC connections closed because no authorized call started within connectionFirstCallMs', [], (set) =>
      set({}, connections().firstCallTimeoutsTotal),
    );
  }
  counter('kv_dc_relay_terminal_publication_failures_total', 'Generations fenced after a terminal publication failure', [], (set) =>
    set({}, providers.producer().fencedGenerationsTotal),
  );
  const eventLoop = providers.eventLoop;
  if (eventLoop) {
    gauge('kv_dc_relay_event_loop_delay_seconds', 'Event-loop delay since the previous scrape (p50, p99, max)', ['quantile'], (set) => {
      const d = eventLoop();
      if (!d) return;
      set({ quantile: '0.5' }, d.p50Ms / 1000);
      set({ quantile: '0.99' }, d.p99Ms / 1000);
      set({ quantile: '1' }, d.maxMs / 1000);
    });
  }
  gauge('kv_dc_relay_catalog_pool_count', 'Pools in the catalog', [], (set) => set({}, providers.producer().catalogPoolCount));
  gauge('kv_dc_relay_serving_topology_count', 'Topology entries by state', ['state'], (set) => {
    const t = providers.producer().topology;
    set({ state: 'ready' }, t.ready);
    set({ state: 'unavailable' }, t.unavailable);
    set({ state: 'unknown' }, t.unknown);
  });
  gauge('kv_dc_relay_degraded_load_coverage_pool_count', 'Pools with observed < expected ranks', [], (set) =>
    set({}, providers.producer().degradedLoadCoveragePoolCount),
  );

  const source = ['worker', 'dp_rank'];
  /**
   * Families with a series per source: prom-client metrics by definition, rendered at a scrape from
   * one SourceSeriesText render of all of them (source-series.ts: prom-client's took tens of ms).
   */
  const perSource = <R extends object>(families: SourceFamily<R>[], records: () => readonly R[], worker: (r: R) => string, dpRank: (r: R) => number): void => {
    const series = new SourceSeriesText(families, (r) => `worker="${worker(r)}",dp_rank="${dpRank(r)}"`);
    // One render per scrape (a scrape's turns are its own), for the first of the families it reaches.
    let rendered: { turns: ScrapeTurns; texts: Promise<string[]> } | undefined;
    families.forEach((f, i) => {
      (f.type === 'counter' ? counter : gauge)(f.name, f.help, source, (set) => {
        for (const r of records()) set({ worker: worker(r), dp_rank: String(dpRank(r)) }, f.value(r));
      });
      registry.renderWith(f.name, async (turns) => {
        if (rendered?.turns !== turns) rendered = { turns, texts: series.render(records(), turns) };
        return (await rendered.texts)[i];
      });
    });
  };
  type IngestField = keyof Omit<SourceStats, 'source' | 'lastSequence' | 'mismatchedBlockSize'>;
  const ingest = (name: string, help: string, field: IngestField, type: SourceFamily<SourceStats>['type'] = 'counter'): SourceFamily<SourceStats> =>
    ({ name, help, type, value: (s) => s[field] });
  perSource(
    [
      ingest('kv_dc_relay_ingest_events_total', 'Engine KV events delivered to the producer', 'events'),
      ingest('kv_dc_relay_ingest_blocks_total', 'Blocks in delivered stored/removed events', 'blocks'),
      ingest('kv_dc_relay_ingest_malformed_total', 'Engine messages that could not be decoded', 'malformed'),
      ingest('kv_dc_relay_ingest_rejected_ranks_total', 'Engine messages dropped for a dp rank outside the worker', 'rejectedRanks'),
      ingest('kv_dc_relay_ingest_overflows_total', 'Times messages held back behind a replay, or batches on a full pool mailbox, outgrew their bounds (the source was reset)', 'overflows'),
      ingest('kv_dc_relay_ingest_out_of_order_total', 'Live engine messages below the stream sequence that no restart confirmed (dropped)', 'outOfOrder'),
      ingest('kv_dc_relay_ingest_refused_peers_total', 'Connections to a bound KV-event socket refused by its allowedPeers', 'refusedPeers'),
      ingest('kv_dc_relay_ingest_gaps_total', 'Engine sequence gaps detected', 'gaps'),
      ingest('kv_dc_relay_ingest_replays_total', 'Replay requests sent to engines', 'replays'),
      ingest('kv_dc_relay_ingest_resets_total', 'Source resets (history lost)', 'resets'),
      ingest('kv_dc_relay_ingest_ignored_total', 'Events ignored (tier, attention group, unknown type)', 'ignored'),
      ingest('kv_dc_relay_ingest_dropped_block_size_total', "Stored events dropped because their block size is not the pool's kvBlockSize", 'droppedBlockSize'),
      ingest('kv_dc_relay_ingest_connections', 'Live ZMQ connections to the engine publisher of a source', 'connections', 'gauge'),
    ],
    () => providers.producer().ingest,
    (s) => s.source.workerId.toString(),
    (s) => s.source.dpRank,
  );
  counter('kv_dc_relay_ingest_thread_restarts_total', 'Ingest threads that died and were started again (every source they owned was reset)', [], (set) =>
    set({}, providers.producer().ingestThreadRestarts),
  );

  const pool = (field: keyof Omit<PoolMetrics, 'pool'>): Sampler => (set) => {
    for (const p of providers.producer().pools) set({ pool: p.pool }, p[field]);
  };
  counter('kv_dc_relay_pool_events_applied_total', 'Primary-tier events applied to a pool', ['pool'], pool('eventsApplied'));
  counter('kv_dc_relay_pool_events_dropped_block_size_total', 'Stored events dropped for a block size other than kvBlockSize', ['pool'], pool('eventsDroppedBlockSize'));
  counter('kv_dc_relay_pool_event_errors_total', 'Events rejected by the pool state (source protocol errors)', ['pool'], pool('eventErrors'));
  counter('kv_dc_relay_pool_deltas_published_total', 'Deltas published to a subscribed hub', ['pool'], pool('deltasPublished'));
  counter('kv_dc_relay_pool_deltas_dropped_total', 'Deltas dropped with no subscriber', ['pool'], pool('deltasDropped'));
  counter('kv_dc_relay_pool_capacity_failures_total', 'Blocks omitted from the CKF at capacity', ['pool'], pool('capacityFailures'));
  counter('kv_dc_relay_pool_parent_not_found_total', 'Stores whose parent block was unknown', ['pool'], pool('parentNotFound'));
  counter('kv_dc_relay_pool_unknown_removals_total', 'Removals of unknown blocks', ['pool'], pool('unknownRemovals'));
  gauge('kv_dc_relay_pool_publication_slice_ms', 'Current publication delay of a pool; pacing stretches it (and the event threshold alike) while subscriber queues fill', ['pool'], pool('publicationSliceMs'));
  counter('kv_dc_relay_pool_mailbox_overflows_total', 'Engine batches dropped on a full pool mailbox (the source is reset)', ['pool'], pool('mailboxOverflows'));
  counter('kv_dc_relay_pool_stores_rejected_at_limit_total', 'Stores rejected whole at limits.maxTrackedBlocksPerPool', ['pool'], pool('storesRejectedAtLimit'));
  gauge('kv_dc_relay_pool_tracked_blocks', 'Blocks a pool tracks (engine lineage entries over all its sources)', ['pool'], pool('trackedBlocks'));
  gauge(
    'kv_dc_relay_pool_state_bytes',
    "Bytes of a pool's producer tables (CKF words, owner and lineage tables; a growing table holds both its old and new table while it drains)",
    ['pool'],
    pool('stateBytes'),
  );
  gauge(
    'kv_dc_relay_kept_page_bytes',
    "Bytes of drained table pages kept a few seconds for the next table growth (resident, not in any pool's state bytes)",
    [],
    (set) => set({}, providers.producer().keptPageBytes),
  );
  gauge('kv_dc_relay_pool_filter_resident_blocks', 'Fingerprints in a pool\'s CKF', ['pool'], pool('filterResidentBlocks'));
  gauge(
    'kv_dc_relay_pool_filter_load',
    'Fingerprints over CKF slots: past ~0.95 new blocks are omitted after maxKicks relocations each and ingest slows sharply (size expectedUniqueBlocks for the pool)',
    ['pool'],
    pool('filterLoad'),
  );
  const tls = providers.tls;
  if (tls) {
    gauge('kv_dc_relay_tls_certificate_expiry_timestamp_seconds', 'notAfter of the relay certificate in service', [], (set) => set({}, tls().certificateExpirySeconds));
    counter('kv_dc_relay_tls_certificate_reloads_total', 'Changed certificate files put into service', [], (set) => set({}, tls().certificateReloadsTotal));
    counter('kv_dc_relay_tls_certificate_refused_total', 'Changed certificate files refused (the set in service was kept)', [], (set) => set({}, tls().certificateRefusedTotal));
    counter('kv_dc_relay_tls_refused_calls_total', 'Calls refused by tls.allowedSubjects', ['code'], (set) => {
      const refused = tls().refusedCallsTotal;
      set({ code: 'unauthenticated' }, refused.unauthenticated);
      set({ code: 'permission_denied' }, refused.permissionDenied);
    });
  }
  const diagnostics = providers.diagnostics;
  if (diagnostics) {
    gauge(
      'kv_dc_relay_diagnostics_active',
      'Sources or pools for which a misconfiguration check holds now (check: source_not_connected, block_size_mismatch, pool_empty_while_publishing); each is also a warning in the log',
      ['check'],
      (set) => {
        for (const [check, n] of Object.entries(diagnostics().active)) set({ check }, n);
      },
    );
    perSource(
      [{
        name: 'kv_dc_relay_ingest_last_event_age_seconds',
        help: 'Seconds since the last engine message of a source (before its first one: since its subscription started); sampled every second',
        type: 'gauge',
        value: (s) => s.seconds,
      }],
      () => diagnostics().lastEventAge,
      (s) => s.worker,
      (s) => s.dpRank,
    );
  }
  const discovery = providers.discovery;
  if (discovery) {
    gauge('kv_dc_relay_discovery_stale', '1 while the etcd watch is lost and the last known deployment is served', [], (set) => set({}, discovery().stale ? 1 : 0));
    gauge('kv_dc_relay_discovery_rejected_entries', 'Discovery entries rejected as invalid', [], (set) => set({}, discovery().rejectedEntries));
    gauge('kv_dc_relay_discovery_waiting_workers', 'Registered workers whose endpoint has no valid entry', [], (set) => set({}, discovery().waitingWorkers));
    gauge('kv_dc_relay_shard_live_shards', 'Relay shards with a live entry under the prefix', [], (set) => set({}, discovery().liveShards));
    gauge('kv_dc_relay_shard_deployment_pools', 'Pools of the whole deployment (all shards)', [], (set) => set({}, discovery().deploymentPools));
    gauge('kv_dc_relay_shard_served_pools', 'Pools this shard claims and serves', [], (set) => set({}, discovery().servedPools));
  }
  const dynamo = providers.dynamo;
  if (dynamo) {
    gauge('kv_dc_relay_dynamo_discovery_stale', '1 while the Dynamo etcd watch is lost and the last known deployment is served', [], (set) => set({}, dynamo().discoveryStale ? 1 : 0));
    gauge('kv_dc_relay_dynamo_rejected_entries', 'Dynamo discovery entries (v1/...) rejected as invalid', [], (set) => set({}, dynamo().rejectedEntries));
    gauge('kv_dc_relay_dynamo_conflicts', 'Dynamo cards or endpoints left out for a conflict', [], (set) => set({}, dynamo().conflicts));
    gauge('kv_dc_relay_dynamo_endpoints', 'Dynamo serving endpoints projected from the model cards', [], (set) => set({}, dynamo().endpoints));
    gauge('kv_dc_relay_dynamo_workers', 'Dynamo workers with a base model card', [], (set) => set({}, dynamo().workers));
    gauge('kv_dc_relay_dynamo_unbound_endpoints', 'Dynamo serving endpoints whose pool is not served: their KV-state endpoint has v1/event_sources entries but none of their ranks is Active, or their cards name more than one KV-state endpoint', [], (set) => set({}, dynamo().unboundEndpoints));
    gauge('kv_dc_relay_dynamo_event_sources', 'Dynamo KV event sources (worker, dp rank) of endpoints with v1/event_sources entries, by status; invalid: entries that contradict their key', ['status'], (set) => {
      const s = dynamo().eventSources;
      for (const status of ['missing', 'active', 'ambiguous', 'invalid'] as const) set({ status }, s[status]);
    });
    gauge('kv_dc_relay_dynamo_nats_connected', '1 while the NATS connection of the event plane is up', [], (set) => set({}, dynamo().natsConnected ? 1 : 0));
    counter('kv_dc_relay_dynamo_nats_reconnects_total', 'NATS reconnections of the event plane', [], (set) => set({}, dynamo().natsReconnects));
    gauge('kv_dc_relay_dynamo_channels', 'Event-plane channels read (a NATS subject once the server confirmed the subscription)', ['transport'], (set) => {
      const c = dynamo().channels;
      set({ transport: 'nats' }, c.nats);
      set({ transport: 'jetstream' }, c.jetstream);
      set({ transport: 'zmq' }, c.zmq);
    });
    counter('kv_dc_relay_dynamo_messages_total', 'Event-plane messages received', [], (set) => set({}, dynamo().messages));
    counter('kv_dc_relay_dynamo_malformed_total', 'Event-plane messages that could not be decoded (counted, logged, dropped)', [], (set) => set({}, dynamo().malformed));
    counter('kv_dc_relay_dynamo_other_topic_total', 'Envelopes of another topic on a KV-event channel (dropped)', [], (set) => set({}, dynamo().otherTopic));
    counter('kv_dc_relay_dynamo_unknown_worker_total', 'Events of a worker without a model card in the served namespaces (dropped)', [], (set) => set({}, dynamo().unknownWorker));
    counter('kv_dc_relay_dynamo_duplicates_total', 'Envelopes at or below their publisher\'s last sequence (duplicates or reordered; dropped)', [], (set) => set({}, dynamo().duplicates));
    counter('kv_dc_relay_dynamo_gaps_total', 'Publisher sequence gaps (each resets the publisher\'s sources)', [], (set) => set({}, dynamo().gaps));
    counter('kv_dc_relay_dynamo_load_faults_total', 'ZMQ kv_metrics publisher faults (a message that does not decode or whose envelope names another topic, publisher or sequence than its frames; a lost connection): each clears the load that publisher reported', [], (set) => set({}, dynamo().loadFaults));
  }
  return registry;
}
