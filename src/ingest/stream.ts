// Ordering of one engine publisher (one data-parallel rank): contiguous sequences, replay on first
// connect and on gaps, resets when history is lost (relay-config.md "Details"; engine-inputs.md §6).
// Messages held back (behind a replay, then while draining) are bounded in count and bytes: a replay
// whose held-back messages overflow is abandoned; a backlog that overflows is dropped, the source
// reset ('overflow') and replayed from 0 (the engine still has what the relay dropped), or, without
// a replay endpoint, continued from the next live message.
// A live sequence at or below the last one is a restart only once it is plausible: `restartConfirmations`
// contiguous messages from it (a restarted vLLM counts 0, 1, 2, ...) with none continuing the old
// stream in between. A single stray lower message (a second publisher on a bound port, a duplicate)
// is dropped and counted instead of resetting the worker.
// Transport-free: the subscriber feeds it socket events and supplies the replay client.
import type { ResetReason } from './types';

export interface ReplayHandle {
  cancel(): void;
}

export interface StreamHooks {
  /** Decode and hand one batch to the sink (malformed payloads are counted there). */
  deliver(sequence: bigint, payload: Uint8Array): void;
  /** The sink must forget this publisher's blocks. */
  reset(reason: ResetReason): void;
  gap(): void;
  /** Held-back messages overflowed the bounds and were dropped (a reset follows). */
  overflow(): void;
  /** Live messages below the stream's sequence that no restart confirmed were dropped. */
  outOfOrder(count: number): void;
  /** Ask the engine to replay from `from`; null when the engine has no replay endpoint. */
  startReplay(from: bigint, stream: RankStream): ReplayHandle | null;
  /** Runs `fn` on a later event-loop turn (held-back messages are drained a chunk per turn). */
  later(fn: () => void): void;
}

export interface StreamLimits {
  /** Live messages held back (during a replay and after it); beyond this the replay is abandoned or the backlog dropped. */
  maxBufferedDuringReplay: number;
  /** The same bound on their payload bytes. */
  maxBufferedBytes: number;
  /** Held-back messages handled per event-loop turn once a replay ends. */
  messagesPerTurn: number;
  /** Contiguous live messages from a lower sequence that make it a restart (1 = at once). */
  restartConfirmations: number;
  /**
   * Replies the replay socket queues (its receive high-water mark). The engine's ROUTER drops what
   * does not fit, silently, the tail included: a round that delivered at least this many may have
   * lost its tail before the end marker (see replayEnded()).
   */
  replayQueueMessages: number;
}

interface Held {
  sequence: bigint;
  payload: Uint8Array;
  /** Arrived while a replay ran: a gap it still shows is lost history, not a reason to replay again. */
  afterReplay: boolean;
  /** The gap this message revealed was counted when it started a replay. */
  gapCounted: boolean;
}

interface PendingReplay {
  handle: ReplayHandle;
  from: bigint;
  /** Live messages held back until the replay ends. */
  buffered: Held[];
  /** Whether a batch arrived yet (the first one shows where the engine's buffer starts). */
  answered: boolean;
  /** Batches this round delivered (see StreamLimits.replayQueueMessages). */
  deliveredCount: number;
}

export class RankStream {
  /** Last sequence delivered (or skipped as undecodable). */
  private last: bigint | null = null;
  /** Last sequence seen on the live connection; only this one detects a restart. */
  private lastLive: bigint | null = null;
  /** Whether the sink holds anything from this publisher since the last reset. */
  private delivered = false;
  private replay: PendingReplay | null = null;
  /** A run of live messages below lastLive that may be a restarted engine (at most restartConfirmations). */
  private suspect: Held[] = [];
  /** Messages held back by a replay that ended, handled before any newer live message. */
  private backlog: Held[] = [];
  private backlogHead = 0;
  /** Payload bytes of the messages held back (replay buffer and backlog). */
  private heldBytes = 0;
  private drainScheduled = false;
  /** After close nothing reaches the sink, even a message the socket had already handed over. */
  private closed = false;
  /**
   * A replay from here delivered nothing and ended unfinished (timed out, its socket failed, or given
   * up behind too many live messages): a first message past it shows history the engine had and the
   * sink will never see, a gap like any other (it was silent before: a dead replay ROUTER lost a
   * source's history without a trace).
   */
  private unrecoveredFrom: bigint | null = null;

  constructor(
    private readonly hooks: StreamHooks,
    private readonly limits: StreamLimits,
  ) {}

  get lastSequence(): bigint | null {
    return this.last;
  }

  /** A connection to the engine came up: recover what it published before, if it can replay. */
  connected(): void {
    if (this.closed) return;
    if (this.last === null && !this.replay && !this.hasBacklog()) this.beginReplay(0n, []);
  }

