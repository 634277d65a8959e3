// The producer: turns the configured deployment and the engines' KV events into the transport-
// neutral state the publication layer serves (RelaySource): catalog, one pool generation per
// materialized pool, readiness and load. It is also the ingest sink that routes each source's
// batches to its pool's actor.
//
// A deployment change (hot reload) is applied as a diff: withdrawn pools retire (their feed ends),
// new pools get a fresh layout generation, metadata changes update descriptors in place. Every
// catalog change bumps the revision; listeners hear the latest state once per apply.
import type { RelayConfig } from '../config/schema';
import { DEFAULT_CKF_SEED } from '../config/defaults';
import { LayoutGenerationCounter } from '../identity';
import { sourcesOf } from '../ingest/sources';
import type { IngestSink, PackedEngineEvents, ResetReason, SourceKey, SourceStats } from '../ingest/types';
import { buildPoolLoad, buildServingLoad, MetricsScraper, withReportedBlocks, type LoadPool, type ReportedBlocks } from '../load';
import type { Logger } from '../log';
import type { DeltaTiming, PoolMetrics, ProducerMetrics } from '../metrics/registry';
import { CBI1, ckfBucketCount, keptPageBytes } from '../native';
import type {
  CatalogState,
  PoolFeed,
  PoolLoadState,
  ReadinessState,
  RelaySource,
  ServingLoadState,
  Unsubscribe,
} from '../publication/source';
import { HealthMonitor, ReadinessProjection } from '../topology';
import { ServingReadinessState } from '../wire/enums';
import type { KvPoolId, ProducerIdentity, RelayIdentity } from '../wire/types';
import { Catalog } from './catalog';
import { buildDeployment, endpointName, type Deployment, type PoolSpec } from './deployment';
import { diffDeployments } from './diff';
import { PoolActor } from './pool-actor';
import type { PoolGeneration } from './pool-generation';
import { ThreadPool } from './thread-pools';
import { poolIdDisplay } from '../identity';
import { KvSources } from './sources';
import { descriptor, droppedSources, kvSourceConfigs, loadPool, poolReservation, topologyInputs, type Liveness } from './views';

/** What the load windows were last built from (see Producer.loadInputs) and what they built. */
interface LoadMemo {
  catalog: CatalogState;
  liveness: number;
  pools: LoadPool[];
  /** Pool load as of the scraper's usage `usage` (MetricsScraper.version). */
  poolLoad?: { usage: number; state: PoolLoadState };
  servingLoad?: ServingLoadState;
}

export interface ProducerOptions {
  config: RelayConfig;
  relay: RelayIdentity;
  logger: Logger;
  /** Every pool's published deltas: PoolActorOptions.onDeltaPublished (the /metrics histograms), with the pool's key. */
  onDeltaPublished?(timing: DeltaTiming, pool: string): void;
  /**
   * Build the pools but dial no engine until startIngest(): a relay binds its listeners first, so a
   * port in use stops it before any engine was contacted.
   */
  holdIngest?: boolean;
  /**
   * KV events from an event plane instead of per-worker `kvEvents` subscriptions (a Dynamo
   * deployment's): every worker of a pool's endpoint feeds the pool.
   */
  eventPlane?(sink: IngestSink): EventPlaneSources;
}

export interface ServedPool {
  spec: PoolSpec;
  producer: ProducerIdentity;
  /** The generation's counters now. */
  metrics(): PoolMetrics;
}

/** An event plane's side of the producer (src/dynamo/event-plane). */
export interface EventPlaneSources {
  /** A pool dropped `batches` batches of `source` on a full mailbox and reset it. */
  overflowed(source: SourceKey, batches: number): void;
  stats(): SourceStats[];
  /** The workers' own kv_used_blocks reports per rank (their load), latest each. */
  reportedBlocks(): ReportedBlocks;
  close(): Promise<void>;
}

interface LivePool {
  spec: PoolSpec;
  actor: PoolGeneration;
}

const EMPTY: Deployment = { pools: [], topology: [], conflicts: [] };

