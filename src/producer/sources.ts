// The running KV-event subscriptions, one per worker with `kvEvents`, reconciled against the wanted
// set after every deployment change. A subscription whose config changed is replaced; its new
// subscriber replays from the start, so the caller first drops what the old one delivered.
// Subscriptions run on the ingest threads (limits.ingestThreads) or on the main thread with 0
// threads: the same subscriber code either way. With threads, the pools can live on them too
// (hostPools): each worker then subscribes on its pool's thread and its bursts are applied there.
import { KvEventSubscriber } from '../ingest';
import { IngestThreads, type HostedSink } from '../ingest/threads/threads';
import type { IngestSink, KvEventEndpointConfig, KvEventSubscription, SourceKey, SourceStats } from '../ingest/types';
import type { Logger } from '../log';
import { ThreadPools, type ThreadPool, type ThreadPoolOptions } from './thread-pools';

/** What a worker without a subscription lists (one shared empty list). */
const NONE: readonly never[] = Object.freeze([]);

interface Live {
  signature: string;
  subscriber: KvEventSubscription;
}

export class KvSources {
  private readonly live = new Map<bigint, Live>();
  private readonly threads: IngestThreads | undefined;
  private readonly pools: ThreadPools | undefined;
  private closed = false;

  constructor(
    private readonly sink: IngestSink,
    private readonly logger: Logger,
    ingestThreads: number,
    /** Pools may be hosted on the ingest threads (openPool). */
    hostPools = false,
  ) {
    this.pools = ingestThreads > 0 && hostPools ? new ThreadPools() : undefined;
    this.threads = ingestThreads > 0 ? new IngestThreads({ threads: ingestThreads, logger, ...(this.pools ? { host: this.pools } : {}) }) : undefined;
    if (this.threads) this.pools?.bind(this.threads);
  }

  /** A pool generation fed by `workers` on an ingest thread, or undefined when pools are not hosted there. */
  openPool(options: ThreadPoolOptions, workers: readonly bigint[]): ThreadPool | undefined {
    return this.pools?.open(options, workers);
  }

  /**
   * Stops subscriptions no longer wanted or changed, then starts the missing ones. `replaced` hears
   * the old config of each subscription that is replaced by a different one for the same worker.
   * `hostedOf` names the thread-hosted pool a worker feeds (its bursts are applied on that pool's thread).
   */
  async reconcile(
    wanted: readonly KvEventEndpointConfig[],
    replaced: (old: KvEventEndpointConfig) => void,
    hostedOf: (workerId: bigint) => HostedSink | undefined = () => undefined,
  ): Promise<void> {
    const byWorker = new Map(wanted.map((c) => [c.workerId, c]));
    const stopping: Promise<void>[] = [];
    for (const [id, live] of this.live) {
      const want = byWorker.get(id);
      if (want && signature(want, hostedOf(id)) === live.signature) continue;
      this.live.delete(id);
      stopping.push(live.subscriber.close());
      if (want) replaced(live.subscriber.config);
    }
    await Promise.all(stopping);
    for (const [id, config] of byWorker) {
      if (this.live.has(id) || this.closed) continue;
      const hosted = hostedOf(id);
      const subscriber = this.threads ? this.threads.subscribe(config, this.sink, {}, hosted) : new KvEventSubscriber(config, this.sink, { logger: this.logger });
      this.live.set(id, { signature: signature(config, hosted), subscriber });
      try {
        await subscriber.start();
      } catch (err) {
        this.logger.error({ worker: id.toString(), err: (err as Error).message }, 'KV event subscriber failed to start');
      }
    }
  }

  /** Closes these workers' subscriptions; the next reconcile starts them afresh (replay from 0). */
  async stop(workerIds: readonly bigint[]): Promise<void> {
    const stopping: Promise<void>[] = [];
    for (const id of workerIds) {
      const live = this.live.get(id);
      if (!live) continue;
      this.live.delete(id);
      stopping.push(live.subscriber.close());
    }
    await Promise.all(stopping);
  }

  /** A worker's SUB endpoints (bind mode shows the chosen ports); read-only, shared between calls. */
  endpoints(workerId: bigint): readonly string[] {
    return this.live.get(workerId)?.subscriber.endpoints() ?? NONE;
  }

  /** A worker's counters by rank (its subscription's list: read-only, the same while unchanged). */
  workerStats(workerId: bigint): readonly SourceStats[] {
    return this.live.get(workerId)?.subscriber.stats() ?? NONE;
  }

  /**
   * A pool dropped `batches` batches of `source` on a full mailbox and reset it: its subscription
   * counts the overflows and replays the source from 0 (the engine still has what the pool dropped).
   */
  overflowed(source: SourceKey, batches: number): void {
    this.live.get(source.workerId)?.subscriber.overflowed(source, batches);
  }

  stats(): SourceStats[] {
    return [...this.live.values()].flatMap((l) => l.subscriber.stats());
  }

  /** Ingest threads that died and were restarted. */
  get threadRestarts(): number {
    return this.threads?.restarts ?? 0;
  }

  /** @internal The ingest threads (tests end one to see a death handled). */
  get ingestThreads(): IngestThreads | undefined {
    return this.threads;
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.stop([...this.live.keys()]);
    await this.threads?.close();
    // Their threads ended with them.
    this.pools?.closeAll();
  }
}

/** A subscription's identity: its config, and the pool sink it delivers to when hosted (a new generation's is another). */
function signature(config: KvEventEndpointConfig, hosted: HostedSink | undefined): string {
  return JSON.stringify({ config, hosted }, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
}
