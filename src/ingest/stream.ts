// Ordering of one engine publisher (one data-parallel rank): contiguous sequences, replay on first
// connect and on gaps, resets when history is lost (relay-config.md "Details"; engine-inputs.md §6).
// Transport-free: the subscriber feeds it socket events and supplies the replay client.
import type { ResetReason } from './types';

export interface ReplayHandle {
  cancel(): void;
}

export interface StreamHooks {
  /** Decode and hand one batch to the sink (malformed payloads are counted there). */
  deliver(sequence: bigint, payload: Buffer): void;
  /** The sink must forget this publisher's blocks. */
  reset(reason: ResetReason): void;
  gap(): void;
  /** Ask the engine to replay from `from`; null when the engine has no replay endpoint. */
  startReplay(from: bigint, stream: RankStream): ReplayHandle | null;
}

interface PendingReplay {
  handle: ReplayHandle;
  from: bigint;
  /** From 0 after a (re)connect or restart: the sink holds nothing of this publisher yet. */
  initial: boolean;
  /** Live messages held back until the replay ends. */
  buffered: { sequence: bigint; payload: Buffer }[];
}

export class RankStream {
  /** Last sequence delivered (or skipped as undecodable). */
  private last: bigint | null = null;
  /** Last sequence seen on the live connection; only this one detects a restart. */
  private lastLive: bigint | null = null;
  /** Whether the sink holds anything from this publisher since the last reset. */
  private delivered = false;
  private replay: PendingReplay | null = null;
  /** After close nothing reaches the sink, even a message the socket had already handed over. */
  private closed = false;

  constructor(
    private readonly hooks: StreamHooks,
    private readonly maxBufferedDuringReplay: number,
  ) {}

  get lastSequence(): bigint | null {
    return this.last;
  }

  /** A connection to the engine came up: recover what it published before, if it can replay. */
  connected(): void {
    if (this.closed) return;
    if (this.last === null && !this.replay) this.beginReplay(0n, true, []);
  }

  /** The connection was lost: the engine may have restarted, so its blocks are unknown. */
  disconnected(): void {
    if (this.closed) return;
    this.lastLive = null;
    this.cancelReplay();
    this.forget('disconnect');
  }

  live(sequence: bigint, payload: Buffer): void {
    if (this.closed) return;
    const previous = this.lastLive;
    this.lastLive = sequence;
    if (previous !== null && sequence <= previous) {
      // One connection's live stream went backwards: vLLM's sequence restarts at 0 with the process.
      this.cancelReplay();
      this.forget('restart');
      if (this.beginReplay(0n, true, [{ sequence, payload }])) return;
      return this.deliver(sequence, payload);
    }
    if (!this.replay) return this.accept(sequence, payload, true);
    this.replay.buffered.push({ sequence, payload });
    if (this.replay.buffered.length > this.maxBufferedDuringReplay) this.replayEnded(this.replay.handle, false);
  }

  replayed(handle: ReplayHandle, sequence: bigint, payload: Buffer): void {
    const replay = this.replay;
    if (replay?.handle !== handle) return;
    if (this.last === null) {
      // Only an initial replay starts with nothing delivered; the sink holds nothing to reset, but a
      // replay that starts later than asked means the engine's buffer no longer holds the start.
      if (sequence > replay.from) this.hooks.gap();
      return this.deliver(sequence, payload);
    }
    if (sequence <= this.last) return;
    // A gap replay that starts later than asked cannot cover the gap (counted when it was detected).
    if (sequence !== this.last + 1n) this.forget('gap');
    this.deliver(sequence, payload);
  }

  /** `complete` = the end marker arrived; otherwise the replay timed out, failed or overflowed. */
  replayEnded(handle: ReplayHandle, complete: boolean): void {
    const replay = this.replay;
    if (replay?.handle !== handle) return;
    this.replay = null;
    if (!complete) handle.cancel();
    // Held-back live messages continue the stream; what the replay already covered is skipped.
    // No new replay from here: a gap the replay did not cover is lost history.
    replay.buffered.forEach((msg, i) => {
      // A gap replay was started by buffered[0], whose gap is already counted.
      this.accept(msg.sequence, msg.payload, false, !replay.initial && i === 0);
    });
  }

  close(): void {
    this.closed = true;
    this.cancelReplay();
  }

  private accept(sequence: bigint, payload: Buffer, mayReplay: boolean, gapCounted = false): void {
    const last = this.last;
    if (last === null || sequence === last + 1n) return this.deliver(sequence, payload);
    // Already delivered by a replay, which can overtake the live connection.
    if (sequence <= last) return;
    if (!gapCounted) this.hooks.gap();
    if (mayReplay && this.beginReplay(last + 1n, false, [{ sequence, payload }])) return;
    this.forget('gap');
    this.deliver(sequence, payload);
  }

  private deliver(sequence: bigint, payload: Buffer): void {
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

  private beginReplay(from: bigint, initial: boolean, buffered: PendingReplay['buffered']): boolean {
    const handle = this.hooks.startReplay(from, this);
    if (!handle) return false;
    this.replay = { handle, from, initial, buffered };
    return true;
  }

  private cancelReplay(): void {
    this.replay?.handle.cancel();
    this.replay = null;
  }
}