export class Producer implements RelaySource {
  private readonly logger: Logger;
  private readonly relay: RelayIdentity;
  private readonly dcId: string;
  private readonly timing: RelayConfig['timing'];
  private readonly bucketCount: number;
  private readonly generations = new LayoutGenerationCounter();
  private readonly catalogState = new Catalog();
  private readonly projection = new ReadinessProjection();
  private readonly readinessListeners = new Set<(state: ReadinessState) => void>();
  private readonly health: HealthMonitor;
  private readonly scraper: MetricsScraper;
  private readonly sources: KvSources;
  private readonly eventPlane: EventPlaneSources | undefined;
  private readonly liveness: Liveness;
  /** Counts liveness changes (a health answer, new probe targets): the load windows' inputs follow it. */
  private livenessVersion = 0;
  /** The load windows' inputs and states as last built: rebuilt on a change, not every window. */
  private load: LoadMemo | undefined;
  /** servedPools() as of a catalog state: rebuilt on a change, not every diagnostics round. */
  private servedView: { catalog: CatalogState; pools: readonly ServedPool[] } | undefined;
  private readonly pools = new Map<string, LivePool>();
  /** Worker id → key of the pool its KV events feed. */
  private readonly routes = new Map<bigint, string>();
  private deployment: Deployment = EMPTY;
  /** The pools this process serves: `deployment` less the pools of sibling shards. */
  private served: Deployment = EMPTY;
  private fencedGenerations = 0;
  /**
   * With limits.reservePoolBlocks: the `released` of generations that ended (fenced, withdrawn) and
   * may still hold their reserved tables, oldest first. Each is claimed by one new generation, whose
   * state waits for it (PoolActorOptions.after): the pools' tables never hold more than one
   * reservation per served pool, also when every pool is re-fenced at once.
   */
  private readonly unreleased: Promise<void>[] = [];
  /** False while the deployment's own availability source is lost (a Dynamo etcd watch): readiness is UNKNOWN. */
  private availabilityKnown = true;
  /** Serializes deployment changes (each awaits subscriber start/stop). */
  private changes: Promise<void> = Promise.resolve();
  private closed = false;
  private ingestHeld: boolean;

  constructor(private readonly options: ProducerOptions) {
    this.ingestHeld = options.holdIngest === true;
    this.logger = options.logger;
    this.relay = options.relay;
    this.dcId = options.config.dcId;
    this.timing = options.config.timing;
    this.bucketCount = ckfBucketCount(options.config.expectedUniqueBlocks);
    this.health = new HealthMonitor(this.timing.healthProbeMs);
    this.scraper = new MetricsScraper(this.timing.loadWindowMs);
    this.liveness = (id, staticLive) => this.health.liveness(id, staticLive);
    const sink: IngestSink = { events: (b) => this.events(b), reset: (s, r) => this.reset(s, r) };
    // An event plane's bursts reach the main thread: its pools are applied there.
    this.sources = new KvSources(sink, this.logger, options.config.limits.ingestThreads, !options.eventPlane);
    this.eventPlane = options.eventPlane?.(sink);
    this.health.onChange(() => {
      this.livenessVersion += 1;
      this.publishReadiness();
    });
  }

  /** Applies the start config and starts probing and scraping. */
  async start(): Promise<void> {
    await this.applyConfig(this.options.config);
    this.scraper.start();
  }

  /**
   * Applies a new config's deployment (the `endpoints` part; tunables apply at start only).
   * Resolves once subscribers for new sources are started.
   */
  applyConfig(config: RelayConfig): Promise<void> {
    return this.applyDeployment(buildDeployment(this.dcId, config.endpoints));
  }

  /**
   * Applies a deployment of which this process serves only the pools `serves` selects (a relay
   * shard; the others are served by sibling shards). Topology and readiness cover the whole
   * deployment, with links to every materialized pool, so every shard publishes the same readiness.
   */
  applyDeployment(deployment: Deployment, serves: (poolKey: string) => boolean = () => true): Promise<void> {
    return this.serialize(() => this.apply(deployment, serves)());
  }

  /**
   * Stops serving, before returning, every served pool `serves` no longer selects (a fenced relay
   * shard: it must not wait behind a deployment change in progress). Their sources stop afterwards,
   * in turn with other changes.
   */
  withdraw(serves: (poolKey: string) => boolean): void {
    if (this.closed) return;
    const stopSources = this.apply(this.deployment, (key) => this.pools.has(key) && serves(key));
    void this.serialize(stopSources);
  }

  /** Starts the KV-event subscriptions that `holdIngest` held back; resolves once they started. */
  startIngest(): Promise<void> {
    if (!this.ingestHeld) return Promise.resolve();
    this.ingestHeld = false;
    return this.serialize(() => this.reconcileSources());
  }

  // ---- RelaySource ----

  catalog(): CatalogState {
    return this.catalogState.current();
  }

  onCatalog(listener: (state: CatalogState) => void): Unsubscribe {
    return this.catalogState.onChange(listener);
  }

