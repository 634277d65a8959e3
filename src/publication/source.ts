// The seam between the producer (which observes engines and owns pool state) and the publication
// layer (hubs, queues, gRPC transport). The producer implements RelaySource; tests may implement it
// directly to drive the service. Everything here is transport-neutral: domain values use the wire
// message shapes of src/wire/types.ts (camelCase proto field names, u64 as bigint, bytes as
// Uint8Array), but nothing here knows gRPC.
import type {
  KvPoolCatalogSnapshot,
  ProducerIdentity,
  KvPoolId,
  TopologyEntry,
  KvPoolLoadEntry,
  PoolServingLoad,
  ModelServingLoad,
} from '../wire/types';

export type Unsubscribe = () => void;

/** A complete catalog value; `revision` starts at 0 (empty) and grows by 1 on every change. */
export interface CatalogState {
  revision: bigint;
  snapshot: KvPoolCatalogSnapshot; // pools sorted by pool id
}

/** A complete readiness value; `revision` starts at 1 and grows only when entries change. */
export interface ReadinessState {
  revision: bigint;
  entries: TopologyEntry[];
}

/** A complete pool-load view at one instant (the load publisher stamps window numbers). */
export interface PoolLoadState {
  pools: KvPoolLoadEntry[];
}

/** A complete serving-load view at one instant. */
export interface ServingLoadState {
  pools: PoolServingLoad[];
  models: ModelServingLoad[];
}

/** One published delta of one producer generation, already CBI1-encoded by the producer. */
export interface DeltaFrame {
  baseSequence: bigint;
  sequence: bigint; // always baseSequence + 1
  imageCount: number;
  payload: Buffer; // CBI1 delta frame (header epoch = sequence, body base_epoch = baseSequence)
}

/** A consistent copy of a pool's bucket words at `sequence` (immutable once handed out). */
export interface PoolImage {
  sequence: bigint;
  words: BigUint64Array; // bucketCount words, bucket order
}

/** What the publication layer hears from a pool generation after attaching. */
export interface PoolListener {
  delta(frame: DeltaFrame): void;
  /** The generation ended (withdrawn, replaced, shutdown): streams end with PUBLICATION_UNAVAILABLE. */
  retired(): void;
  /** A producer-side invariant failure fenced the generation: streams end with INVALID_PUBLICATION. */
  fenced(reason: string): void;
}

/** One producer generation of one pool. */
export interface PoolFeed {
  readonly producer: ProducerIdentity;
  readonly dcId: bigint;
  /**
   * Publisher lease, as a barrier: pending changes are first flushed (published to the previous
   * listener, if any), then a consistent image at sequence N is taken off the event loop, and from
   * then on every delta N+1, N+2, … goes to `listener`. Without a listener the producer drops
   * deltas and does not advance its sequence. The publication hub attaches again with the same
   * listener whenever it needs a fresh image; deltas keep flowing to it across such re-attaches.
   */
  attach(listener: PoolListener): Promise<PoolImage>;
  /** Ends the lease: deltas are dropped again until the next attach. */
  detach(listener: PoolListener): void;
  /**
   * The listener's pacing request: publish slices `stretch` times the configured threshold and
   * delay (1 = as configured; see publication/pacing.ts). Optional: a feed may ignore it.
   */
  pace?(stretch: number): void;
}

export interface RelaySource {
  catalog(): CatalogState;
  onCatalog(listener: (state: CatalogState) => void): Unsubscribe;
  /** The current generation of a pool in the catalog, or undefined. */
  pool(poolId: KvPoolId): PoolFeed | undefined;
  readiness(): ReadinessState;
  onReadiness(listener: (state: ReadinessState) => void): Unsubscribe;
  /** Sampled by the load publisher once per load window. */
  poolLoad(): PoolLoadState;
  servingLoad(): ServingLoadState;
}
