// An in-process RelaySource that tests drive directly: set the catalog, readiness and load, and
// publish pool changes through feeds backed by a plain words array (deltas encoded by the native
// CBI1 codec, exactly as the producer does).
import { DEFAULT_CKF_SEED } from '../../src/config/defaults';
import { encodeDelta } from '../../src/native';
import type {
  CatalogState,
  DeltaFrame,
  PoolFeed,
  PoolImage,
  PoolListener,
  PoolLoadState,
  ReadinessState,
  RelaySource,
  ServingLoadState,
  Unsubscribe,
} from '../../src/publication/source';
import { IdentitySource, KvQueryHashFormat, WorkerRole } from '../../src/wire/enums';
import { poolKey } from '../../src/wire/producer-key';
import type { KvPoolDescriptor, KvPoolId, ProducerIdentity, TopologyEntry } from '../../src/wire/types';

export const TEST_INCARNATION = 0x1234_5678_9abc_def0n;

export interface TestProducerSpec {
  /** Distinguishes pools: the digests and dc id derive from it. */
  pool?: number;
  layoutGeneration?: bigint;
  bucketCount?: number;
  incarnation?: bigint;
}

function digest(tag: number, pool: number): Uint8Array {
  const d = new Uint8Array(16);
  d[0] = tag;
  new DataView(d.buffer).setUint32(12, pool, true);
  return d;
}

export function testPoolId(pool = 1): KvPoolId {
  return {
    identityVersion: 1,
    indexerDomain: {
      cacheSemantics: { digest: digest(0xc5, pool), source: IdentitySource.DEFAULT_DERIVED },
      routingScope: { digest: digest(0x75, pool), source: IdentitySource.DEFAULT_DERIVED },
    },
    dcId: 0xdc00_0000_0000_0000n + BigInt(pool),
  };
}

export function testProducer(spec: TestProducerSpec = {}): ProducerIdentity {
  return {
    poolId: testPoolId(spec.pool ?? 1),
    producerIncarnation: spec.incarnation ?? TEST_INCARNATION,
    layoutGeneration: spec.layoutGeneration ?? 1n,
    ckfFormat: {
      formatVersion: 1,
      seed: DEFAULT_CKF_SEED,
      bucketCount: BigInt(spec.bucketCount ?? 16),
      fingerprintBits: 16,
      slotsPerBucket: 4,
    },
  };
}

export function testDescriptor(producer: ProducerIdentity): KvPoolDescriptor {
  return {
    producer,
    servingEndpoint: { namespace: 'dynamo', component: 'backend', endpoint: 'generate' },
    registrations: [{ canonicalModelId: 'llama', target: { base: { baseModel: 'llama' } }, aliases: ['chat'] }],
    querySemantics: { kvBlockSize: 64, hashFormat: KvQueryHashFormat.DYNAMO_STANDARD_V1 },
    poolRoles: [WorkerRole.LEGACY],
  };
}

/** One producer generation whose state is a words array; deltas go to the attached listener. */
export class TestPoolFeed implements PoolFeed {
  readonly dcId: bigint;
  readonly words: BigUint64Array;
  private listener: PoolListener | undefined;
  private sequence = 0n;
  attachCount = 0;

  constructor(readonly producer: ProducerIdentity) {
    this.dcId = producer.poolId!.dcId;
    this.words = new BigUint64Array(Number(producer.ckfFormat!.bucketCount));
  }

  get attached(): boolean {
    return this.listener !== undefined;
  }

  get lastSequence(): bigint {
    return this.sequence;
  }

  async attach(listener: PoolListener): Promise<PoolImage> {
    this.attachCount += 1;
    this.listener = listener;
    return { sequence: this.sequence, words: this.words.slice() };
  }

  detach(listener: PoolListener): void {
    if (this.listener === listener) this.listener = undefined;
  }