  /** The connection was lost: the engine may have restarted, so its blocks are unknown. */
  disconnected(): void {
    if (this.closed) return;
    this.lastLive = null;
    this.suspect = [];
    this.dropPending();
    this.forget('disconnect');
  }

  live(sequence: bigint, payload: Uint8Array): void {
    if (this.closed) return;
    const previous = this.lastLive;
    const suspect = this.suspect;
    const continuesSuspect = suspect.length > 0 && sequence === suspect[suspect.length - 1].sequence + 1n;
    if (continuesSuspect || (previous !== null && sequence <= previous)) {
      if (!continuesSuspect) this.dropSuspect();
      this.suspect.push(held(sequence, payload, true, false));
      if (this.suspect.length >= this.limits.restartConfirmations) this.restarted();
      return;
    }
    this.dropSuspect();
    this.lastLive = sequence;
    if (this.replay) {
      this.replay.buffered.push(held(sequence, payload, true, false));
      this.heldBytes += payload.length;
      if (this.replay.buffered.length > this.limits.maxBufferedDuringReplay || this.heldBytes > this.limits.maxBufferedBytes) {
        this.abandonReplay();
      }
      return;
    }
    if (this.hasBacklog()) {
      const count = this.backlog.length - this.backlogHead;
      if (count < this.limits.maxBufferedDuringReplay && this.heldBytes + payload.length <= this.limits.maxBufferedBytes) {
        this.backlog.push(held(sequence, payload, false, false));
        this.heldBytes += payload.length;
        return;
      }
      // Ingest stays behind the engine: what is held back goes, and the engine, which still has it,
      // replays from 0 to refill the source (without a replay endpoint the stream restarts here).
      this.hooks.overflow();
      if (this.refill([held(sequence, payload, true, false)])) return void (this.heldBytes += payload.length);
    }
    this.accept(sequence, payload, true, false);
  }

  /**
   * Batches this stream delivered were lost after it, by the relay (a full hand-off or pool mailbox),
   * not by the engine: the sink forgets the publisher and the engine replays from 0, as on a first
   * connect, so the source refills; without a replay endpoint it rebuilds from live events.
   */
  overflowed(): void {
    if (!this.closed) this.refill([]);
  }

  /** Drops what is pending, resets the sink ('overflow') and asks for a replay from 0, holding `held` behind it. */
  private refill(held: Held[]): boolean {
    this.dropPending();
    this.forget('overflow');
    return this.beginReplay(0n, held);
  }

  /** The live stream went backwards for good: vLLM's sequence restarts at 0 with the process. */
  private restarted(): void {
    const run = this.suspect;
    this.suspect = [];
    this.lastLive = run[run.length - 1].sequence;
    this.dropPending();
    this.forget('restart');
    if (this.beginReplay(0n, run)) {
      for (const m of run) this.heldBytes += m.payload.length;
      return;
    }
    for (const m of run) this.accept(m.sequence, m.payload, false, false);
  }

  /** The old stream went on: the lower messages were strays, not a restart. */
  private dropSuspect(): void {
    if (this.suspect.length === 0) return;
    this.hooks.outOfOrder(this.suspect.length);
    this.suspect = [];
  }

  replayed(handle: ReplayHandle, sequence: bigint, payload: Uint8Array): void {
    const replay = this.replay;
    if (replay?.handle !== handle) return;
    const first = !replay.answered;
    replay.answered = true;
    if (this.last === null) {
      // Only an initial replay starts with nothing delivered; the sink holds nothing to reset, but a
      // replay that starts later than asked means the engine's buffer no longer holds the start.
      if (sequence > replay.from) this.hooks.gap();
      replay.deliveredCount += 1;
      return this.deliver(sequence, payload);
    }
    if (sequence <= this.last) return;
    if (sequence === this.last + 1n) {
      replay.deliveredCount += 1;
      return this.deliver(sequence, payload);
    }
    if (!first) {
      // A hole inside the replies: the engine's ROUTER drops what overflows its pipe, but still
      // buffers the batches, so ask again from here (each round delivers at least one batch).
      handle.cancel();
      this.replay = null;
      if (this.beginReplay(this.last + 1n, replay.buffered)) return;
      // No new replay (closing): lose the hole, then what was held back continues the stream.
      this.forget('gap');
      this.deliver(sequence, payload);
      return this.resume(replay.buffered);
    }
    // The engine's buffer starts later than asked: the gap (counted when detected) is lost history.
    this.forget('gap');
    this.deliver(sequence, payload);
  }

