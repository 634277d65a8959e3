// The transport-neutral KvEventRelay: admission (marker → subscriber_id → request → per-stream-type
// permit), then one stream kind per RPC. The transport hands each call a FrameSink and writes the
// bytes it gets; everything that decides what goes on a stream lives here.
import { DEFAULT_PUBLICATION_CAPACITY, type ServiceOptions } from '../config/defaults';
import { RelayErrorReason } from '../wire/enums';
import { RelayError } from '../wire/errors';
import { poolKey, producerKey } from '../wire/producer-key';
import type {
  RelayIdentity,
  SubscribeKvPoolLoadRequest,
  SubscribeKvPoolRequest,
  SubscribeServingLoadRequest,
  SubscribeServingReadinessRequest,
  WatchKvPoolCatalogRequest,
} from '../wire/types';
import { checkExpectedProducer, checkMarker, checkSubscriber } from './admission';
import { catalogMessage, poolLoadMessage, readinessMessage, servingLoadMessage } from './frames';
import { LatestWriter, repeatEvery } from './latest-writer';
import { Permits, QueuedPermits } from './permits';
import { PoolSubscriber } from './pool-subscriber';
import { HubRegistry } from './registry';
import { OpenStream, type FrameSink } from './sink';
import { PublicationCounters, type PublicationStats, type StreamKind } from './stats';
import type { CatalogState, PoolLoadState, ReadinessState, RelaySource, ServingLoadState, Unsubscribe } from './source';
import { WindowPublisher } from './windows';

export interface PublicationConfig {
  source: RelaySource;
  relay: RelayIdentity;
  options: ServiceOptions;
  /** A load plane stopped publishing; the relay treats this as fatal. */
  onFailure: (err: unknown) => void;
}

/** How each stream type names its limit in RESOURCE_LIMIT messages. */
const LIMIT_NAMES: Readonly<Record<StreamKind, string>> = {
  catalog: 'catalog stream',
  pool: 'total pool stream',
  readiness: 'readiness stream',
  load: 'load stream',
  serving_load: 'serving-load stream',
};

interface StreamRequest {
  subscriberId: string;
  contractMarker: number;
}

/** Encodes the latest value of a watched state once, however many streams send it. */
class EncodedLatest<S> {
  private cached: { state: S; bytes: Buffer } | undefined;

  constructor(
    private readonly current: () => S,
    private readonly encode: (state: S) => Buffer,
  ) {}

  bytes(): Buffer {
    const state = this.current();
    if (this.cached?.state !== state) this.cached = { state, bytes: this.encode(state) };
    return this.cached.bytes;
  }
}

export class Publication {
  private readonly permits: Record<StreamKind, Permits>;
  private readonly counters = new PublicationCounters();
  private readonly streams = new Set<OpenStream>();
  private readonly shutdown = new AbortController();
  private readonly hubs: HubRegistry;
  private readonly catalog: EncodedLatest<CatalogState>;
  private readonly readiness: EncodedLatest<ReadinessState>;
  readonly poolLoad: WindowPublisher<PoolLoadState>;
  readonly servingLoad: WindowPublisher<ServingLoadState>;
  private readonly stopWatchingCatalog: Unsubscribe;
  private closing = false;

