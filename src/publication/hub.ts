// One publication hub per producer generation: it holds the generation's publisher lease (the
// PoolListener), remembers the recent deltas, encodes snapshot images once and shares them, and
// fans every delta out to its subscribers as one shared frame.
//
// Unlike the reference hub, it keeps no decoded mirror of the bucket array: the producer's attach
// barrier already yields consistent images off the event loop, so the hub re-attaches (same
// listener) when it needs a fresh image, and the remembered encoded deltas let a late subscriber
// share a recent snapshot encoding and catch up from it.
import { DEFAULT_PUBLICATION_CAPACITY, HUB_SNAPSHOT_ATTEMPTS, MAX_DELTA_IMAGES } from '../config/defaults';
import { FilterUpdateKind, RelayErrorReason } from '../wire/enums';
import { RelayError } from '../wire/errors';
import type { RelayIdentity } from '../wire/types';
import { SharedFrame } from './frames';
import type { QueuedPermits } from './permits';
import type { PublicationCounters } from './stats';
import { currentTurn } from './loop-turn';
import { nextStretch, QueueState } from './pacing';
import { encodeSnapshotFrames } from './snapshot';
import type { DeltaFrame, PoolFeed, PoolImage, PoolListener } from './source';

/** A snapshot image encoded into shared chunk frames. */
export interface HubSnapshot {
  sequence: bigint;
  chunks: SharedFrame[];
}

/** What a hub needs from its subscribers. */
export interface HubSubscriber {
  deliver(frame: SharedFrame): void;
  /**
   * Its queue at `now` (performance.now()) for pacing (pacing.ts): filling, draining or low. Called
   * once per judgement: "since the last judgement" counts from the previous call.
   */
  queueState(now: number): QueueState;
  end(error?: RelayError): void;
}

export interface HubContext {
  relay: RelayIdentity;
  encodingPermits: QueuedPermits;
  maxSubscribersPerPool: number;
  /** Deltas (and their accounted bytes) a new subscriber may catch up behind a shared snapshot. */
  replayLimit: number;
  replayBytes: number;
  /** Relay shutdown: waits are abandoned. */
  shutdown: AbortSignal;
  counters: PublicationCounters;
}

export const retiredError = (): RelayError =>
  new RelayError(RelayErrorReason.PUBLICATION_UNAVAILABLE, 'publication subscription requires a fresh snapshot');

export class PoolHub {
  private ready = false;
  private ended: RelayError | null | undefined; // undefined: open; null: ended cleanly
  /** Last sequence of the generation the hub has seen (valid once ready). */
  private sequence = 0n;
  private readonly recent: SharedFrame[] = [];
  private recentBytes = 0;
  /** Highest sequence dropped from `recent` by its bounds. */
  private forgottenThrough = -1n;
  private snapshot: HubSnapshot | undefined;
  private refreshing: Promise<HubSnapshot> | undefined;
  private readonly subscribers = new Set<HubSubscriber>();
  /** The slice stretch last asked of the feed. */
  private stretch = 1;
  /** The loop turn (loop-turn.ts) whose first delta pacing judged. */
  private pacedTurn = -1;
  private readonly abort = new AbortController();
  private readonly listener: PoolListener;
  /** Subscribe calls in progress; a hub with pending admissions is never evicted. */
  admissions = 0;
  /** The registry forgets the hub when it ends. */
  onEnded: (() => void) | undefined;

  constructor(
    readonly feed: PoolFeed,
    private readonly ctx: HubContext,
  ) {
    this.listener = {
      delta: (frame) => this.onDelta(frame),
      retired: () => this.end(retiredError()),
      fenced: (reason) => this.end(new RelayError(RelayErrorReason.INVALID_PUBLICATION, `pool generation fenced: ${reason}`)),
    };
  }

  get isEnded(): boolean {
    return this.ended !== undefined;
  }

  /** Holds a contiguous image of its generation: an image was adopted and every delta since continues it. */
  get isReady(): boolean {
    return this.ready && !this.isEnded;
  }

  /** Pool streams it serves now. */
  get subscriberCount(): number {
    return this.subscribers.size;
  }

  /** Initialized, without subscribers, admissions or snapshot work: it may be evicted. */
  get idle(): boolean {
    return this.ready && !this.isEnded && this.subscribers.size === 0 && this.admissions === 0 && !this.refreshing;
  }