  /** `complete` = the end marker arrived; otherwise the replay timed out or its socket failed. */
  replayEnded(handle: ReplayHandle, complete: boolean): void {
    const replay = this.replay;
    if (replay?.handle !== handle) return;
    this.replay = null;
    if (!complete) handle.cancel();
    if (!complete && this.last === null) this.unrecoveredFrom = replay.from;
    // The engine's ROUTER drops what its queue and ours cannot hold, its tail and end marker included
    // (the round then times out): a round that delivered a full queue's worth may have lost its tail,
    // unless the live messages held behind it continue from where it stopped. Otherwise another round
    // from the next sequence finds out (it answers just the end marker when nothing was lost); each
    // round must deliver that much to earn the next, and a publishing engine's live messages soon
    // continue the replay, so this ends.
    const next = this.last === null ? null : this.last + 1n;
    const liveContinues = replay.buffered.length > 0 && next !== null && replay.buffered[0].sequence <= next;
    const mayHaveLostTail = next !== null && !liveContinues && replay.deliveredCount >= this.limits.replayQueueMessages;
    if (mayHaveLostTail && this.beginReplay(next, replay.buffered)) return;
    this.resume(replay.buffered);
  }

  /** Live messages held back during the replay outgrew their bounds: the replay is given up. */
  private abandonReplay(): void {
    const replay = this.replay!;
    this.replay = null;
    replay.handle.cancel();
    if (this.last === null) this.unrecoveredFrom = replay.from;
    this.resume(replay.buffered);
  }

  close(): void {
    this.closed = true;
    this.suspect = [];
    this.dropPending();
  }

  /** Held-back live messages continue the stream (what a replay covered is skipped on the way). */
  private resume(held: Held[]): void {
    this.backlog = held;
    this.backlogHead = 0;
    this.drain();
  }

  private drain(): void {
    this.drainScheduled = false;
    for (let n = 0; n < this.limits.messagesPerTurn && this.hasBacklog() && !this.closed; n++) {
      const msg = this.backlog[this.backlogHead++];
      this.heldBytes -= msg.payload.length;
      this.accept(msg.sequence, msg.payload, !msg.afterReplay, msg.gapCounted);
      if (this.replay) {
        // A newer live message started another replay: the rest waits behind it.
        this.replay.buffered.push(...this.backlog.slice(this.backlogHead).map((m) => ({ ...m, afterReplay: true })));
        this.backlog = [];
        this.backlogHead = 0;
        return;
      }
    }
    if (!this.hasBacklog()) {
      this.backlog = [];
      this.backlogHead = 0;
    } else if (!this.drainScheduled && !this.closed) {
      this.drainScheduled = true;
      this.hooks.later(() => this.drain());
    }
  }

  private accept(sequence: bigint, payload: Uint8Array, mayReplay: boolean, gapCounted: boolean): void {
    const last = this.last;
    if (last === null && this.unrecoveredFrom !== null && sequence > this.unrecoveredFrom) this.hooks.gap();
    if (last === null || sequence === last + 1n) return this.deliver(sequence, payload);
    // Already delivered by a replay, which can overtake the live connection.
    if (sequence <= last) return;
    if (!gapCounted) this.hooks.gap();
    if (mayReplay && this.beginReplay(last + 1n, [held(sequence, payload, true, true)])) return void (this.heldBytes += payload.length);
    this.forget('gap');
    this.deliver(sequence, payload);
  }

  private deliver(sequence: bigint, payload: Uint8Array): void {
    this.unrecoveredFrom = null;
    this.last = sequence;
    this.delivered = true;
    this.hooks.deliver(sequence, payload);
  }

  private forget(reason: ResetReason): void {
    this.last = null;
    if (!this.delivered) return;
    this.delivered = false;
    this.hooks.reset(reason);
  }

  private beginReplay(from: bigint, buffered: Held[]): boolean {
    const handle = this.hooks.startReplay(from, this);
    if (!handle) return false;
    this.unrecoveredFrom = null;
    this.replay = { handle, from, buffered, answered: false, deliveredCount: 0 };
    return true;
  }

  private hasBacklog(): boolean {
    return this.backlogHead < this.backlog.length;
  }

  /** Drops the running replay and everything held back (their history is being discarded). */
  private dropPending(): void {
    this.replay?.handle.cancel();
    this.replay = null;
    this.backlog = [];
    this.backlogHead = 0;
    this.heldBytes = 0;
  }
}

function held(sequence: bigint, payload: Uint8Array, afterReplay: boolean, gapCounted: boolean): Held {
  // A live payload is a view valid only during live() (the socket reuses its arena): held ones are copied.
  return { sequence, payload: new Uint8Array(payload), afterReplay, gapCounted };
}