  constructor(private readonly config: PublicationConfig) {
    const { source, relay, options } = config;
    const { limits, queues, timing, wan } = options;
    this.permits = {
      catalog: new Permits(limits.maxCatalogSubscribers),
      pool: new Permits(limits.maxPoolStreamsTotal),
      readiness: new Permits(limits.maxReadinessSubscribers),
      load: new Permits(limits.maxLoadSubscribers),
      serving_load: new Permits(limits.maxServingLoadSubscribers),
    };
    this.hubs = new HubRegistry(
      {
        relay,
        encodingPermits: new QueuedPermits(queues.encodingConcurrency),
        maxSubscribersPerPool: limits.maxSubscribersPerPool,
        replayLimit: Math.min(queues.publicationQueueCapacity, DEFAULT_PUBLICATION_CAPACITY),
        replayBytes: queues.publicationQueueBytes,
        shutdown: this.shutdown.signal,
        counters: this.counters,
      },
      limits.maxInitializedPoolHubs,
    );
    this.catalog = new EncodedLatest(() => source.catalog(), (s) => catalogMessage(relay, s));
    this.readiness = new EncodedLatest(() => source.readiness(), (s) => readinessMessage(relay, s));
    const windows = {
      windowMs: timing.loadWindowMs,
      fanoutCapacity: wan.loadFanoutCapacity,
      counters: this.counters,
      onFailure: config.onFailure,
    };
    this.poolLoad = new WindowPublisher({
      ...windows,
      kind: 'load',
      plane: 'pool load',
      sample: () => source.poolLoad(),
      encode: (w) => poolLoadMessage(relay, w),
    });
    this.servingLoad = new WindowPublisher({
      ...windows,
      kind: 'serving_load',
      plane: 'serving load',
      sample: () => source.servingLoad(),
      encode: (w) => servingLoadMessage(relay, w),
    });
    this.stopWatchingCatalog = source.onCatalog((state) => this.retireWithdrawnGenerations(state));
  }

  watchCatalog(request: WatchKvPoolCatalogRequest, sink: FrameSink): void {
    const { source, options } = this.config;
    this.sendLatest(this.admit(request, sink, 'catalog'), this.catalog, (l) => source.onCatalog(l), options.timing.catalogHeartbeatMs);
  }

  subscribeReadiness(request: SubscribeServingReadinessRequest, sink: FrameSink): void {
    const { source, options } = this.config;
    this.sendLatest(this.admit(request, sink, 'readiness'), this.readiness, (l) => source.onReadiness(l), options.timing.readinessHeartbeatMs);
  }

  subscribePoolLoad(request: SubscribeKvPoolLoadRequest, sink: FrameSink): void {
    const stream = this.admit(request, sink, 'load');
    if (stream) this.poolLoad.subscribe(stream);
  }

  subscribeServingLoad(request: SubscribeServingLoadRequest, sink: FrameSink): void {
    const stream = this.admit(request, sink, 'serving_load');
    if (stream) this.servingLoad.subscribe(stream);
  }

  /** SubscribeKvPool: wire-contract.md §6.2. Resolves when the stream is live or has ended. */
  async subscribePool(request: SubscribeKvPoolRequest, sink: FrameSink): Promise<void> {
    const stream = this.admit(request, sink, 'pool', () =>
      checkExpectedProducer(request.expectedProducer),
    );
    if (!stream) return;
    const expected = request.expectedProducer!;
    const wantedPool = poolKey(expected.poolId!);
    const wantedProducer = producerKey(expected);
    try {
      const listed = this.config.source
        .catalog()
        .snapshot.pools.find((d) => d.producer?.poolId && poolKey(d.producer.poolId) === wantedPool);
      if (!listed) throw new RelayError(RelayErrorReason.POOL_NOT_FOUND, `unknown pool ${wantedPool}`);
      if (producerKey(listed.producer!) !== wantedProducer) throw producerChanged();
      const feed = this.config.source.pool(expected.poolId!);
      if (!feed) throw new RelayError(RelayErrorReason.POOL_NOT_FOUND, 'publisher NotFound');
      if (producerKey(feed.producer) !== wantedProducer) throw producerChanged();
      const hub = this.hubs.hubFor(feed, wantedProducer, wantedPool);
      const { queues, timing } = this.config.options;
      const subscriber = new PoolSubscriber(stream, {
        relay: this.config.relay,
        producer: feed.producer,
        queueCapacity: queues.publicationQueueCapacity,
        queueBytes: queues.publicationQueueBytes,
        heartbeatMs: timing.poolHeartbeatMs,
        progressTimeoutMs: timing.snapshotProgressTimeoutMs,
        counters: this.counters,
      });
      const joined = await hub.subscribe(subscriber);
      stream.defer(() => hub.unsubscribe(subscriber));
      await subscriber.bootstrap(joined.snapshot, joined.replay);
    } catch (err) {
      stream.end(err instanceof RelayError ? err : new RelayError(RelayErrorReason.INTERNAL, String(err)));
    }
  }