  pool(poolId: KvPoolId): PoolFeed | undefined {
    const actor = this.pools.get(poolIdDisplay(poolId))?.actor;
    return actor && !actor.isEnded ? actor : undefined;
  }

  readiness(): ReadinessState {
    return this.projection.current();
  }

  onReadiness(listener: (state: ReadinessState) => void): Unsubscribe {
    this.readinessListeners.add(listener);
    return () => this.readinessListeners.delete(listener);
  }

  /** The same state while the pools, their workers' liveness and the scraped usage stay (an event plane's reports are read anew). */
  poolLoad(): PoolLoadState {
    const load = this.loadInputs();
    const reported = this.eventPlane?.reportedBlocks();
    if (reported) return { pools: buildPoolLoad(load.pools, withReportedBlocks(this.scraper.usage(), reported, load.pools)) };
    if (load.poolLoad?.usage !== this.scraper.version) load.poolLoad = { usage: this.scraper.version, state: { pools: buildPoolLoad(load.pools, this.scraper.usage()) } };
    return load.poolLoad.state;
  }

  /** The same state while the pools and their workers' liveness stay. */
  servingLoad(): ServingLoadState {
    const load = this.loadInputs();
    load.servingLoad ??= buildServingLoad(load.pools);
    return load.servingLoad;
  }

  // ---- ingest sink ----

  events(b: PackedEngineEvents): Promise<void> | undefined {
    return this.actorOfWorker(b.workerId)?.events(b);
  }

  reset(source: SourceKey, reason: ResetReason): void {
    this.logger.info({ worker: source.workerId.toString(), dpRank: source.dpRank, reason }, 'KV source reset');
    this.actorOf(source)?.reset(source);
  }

  /**
   * Whether the workers' availability is known. A Dynamo relay's availability is the instance watch
   * (identity-topology-load.md §3.1): while that watch is lost it is None, so every entry is UNKNOWN
   * until the watch is back; pools and their contents are kept meanwhile.
   */
  setAvailabilityKnown(known: boolean): void {
    if (this.availabilityKnown === known) return;
    this.availabilityKnown = known;
    this.publishReadiness();
  }

  // ---- lifecycle and diagnostics ----

  /** @internal The KV-event subscriptions (tests reach the ingest threads through them). */
  get kvSources(): KvSources {
    return this.sources;
  }

  /**
   * The served pools: each one's spec, current generation and counters (diagnostics, the status
   * view); the same list while the catalog state stays (as loadInputs).
   */
  servedPools(): readonly ServedPool[] {
    const catalog = this.catalogState.current();
    if (this.servedView?.catalog !== catalog) {
      const pools = [...this.pools.values()].map(({ spec, actor }) => ({ spec, producer: actor.producer, metrics: () => actor.metrics() }));
      this.servedView = { catalog, pools };
    }
    return this.servedView.pools;
  }

  /**
   * One worker's KV-event counters by rank (an event plane's sources are in metrics().ingest only):
   * the same list while none of them changed, the same object for a rank that did not (the
   * diagnostics round reads every worker each second).
   */
  ingestWorkerStats(workerId: bigint): readonly SourceStats[] {
    return this.sources.workerStats(workerId);
  }

  /** KV-event subscribers' endpoints of a worker (bind mode shows chosen ports): the same list while they stay. */
  ingestEndpoints(workerId: bigint): readonly string[] {
    return this.sources.endpoints(workerId);
  }

  metrics(): ProducerMetrics {
    const topology = { ready: 0, unavailable: 0, unknown: 0 };
    for (const e of this.projection.current().entries) {
      if (e.state === ServingReadinessState.READY) topology.ready += 1;
      else if (e.state === ServingReadinessState.UNAVAILABLE) topology.unavailable += 1;
      else topology.unknown += 1;
    }
    return {
      catalogPoolCount: this.catalogState.size(),
      fencedGenerationsTotal: this.fencedGenerations,
      topology,
      degradedLoadCoveragePoolCount: this.poolLoad().pools.filter((p) => p.kvObservedRanks < p.kvExpectedRanks).length,
      ingest: [...this.sources.stats(), ...(this.eventPlane?.stats() ?? [])],
      ingestThreadRestarts: this.sources.threadRestarts,
      pools: [...this.pools.values()].map((p) => p.actor.metrics()),
      keptPageBytes: keptPageBytes(),
    };
  }