  /**
   * Adds a subscriber: it gets a snapshot (shared with others when recent enough) plus the deltas
   * since that snapshot, then every new delta. Throws RelayError when it cannot be admitted.
   */
  async subscribe(subscriber: HubSubscriber): Promise<{ snapshot: HubSnapshot; replay: SharedFrame[] }> {
    this.admissions += 1;
    try {
      this.throwIfEnded();
      this.checkPerPoolLimit();
      const snapshot = await this.currentSnapshot();
      this.throwIfEnded();
      // Joining is synchronous from here: the replay and the live deltas neither overlap nor gap.
      const replay = this.recent.filter((f) => f.sequence > snapshot.sequence);
      const covered = replay.length === 0 ? this.sequence === snapshot.sequence : replay[0].baseSequence === snapshot.sequence;
      if (!covered || replay.length > this.ctx.replayLimit) throw retiredError();
      this.checkPerPoolLimit();
      this.subscribers.add(subscriber);
      return { snapshot, replay };
    } finally {
      this.admissions -= 1;
    }
  }

  private checkPerPoolLimit(): void {
    if (this.subscribers.size < this.ctx.maxSubscribersPerPool) return;
    this.ctx.counters.rejected('pool', 'per_pool');
    throw new RelayError(RelayErrorReason.RESOURCE_LIMIT, `Relay per-pool subscriber limit ${this.ctx.maxSubscribersPerPool} reached`);
  }

  unsubscribe(subscriber: HubSubscriber): void {
    this.subscribers.delete(subscriber);
  }

  /** Ends the hub and every subscriber: cleanly (shutdown, eviction) or with `error`. */
  end(error?: RelayError): void {
    if (this.isEnded) return;
    this.ended = error ?? null;
    this.abort.abort(error ?? new RelayError(RelayErrorReason.PUBLICATION_UNAVAILABLE, 'pool publication stopped'));
    this.feed.detach(this.listener);
    this.feed.pace?.(1);
    const subscribers = [...this.subscribers];
    this.subscribers.clear();
    this.recent.length = 0;
    this.recentBytes = 0;
    this.snapshot = undefined;
    for (const s of subscribers) s.end(error);
    this.onEnded?.();
  }

  // A snapshot is shared while a new subscriber can catch up from it through the recent deltas;
  // otherwise the hub takes a new image through the lease barrier.
  private currentSnapshot(): Promise<HubSnapshot> {
    if (this.refreshing) return this.refreshing;
    const shared = this.snapshot;
    if (shared && this.ready && this.canReplayFrom(shared.sequence)) return Promise.resolve(shared);
    const refreshing = this.takeSnapshot();
    this.refreshing = refreshing;
    const clear = (): void => {
      if (this.refreshing === refreshing) this.refreshing = undefined;
    };
    refreshing.then(clear, clear);
    return refreshing;
  }

  private canReplayFrom(sequence: bigint): boolean {
    if (this.sequence === sequence) return true;
    const oldest = this.recent[0];
    return this.sequence - sequence <= BigInt(this.ctx.replayLimit) && oldest !== undefined && oldest.baseSequence <= sequence;
  }

  private async takeSnapshot(): Promise<HubSnapshot> {
    const signal = AbortSignal.any([this.abort.signal, this.ctx.shutdown]);
    const release = await this.ctx.encodingPermits.acquire(signal).catch(() => {
      throw new RelayError(RelayErrorReason.PUBLICATION_UNAVAILABLE, 'pool generation retired while waiting for publication admission');
    });
    try {
      const image = await this.attachAndAdopt();
      let chunks: SharedFrame[];
      try {
        chunks = await encodeSnapshotFrames(this.ctx.relay, this.feed, image);
      } catch (err) {
        throw this.fail(`snapshot encode failed: ${messageOf(err)}`);
      }
      this.throwIfEnded();
      const snapshot = { sequence: image.sequence, chunks };
      this.snapshot = snapshot;
      return snapshot;
    } finally {
      release();
    }
  }

  // A producer much faster than its image copy can outrun the recent-delta memory; the image is
  // then taken again rather than treating the gap as a producer failure.
  private async attachAndAdopt(): Promise<PoolImage> {
    for (let attempt = 0; attempt < HUB_SNAPSHOT_ATTEMPTS; attempt += 1) {
      let image: PoolImage;
      try {
        image = await this.feed.attach(this.listener);
      } catch (err) {
        // Initialization failed (e.g. the generation ended meanwhile): unavailable, not a bad publication.
        const error = new RelayError(RelayErrorReason.PUBLICATION_UNAVAILABLE, `pool publication initialization failed: ${messageOf(err)}`);
        this.end(error);
        throw error;
      }
      this.throwIfEnded();
      if (this.adopt(image.sequence)) return image;
    }
    throw new RelayError(RelayErrorReason.PUBLICATION_UNAVAILABLE, 'pool publication outran its snapshot; resubscribe');
  }