  /** Shutdown: every stream ends cleanly, publishers stop, hubs let go of their generations. */
  close(): void {
    if (this.closing) return;
    this.closing = true;
    this.shutdown.abort(new RelayError(RelayErrorReason.PUBLICATION_UNAVAILABLE, 'Relay is shutting down'));
    this.stopWatchingCatalog();
    this.poolLoad.stop();
    this.servingLoad.stop();
    this.hubs.shutdown();
    for (const stream of [...this.streams]) stream.end();
  }

  /** Pool streams per generation (producer key; generations without a hub have none). */
  poolSubscribers(): Map<string, number> {
    return this.hubs.subscribersByProducer();
  }

  stats(): PublicationStats {
    return {
      subscribers: { ...this.counters.subscribers },
      laggedTotal: { ...this.counters.laggedTotal },
      limitRejectedTotal: { ...this.counters.limitRejectedTotal },
      poolHeartbeatsTotal: this.counters.poolHeartbeatsTotal,
      loadUpdatesTotal: this.counters.loadUpdatesTotal,
      requestedHubs: this.hubs.size,
      // Initializing a hub is adopting its first image, after which it stays ready until it ends.
      initializedHubs: this.hubs.readyCount,
      readyHubs: this.hubs.readyCount,
      idleHubs: this.hubs.idleCount,
    };
  }

  private admit(
    request: StreamRequest,
    sink: FrameSink,
    kind: StreamKind,
    validateRequest?: () => RelayError | undefined,
  ): OpenStream | undefined {
    const rejection = (): RelayError | undefined => {
      if (this.closing) return new RelayError(RelayErrorReason.PUBLICATION_UNAVAILABLE, 'Relay is shutting down');
      return checkMarker(request.contractMarker) ?? checkSubscriber(request.subscriberId) ?? validateRequest?.();
    };
    const error = rejection();
    if (error) {
      sink.end(error);
      return undefined;
    }
    const permits = this.permits[kind];
    const release = permits.tryAcquire();
    if (!release) {
      this.counters.rejected(kind, 'total');
      sink.end(new RelayError(RelayErrorReason.RESOURCE_LIMIT, `Relay ${LIMIT_NAMES[kind]} limit ${permits.limit} reached`));
      return undefined;
    }
    const stream = new OpenStream(sink);
    this.streams.add(stream);
    this.counters.subscribers[kind] += 1;
    stream.defer(() => {
      release();
      this.streams.delete(stream);
      this.counters.subscribers[kind] -= 1;
    });
    return stream;
  }

  // A revisioned state stream: the latest value now, on every change, and again every heartbeat.
  private sendLatest<S>(stream: OpenStream | undefined, latest: EncodedLatest<S>, onChange: (listener: () => void) => Unsubscribe, heartbeatMs: number): void {
    if (!stream) return;
    const writer = new LatestWriter(stream, () => latest.bytes());
    writer.request();
    stream.defer(onChange(() => writer.request()));
    repeatEvery(stream, heartbeatMs, () => writer.request());
  }

  // A generation that left the catalog (withdrawn or replaced) can no longer be published.
  private retireWithdrawnGenerations(state: CatalogState): void {
    const live = new Set<string>();
    for (const d of state.snapshot.pools) if (d.producer) live.add(producerKey(d.producer));
    this.hubs.retireAbsent(live);
  }
}

function producerChanged(): RelayError {
  return new RelayError(RelayErrorReason.PRODUCER_CHANGED, 'requested producer is no longer active');
}
