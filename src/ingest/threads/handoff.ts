// The hand-off of a decoded burst from an ingest thread to the main thread: the burst's four arrays
// copied into one ArrayBuffer that is transferred (moved, not cloned) with its postMessage, and the
// shared count of bursts and bytes handed off and not yet taken, which bounds what the main thread
// can find queued on a port (it handles a port's queue in one go: a long one would block its loop).
import { MESSAGE_INFO_STRIDE, type PackedEngineEvents } from '../types';

/** A burst as it travels between threads: `buffer` holds words, sequences, meta, then messageInfo. */
export interface HandedOffBurst {
  workerId: bigint;
  buffer: ArrayBuffer;
  words: number;
  meta: number;
  messages: number;
  droppedBlockSize: number;
}

/** The bytes packBurst allocates for `b`. */
export function burstBytes(b: PackedEngineEvents): number {
  return 8 * (b.words.length + b.messages) + 4 * (b.meta.length + b.messages * MESSAGE_INFO_STRIDE);
}

/** One allocation and four copies; the thread's burst arrays are reused for its next burst. */
export function packBurst(b: PackedEngineEvents): HandedOffBurst {
  const words = b.words.length;
  const meta = b.meta.length;
  const { messages } = b;
  const buffer = new ArrayBuffer(burstBytes(b));
  const view = layout(buffer, words, meta, messages);
  view.words.set(b.words);
  view.sequences.set(b.sequences);
  view.meta.set(b.meta);
  view.messageInfo.set(b.messageInfo);
  return { workerId: b.workerId, buffer, words, meta, messages, droppedBlockSize: b.droppedBlockSize };
}

/** Views over a received burst's buffer (no copy). */
export function unpackBurst(h: HandedOffBurst): PackedEngineEvents {
  return { workerId: h.workerId, messages: h.messages, droppedBlockSize: h.droppedBlockSize, ...layout(h.buffer, h.words, h.meta, h.messages) };
}

function layout(buffer: ArrayBuffer, words: number, meta: number, messages: number) {
  // 8-byte arrays first, so the 4-byte ones that follow stay aligned.
  const metaAt = 8 * (words + messages);
  return {
    words: new BigUint64Array(buffer, 0, words),
    sequences: new BigUint64Array(buffer, 8 * words, messages),
    meta: new Uint32Array(buffer, metaAt, meta),
    messageInfo: new Uint32Array(buffer, metaAt + 4 * meta, messages * MESSAGE_INFO_STRIDE),
  };
}

const BURSTS = 0;
const BYTES = 1;
/** 1 while the thread waits for room: the main thread wakes it only then (a notify per burst costs). */
const WAITING = 2;

export interface HandoffBounds {
  maxBursts: number;
  maxBytes: number;
  /** How long the thread waits for room before it drops the burst instead. */
  waitMs: number;
}

/**
 * Bursts and bytes in flight from one thread: the thread adds what it posts, the main thread
 * subtracts what it took and wakes the thread. Shared memory, so bounding the queue costs no
 * message back.
 */
export class HandoffCounter {
  private readonly counts: Int32Array;

  constructor(readonly shared: SharedArrayBuffer = new SharedArrayBuffer(12)) {
    this.counts = new Int32Array(shared);
  }

  /**
   * Thread side: counts one more burst of `bytes` once it fits the bounds, blocking this thread
   * meanwhile (back-pressure: its sockets queue in ZMQ, whose bound shows up as a gap and a replay).
   * False when no room came within `waitMs`: the caller drops the burst.
   */
  add(bytes: number, bounds: HandoffBounds): boolean {
    const deadline = performance.now() + bounds.waitMs;
    for (;;) {
      const bursts = Atomics.load(this.counts, BURSTS);
      // An empty hand-off takes any burst, so one larger than the byte bound is not refused forever.
      if (bursts <= 0 || (bursts < bounds.maxBursts && Atomics.load(this.counts, BYTES) + bytes <= bounds.maxBytes)) break;
      const left = deadline - performance.now();
      if (left <= 0) return false;
      Atomics.store(this.counts, WAITING, 1);
      Atomics.wait(this.counts, BURSTS, bursts, left);
      Atomics.store(this.counts, WAITING, 0);
    }
    Atomics.add(this.counts, BURSTS, 1);
    Atomics.add(this.counts, BYTES, bytes);
    return true;
  }

  /** Main side: a burst was taken. */
  taken(bytes: number): void {
    Atomics.sub(this.counts, BURSTS, 1);
    Atomics.sub(this.counts, BYTES, bytes);
    if (Atomics.load(this.counts, WAITING) === 1) Atomics.notify(this.counts, BURSTS);
  }
}