  /** Terminal stop: sources close, every generation retires, catalog and readiness become empty. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.changes;
    this.health.close();
    this.scraper.close();
    await this.sources.close();
    await this.eventPlane?.close();
    this.routes.clear();
    await Promise.all([...this.pools.values()].map((p) => p.actor.retire()));
    this.pools.clear();
    this.catalogState.clear();
    this.catalogState.publish();
    this.deployment = EMPTY;
    this.served = EMPTY;
    this.publishReadiness();
  }

  // ---- internals ----

  private serialize(change: () => Promise<void>): Promise<void> {
    const next = this.changes.then(change);
    this.changes = next.catch((err: Error) => this.logger.error({ err: err.message }, 'deployment change failed'));
    return next;
  }

  /**
   * Applies a deployment's catalog, pools and routes at once; returns what is left to await (the
   * sources' subscriptions and the retiring generations).
   */
  private apply(full: Deployment, serves: (poolKey: string) => boolean): () => Promise<void> {
    if (this.closed) return () => Promise.resolve();
    const next = { ...full, pools: full.pools.filter((p) => serves(p.key)) };
    const diff = diffDeployments(this.served, next);
    for (const c of next.conflicts) if (!this.deployment.conflicts.includes(c)) this.logger.warn({ conflict: c }, 'deployment conflict');
    const retiring: Promise<void>[] = [];
    for (const spec of diff.removed) {
      const live = this.pools.get(spec.key);
      if (!live) continue;
      this.pools.delete(spec.key);
      this.catalogState.remove(spec.key);
      retiring.push(live.actor.retire());
      this.releasing(live.actor);
      this.logger.info({ pool: spec.key, endpoint: endpointName(spec.servingEndpoint) }, 'pool withdrawn');
    }
    for (const spec of diff.updated) {
      const live = this.pools.get(spec.key);
      if (!live) continue;
      for (const source of droppedSources(live.spec, spec, this.eventPlane !== undefined)) live.actor.reset(source);
      live.spec = spec;
      this.catalogState.upsert(spec.key, descriptor(spec, live.actor.producer));
      this.logger.info({ pool: spec.key }, 'pool metadata updated');
    }
    for (const spec of diff.added) this.materialize(spec);
    this.deployment = full;
    this.served = next;
    const before = new Map(this.routes);
    this.routes.clear();
    for (const { spec } of this.pools.values()) for (const id of this.feedingWorkers(spec)) this.routes.set(id, spec.key);
    this.catalogState.publish();
    this.setProbeTargets();
    this.publishReadiness();
    // A worker that now feeds another pool is re-subscribed, so its replay fills the new pool.
    const rerouted = [...this.routes].filter(([id, key]) => before.has(id) && before.get(id) !== key).map(([id]) => id);
    return async () => {
      await this.sources.stop(rerouted);
      await this.reconcileSources();
      await Promise.all(retiring);
    };
  }

  /** An ended generation whose reserved tables a later one must wait for (unreleased). */
  private releasing(ended: PoolGeneration): void {
    if (this.options.config.limits.reservePoolBlocks === 0) return;
    const released = ended.released;
    this.unreleased.push(released);
    void released.then(() => {
      const at = this.unreleased.indexOf(released);
      if (at >= 0) this.unreleased.splice(at, 1);
    });
  }

  /** A new generation of the pool: on the ingest thread its sources will run on, or on the main thread. */
  private materialize(spec: PoolSpec): void {
    const producer = this.producerIdentity(spec.poolId);
    const reserve = poolReservation(this.options.config.limits.reservePoolBlocks, spec, this.eventPlane !== undefined);
    const options = {
      key: spec.key,
      producer,
      dcId: spec.poolId.dcId,
      publicationThreshold: this.timing.publicationThreshold,
      publicationDelayMs: this.timing.publicationDelayMs,
      maxTrackedBlocks: this.options.config.limits.maxTrackedBlocksPerPool,
      reserve,
      // A reserving generation waits for the oldest ended one still holding its tables, if any.
      after: reserve && this.unreleased.shift(),
      logger: this.logger,
      onFenced: () => this.replaceFenced(spec.key, actor),
      onDeltaPublished: this.options.onDeltaPublished && ((timing: DeltaTiming) => this.options.onDeltaPublished!(timing, spec.key)),
    };
    const actor: PoolGeneration =
      this.sources.openPool(options, this.feedingWorkers(spec)) ?? new PoolActor({ ...options, onOverflow: (source, batches) => (this.eventPlane ?? this.sources).overflowed(source, batches) });
    this.pools.set(spec.key, { spec, actor });
    this.catalogState.upsert(spec.key, descriptor(spec, producer));
    this.logger.info(
      { pool: spec.key, endpoint: endpointName(spec.servingEndpoint), layoutGeneration: producer.layoutGeneration.toString() },
      'pool materialized',
    );
  }