  // Lines the hub's delta history up with an image taken through the barrier: deltas up to the
  // image are inside it, deltas after it must continue it without a gap. False when the deltas
  // right after the image were already forgotten.
  private adopt(imageSequence: bigint): boolean {
    const after = this.recent.filter((f) => f.sequence > imageSequence);
    const continues = after.length > 0 ? after[0].baseSequence === imageSequence : this.sequence === imageSequence;
    if (!continues && this.forgottenThrough > imageSequence) return false;
    let expected = imageSequence;
    for (const f of after) {
      if (f.baseSequence !== expected) throw this.fail(`delta ${f.baseSequence}->${f.sequence} does not continue image ${imageSequence}`);
      expected = f.sequence;
    }
    if (this.ready && expected !== this.sequence) throw this.fail(`image ${imageSequence} is ahead of the published sequence ${this.sequence}`);
    this.recent.splice(0, this.recent.length, ...after);
    this.recentBytes = after.reduce((sum, f) => sum + f.accountedBytes, 0);
    this.sequence = expected;
    this.ready = true;
    return true;
  }

  private onDelta(delta: DeltaFrame): void {
    if (this.isEnded) return;
    if (delta.imageCount > MAX_DELTA_IMAGES) {
      this.resnapshot(delta.sequence);
      return;
    }
    if (delta.imageCount === 0) {
      this.fail(`empty delta ${delta.sequence}`);
      return;
    }
    if (delta.sequence !== delta.baseSequence + 1n || (this.ready && delta.baseSequence !== this.sequence)) {
      this.fail(`non-contiguous delta ${delta.baseSequence}->${delta.sequence} after ${this.sequence}`);
      return;
    }
    const frame = new SharedFrame(this.ctx.relay, this.feed.producer, FilterUpdateKind.DELTA, delta.baseSequence, delta.sequence, delta.payload);
    if (this.ready) this.sequence = delta.sequence;
    this.remember(frame);
    if (this.snapshot && !this.canReplayFrom(this.snapshot.sequence)) this.snapshot = undefined;
    this.pace();
    for (const s of this.subscribers) s.deliver(frame);
  }

  // Judged once per turn of the event loop, at its first delta, before that delta is handed out: a
  // queue that took everything handed out in earlier turns is empty here, however fast deltas come.
  // Deltas later in the same turn (an apply job that ended several slices) are not judged: the
  // frames handed out before them in that turn cannot have been taken yet, and counting them
  // stretched the slice to 16 ms for a reader that kept up (bench delta-latency at half rate).
  private pace(): void {
    const turn = currentTurn();
    if (this.pacedTurn === turn) return;
    this.pacedTurn = turn;
    const now = performance.now();
    let state = QueueState.Low;
    for (const s of this.subscribers) state = Math.max(state, s.queueState(now));
    const stretch = nextStretch(this.stretch, state);
    if (stretch === this.stretch) return;
    this.stretch = stretch;
    this.feed.pace?.(stretch);
  }

  // The recent deltas are bounded like a subscriber queue: more could never be replayed anyway.
  private remember(frame: SharedFrame): void {
    this.recent.push(frame);
    this.recentBytes += frame.accountedBytes;
    while (this.recent.length > DEFAULT_PUBLICATION_CAPACITY || this.recentBytes > this.ctx.replayBytes) {
      const dropped = this.recent.shift()!;
      this.recentBytes -= dropped.accountedBytes;
      this.forgottenThrough = dropped.sequence;
    }
  }

  // A publication too big for one delta frame becomes a new snapshot: everyone subscribed so far
  // must resubscribe, and the next subscriber takes a fresh image.
  private resnapshot(sequence: bigint): void {
    const subscribers = [...this.subscribers];
    this.subscribers.clear();
    this.recent.length = 0;
    this.recentBytes = 0;
    this.forgottenThrough = sequence;
    this.snapshot = undefined;
    this.sequence = sequence;
    for (const s of subscribers) s.end(retiredError());
  }

  /** A producer-side invariant failure: the generation cannot be published any more. */
  private fail(reason: string): RelayError {
    const error = new RelayError(RelayErrorReason.INVALID_PUBLICATION, reason);
    this.end(error);
    return error;
  }

  private throwIfEnded(): void {
    if (this.ended === null) throw new RelayError(RelayErrorReason.PUBLICATION_UNAVAILABLE, 'Relay is shutting down');
    if (this.ended) throw this.ended;
  }
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
