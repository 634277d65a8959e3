// The hand-off of a decoded burst from an ingest thread to the main thread: the burst's four arrays
// copied into one ArrayBuffer that is transferred (moved, not cloned) with its postMessage, and the
// shared count of bursts and bytes handed off and not yet taken, which bounds what a slow main
// thread can leave queued.
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

/**
 * Bursts and bytes in flight from one thread: the thread adds what it posts, the main thread
 * subtracts what it took. Shared memory, so bounding the queue costs no message back.
 */
export class HandoffCounter {
  private readonly counts: Int32Array;

  constructor(readonly shared: SharedArrayBuffer = new SharedArrayBuffer(8)) {
    this.counts = new Int32Array(shared);
  }

  /** Thread side: whether one more burst of `bytes` fits the bounds; if so it is counted. */
  tryAdd(bytes: number, maxBursts: number, maxBytes: number): boolean {
    const bursts = Atomics.load(this.counts, BURSTS);
    const held = Atomics.load(this.counts, BYTES);
    // An empty hand-off takes any burst, so one larger than the byte bound is not refused forever.
    if (bursts > 0 && (bursts >= maxBursts || held + bytes > maxBytes)) return false;
    Atomics.add(this.counts, BURSTS, 1);
    Atomics.add(this.counts, BYTES, bytes);
    return true;
  }

  /** Main side: a burst was taken. */
  taken(bytes: number): void {
    Atomics.sub(this.counts, BURSTS, 1);
    Atomics.sub(this.counts, BYTES, bytes);
  }

  /** A new thread starts from nothing in flight. */
  clear(): void {
    Atomics.store(this.counts, BURSTS, 0);
    Atomics.store(this.counts, BYTES, 0);
  }
}