  /** Writes bucket words; publishes them as one delta when a listener holds the lease. */
  publish(images: Array<[bucket: number, value: bigint]>): DeltaFrame | undefined {
    for (const [bucket, value] of images) this.words[bucket] = value;
    if (!this.listener) return undefined;
    const buckets = Uint32Array.from(images.map(([b]) => b));
    const values = BigUint64Array.from(images.map(([, v]) => v));
    const frame: DeltaFrame = {
      baseSequence: this.sequence,
      sequence: this.sequence + 1n,
      imageCount: images.length,
      payload: encodeDelta(this.producer.ckfFormat!, this.dcId, this.sequence, this.sequence + 1n, buckets, values),
    };
    this.sequence += 1n;
    this.listener.delta(frame);
    return frame;
  }

  /** A publication too large for one delta frame (the payload is never sent). */
  publishOversized(imageCount: number): void {
    if (!this.listener) return;
    this.sequence += 1n;
    this.listener.delta({ baseSequence: this.sequence - 1n, sequence: this.sequence, imageCount, payload: Buffer.alloc(0) });
  }

  /** Sends a delta that does not continue the sequence (a producer bug). */
  publishOutOfSequence(): void {
    this.listener?.delta({ baseSequence: this.sequence + 5n, sequence: this.sequence + 6n, imageCount: 1, payload: Buffer.alloc(60) });
  }

  retire(): void {
    this.listener?.retired();
  }

  fence(reason: string): void {
    this.listener?.fenced(reason);
  }
}

export class TestSource implements RelaySource {
  private catalogState: CatalogState = { revision: 0n, snapshot: { pools: [] } };
  private readinessState: ReadinessState = { revision: 1n, entries: [] };
  private readonly feeds = new Map<string, TestPoolFeed>();
  private readonly catalogListeners = new Set<(s: CatalogState) => void>();
  private readonly readinessListeners = new Set<(s: ReadinessState) => void>();
  poolLoadState: PoolLoadState = { pools: [] };
  /** When set, sampling the pool load throws it (a failed load aggregate). */
  poolLoadError: Error | undefined;
  servingLoadState: ServingLoadState = { pools: [], models: [] };

  /** Attaches (or replaces) the pool's generation and publishes the new catalog. */
  attachPool(producer: ProducerIdentity, descriptor: KvPoolDescriptor = testDescriptor(producer)): TestPoolFeed {
    const feed = new TestPoolFeed(producer);
    const key = poolKey(producer.poolId!);
    this.feeds.set(key, feed);
    const pools = this.catalogState.snapshot.pools.filter((d) => poolKey(d.producer!.poolId!) !== key);
    pools.push(descriptor);
    pools.sort((a, b) => poolKey(a.producer!.poolId!).localeCompare(poolKey(b.producer!.poolId!)));
    this.setCatalog(pools);
    return feed;
  }

  withdrawPool(poolId: KvPoolId): void {
    const key = poolKey(poolId);
    this.feeds.delete(key);
    this.setCatalog(this.catalogState.snapshot.pools.filter((d) => poolKey(d.producer!.poolId!) !== key));
  }

  setReadiness(entries: TopologyEntry[]): void {
    this.readinessState = { revision: this.readinessState.revision + 1n, entries };
    for (const l of [...this.readinessListeners]) l(this.readinessState);
  }

  catalog(): CatalogState {
    return this.catalogState;
  }

  onCatalog(listener: (state: CatalogState) => void): Unsubscribe {
    this.catalogListeners.add(listener);
    return () => this.catalogListeners.delete(listener);
  }

  pool(poolId: KvPoolId): PoolFeed | undefined {
    return this.feeds.get(poolKey(poolId));
  }

  readiness(): ReadinessState {
    return this.readinessState;
  }

  onReadiness(listener: (state: ReadinessState) => void): Unsubscribe {
    this.readinessListeners.add(listener);
    return () => this.readinessListeners.delete(listener);
  }

  poolLoad(): PoolLoadState {
    if (this.poolLoadError) throw this.poolLoadError;
    return this.poolLoadState;
  }

  servingLoad(): ServingLoadState {
    return this.servingLoadState;
  }

  get catalogListenerCount(): number {
    return this.catalogListeners.size;
  }

  private setCatalog(pools: KvPoolDescriptor[]): void {
    this.catalogState = { revision: this.catalogState.revision + 1n, snapshot: { pools } };
    for (const l of [...this.catalogListeners]) l(this.catalogState);
  }
}