  /**
   * A fenced generation is withdrawn and replaced by a new one (new layout generation, empty
   * state); the pool's sources are re-subscribed so their replay rebuilds the state.
   */
  private replaceFenced(key: string, fenced: PoolGeneration): void {
    this.fencedGenerations += 1;
    void this.serialize(async () => {
      const live = this.pools.get(key);
      if (this.closed || !live || live.actor !== fenced) return;
      this.pools.delete(key);
      this.catalogState.remove(key);
      this.releasing(fenced);
      this.materialize(live.spec);
      this.catalogState.publish();
      await this.sources.stop(kvSourceConfigs([live.spec]).map((c) => c.workerId));
      await this.reconcileSources();
    });
  }

  private producerIdentity(poolId: KvPoolId): ProducerIdentity {
    return {
      poolId,
      producerIncarnation: this.relay.relayIncarnation,
      layoutGeneration: this.generations.next(),
      ckfFormat: {
        formatVersion: CBI1.formatVersion,
        seed: DEFAULT_CKF_SEED,
        bucketCount: BigInt(this.bucketCount),
        fingerprintBits: CBI1.fingerprintBits,
        slotsPerBucket: CBI1.slotsPerBucket,
      },
    };
  }

  /** The workers whose KV events feed a pool: those with kvEvents, or with an event plane every worker of its endpoint. */
  private feedingWorkers(spec: PoolSpec): bigint[] {
    return this.eventPlane ? spec.endpoint.workers.map((w) => w.id) : kvSourceConfigs([spec]).map((c) => c.workerId);
  }

  private actorOf(source: SourceKey): PoolGeneration | undefined {
    return this.actorOfWorker(source.workerId);
  }

  private actorOfWorker(workerId: bigint): PoolGeneration | undefined {
    const key = this.routes.get(workerId);
    return key === undefined ? undefined : this.pools.get(key)?.actor;
  }

  private reconcileSources(): Promise<void> {
    if (this.ingestHeld) return Promise.resolve();
    const specs = [...this.pools.values()].map((p) => p.spec);
    // A replaced subscription replays from the start: what the old one delivered is dropped first.
    // A worker of a thread-hosted pool delivers to the pool's thread.
    return this.sources.reconcile(
      kvSourceConfigs(specs),
      (old) => {
        for (const s of sourcesOf(old)) this.actorOf(s)?.reset(s);
      },
      (workerId) => {
        const actor = this.actorOfWorker(workerId);
        return actor instanceof ThreadPool ? actor.hosted : undefined;
      },
    );
  }

  private setProbeTargets(): void {
    const all = this.deployment.topology.flatMap((t) => t.endpoint.workers);
    this.health.setTargets(all.flatMap((w) => (w.health ? [{ workerId: w.id, url: w.health.url }] : [])));
    // A worker no longer probed follows its config's `live` again, without a change event.
    this.livenessVersion += 1;
    const pooled = [...this.pools.values()].flatMap((p) => p.spec.endpoint.workers);
    this.scraper.setTargets(
      pooled.flatMap((w) => (w.metrics ? [{ workerId: w.id, url: w.metrics.url, dpStartRank: w.dpStartRank, dpSize: w.dpSize }] : [])),
    );
  }

  private publishReadiness(): void {
    const linked = new Map(this.deployment.pools.map((p) => [p.key, p.poolId]));
    const liveness: Liveness = this.availabilityKnown ? this.liveness : () => undefined;
    const inputs = topologyInputs(this.deployment, liveness, (key) => linked.get(key));
    if (!this.projection.update(inputs).changed) return;
    const state = this.projection.current();
    for (const listener of this.readinessListeners) listener(state);
  }

  /**
   * The load builders' pools in catalog order, built anew only when the catalog or a worker's
   * liveness changed: the windows sample them every second. Every change of a served pool (added,
   * withdrawn, re-fenced, its spec updated) upserts or removes its descriptor, which makes a new
   * catalog state: the state's identity stands for the pools' specs and generations.
   */
  private loadInputs(): LoadMemo {
    const catalog = this.catalogState.current();
    if (this.load?.catalog === catalog && this.load.liveness === this.livenessVersion) return this.load;
    const pools = catalog.snapshot.pools.flatMap((d) => {
      const live = d.producer?.poolId && this.pools.get(poolIdDisplay(d.producer.poolId));
      return live ? [loadPool(live.spec, live.actor.producer, this.liveness)] : [];
    });
    this.load = { catalog, liveness: this.livenessVersion, pools };
    return this.load;
  }
}
