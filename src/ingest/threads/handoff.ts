// The hand-off of decoded bursts from an ingest thread to the main thread: every burst its sockets
// decoded in one turn of the thread, copied into one region of a ring of shared memory (or, when the
// ring has no room, into an ArrayBuffer that is transferred) and announced with one postMessage, and
// the shared count of what was handed off and not yet applied by the pools. That count bounds the
// pool mailboxes' share of this thread (messages, blocks) and the bytes in flight, and what the main
// thread finds queued on a port (it handles a port's queue in one go). The hand-off also carries its
// own index (where each burst sits) as 8-byte slots ahead of the bursts: the postMessage then clones
// no object (a clone of the index as objects cost ~2-3 times the CPU of the rest of the postMessage,
// on each side).
import { INGEST_RETAINED_BUFFER_BYTES } from '../../config/defaults';
import { MESSAGE_INFO_STRIDE, type PackedEngineEvents } from '../types';

/** A burst inside a hand-off: its subscription, and where its arrays sit in the hand-off's buffer. */
export interface HandedOffBurst {
  id: number;
  workerId: bigint;
  /** Byte offset of its section (8-aligned): words, sequences, meta, then messageInfo. */
  at: number;
  words: number;
  meta: number;
  messages: number;
  /** Engine ids its events carry (the pool mailbox's block permits). */
  blocks: number;
  droppedBlockSize: number;
  receivedAtMs: number;
}

/** One hand-off: `length` bytes at `base` of its buffer (readHandoff() gives the rest back). */
export interface Handoff {
  /** The thread's ring (HandoffRing.data), or an ArrayBuffer of its own that the postMessage transfers. */
  buffer: ArrayBuffer | SharedArrayBuffer;
  base: number;
  length: number;
  bursts: HandedOffBurst[];
  /** Engine messages and blocks of all its bursts (the pool mailbox's units). */
  messages: number;
  blocks: number;
}

// Index slots: messages, blocks, bursts; per burst its HandedOffBurst fields.
const HEAD_SLOTS = 3;
const BURST_SLOTS = 9;

/** The bytes a burst's section takes (8-aligned, so the next section's 8-byte arrays stay aligned). */
export function burstBytes(b: PackedEngineEvents): number {
  return sectionBytes(b.words.length, b.meta.length, b.messages);
}

/** What a handed-off burst counts against its subscription's bounds (FlowCounter). */
export function handedOffSize(h: HandedOffBurst): HandoffSize {
  return { messages: h.messages, blocks: h.blocks, bytes: sectionBytes(h.words, h.meta, h.messages) };
}

function sectionBytes(words: number, meta: number, messages: number): number {
  const bytes = 8 * (words + messages) + 4 * (meta + messages * MESSAGE_INFO_STRIDE);
  return (bytes + 7) & ~7;
}

const INITIAL_BYTES = 64 * 1024;

/** Collects a turn's bursts into one staging buffer (reused); take() copies them out once. */
export class HandoffBuilder {
  private staging = new ArrayBuffer(INITIAL_BYTES);
  private length = 0;
  private bursts: HandedOffBurst[] = [];
  private messageCount = 0;
  private blockCount = 0;

  get isEmpty(): boolean {
    return this.bursts.length === 0;
  }

  get bytes(): number {
    return this.length;
  }

  get messages(): number {
    return this.messageCount;
  }

  get blocks(): number {
    return this.blockCount;
  }

  /** Copies subscription `id`'s burst `b` (its arrays are reused once this returns); `blocks` in it. */
  add(id: number, b: PackedEngineEvents, blocks: number): void {
    const bytes = burstBytes(b);
    if (this.length + bytes > this.staging.byteLength) {
      let size = this.staging.byteLength * 2;
      while (size < this.length + bytes) size *= 2;
      const grown = new ArrayBuffer(size);
      new Uint8Array(grown).set(new Uint8Array(this.staging, 0, this.length));
      this.staging = grown;
    }
    const words = b.words.length;
    const meta = b.meta.length;
    const { messages } = b;
    const view = layout(this.staging, this.length, words, meta, messages);
    view.words.set(b.words);
    view.sequences.set(b.sequences);
    view.meta.set(b.meta);
    view.messageInfo.set(b.messageInfo);
    this.bursts.push({ id, workerId: b.workerId, at: this.length, words, meta, messages, blocks, droppedBlockSize: b.droppedBlockSize, receivedAtMs: b.receivedAtMs });
    this.length += bytes;
    this.messageCount += messages;
    this.blockCount += blocks;
  }

  /**
   * The collected bursts, copied once: into `ring` where it has room, else into a buffer of their
   * own. The builder is empty again.
   */
  take(ring?: HandoffRing): Handoff {
    const slots = HEAD_SLOTS + BURST_SLOTS * this.bursts.length;
    const length = 8 * slots + this.length;
    const placed = ring?.place(length);
    const buffer = placed === undefined ? new ArrayBuffer(length) : ring!.data;
    const base = placed ?? 0;
    new Uint8Array(buffer, base + 8 * slots, this.length).set(new Uint8Array(this.staging, 0, this.length));
    const f = new Float64Array(buffer, base, slots);
    const u = new BigUint64Array(buffer, base, slots);
    f[0] = this.messageCount;
    f[1] = this.blockCount;
    f[2] = this.bursts.length;
    let at = HEAD_SLOTS;
    for (const b of this.bursts) {
      b.at += base + 8 * slots;
      f[at] = b.id;
      f[at + 1] = b.at;
      f[at + 2] = b.words;
      f[at + 3] = b.meta;
      f[at + 4] = b.messages;
      f[at + 5] = b.droppedBlockSize;
      u[at + 6] = b.workerId;
      f[at + 7] = b.receivedAtMs;
      f[at + 8] = b.blocks;
      at += BURST_SLOTS;
    }
    const handoff: Handoff = { buffer, base, length, bursts: this.bursts, messages: this.messageCount, blocks: this.blockCount };
    // Staging a burst of large messages grew is given back (issue 26 item 2).
    if (this.staging.byteLength > INGEST_RETAINED_BUFFER_BYTES) this.staging = new ArrayBuffer(INITIAL_BYTES);
    this.length = 0;
    this.bursts = [];
    this.messageCount = 0;
    this.blockCount = 0;
    return handoff;
  }
}

/** The message that announces a hand-off: a region of the ring, or a buffer of its own (transferred). */
export interface HandoffMessage {
  type: 'events';
  base: number;
  length: number;
  buffer?: ArrayBuffer;
}

/** Posts a taken hand-off on `port` (thread side). */
export function postHandoff(port: { postMessage(m: HandoffMessage, transfer?: ArrayBuffer[]): void }, h: Handoff, ring: HandoffRing): void {
  if (h.buffer === ring.data) {
    ring.posted(h.base, h.length);
    port.postMessage({ type: 'events', base: h.base, length: h.length });
  } else {
    const buffer = h.buffer as ArrayBuffer;
    port.postMessage({ type: 'events', base: 0, length: h.length, buffer }, [buffer]);
  }
}

/** A received hand-off's bursts (as take() returned them). */
export function readHandoff(buffer: ArrayBuffer | SharedArrayBuffer, base = 0, length = buffer.byteLength): Handoff {
  const head = new Float64Array(buffer, base, HEAD_SLOTS);
  const [messages, blocks, burstCount] = head;
  // The index's own length is known only once it is read: views over every whole slot of the hand-off.
  const f = new Float64Array(buffer, base, length >> 3);
  const u = new BigUint64Array(buffer, base, length >> 3);
  const bursts: HandedOffBurst[] = [];
  let at = HEAD_SLOTS;
  for (let i = 0; i < burstCount; i++, at += BURST_SLOTS) {
    bursts.push({ id: f[at], at: f[at + 1], words: f[at + 2], meta: f[at + 3], messages: f[at + 4], droppedBlockSize: f[at + 5], workerId: u[at + 6], receivedAtMs: f[at + 7], blocks: f[at + 8] });
  }
  return { buffer, base, length, bursts, messages, blocks };
}

/** Views over a received burst's section of its hand-off's buffer (no copy). */
export function unpackBurst(buffer: ArrayBuffer | SharedArrayBuffer, h: HandedOffBurst): PackedEngineEvents {
  return { workerId: h.workerId, messages: h.messages, droppedBlockSize: h.droppedBlockSize, receivedAtMs: h.receivedAtMs, ...layout(buffer, h.at, h.words, h.meta, h.messages) };
}

function layout(buffer: ArrayBuffer | SharedArrayBuffer, at: number, words: number, meta: number, messages: number) {
  // 8-byte arrays first, so the 4-byte ones that follow stay aligned.
  const metaAt = at + 8 * (words + messages);
  return {
    words: new BigUint64Array(buffer, at, words),
    sequences: new BigUint64Array(buffer, at + 8 * words, messages),
    meta: new Uint32Array(buffer, metaAt, meta),
    messageInfo: new Uint32Array(buffer, metaAt + 4 * meta, messages * MESSAGE_INFO_STRIDE),
  };
}

/**
 * The shared memory an ingest thread writes its hand-offs into, one per thread incarnation. A
 * hand-off announced by postMessage over a region of it allocates nothing on the main thread: each
 * transferred ArrayBuffer counted as new external memory there, and at full ingest (~70 MB/s of
 * hand-offs) V8 answered with a scavenge every ~200 ms, pausing the event loop 1-7 ms each time.
 * The main thread reads a hand-off at once (IngestSink.events copies what it keeps), in the order the
 * thread posted them, so a region is free again as soon as its message was handled: the ring's tail
 * is the end of the last one read, and the thread writes only where no unread hand-off lies.
 */
export class HandoffRing {
  readonly data: SharedArrayBuffer;
  readonly control: SharedArrayBuffer;
  private readonly tail: Int32Array;
  /** Thread side: where the next hand-off goes (the end of the last one posted). */
  private head = 0;

  /** `bytes` (8-aligned, below 2^31) for a new ring, or the shared memory of one made elsewhere. */
  constructor(from: number | { data: SharedArrayBuffer; control: SharedArrayBuffer }) {
    this.data = typeof from === 'number' ? new SharedArrayBuffer(from) : from.data;
    this.control = typeof from === 'number' ? new SharedArrayBuffer(4) : from.control;
    this.tail = new Int32Array(this.control);
  }

  /**
   * Thread side: where a hand-off of `bytes` fits, or undefined. The head never catches up with the
   * tail, so equal head and tail mean that every hand-off was read.
   */
  place(bytes: number): number | undefined {
    const tail = Atomics.load(this.tail, 0);
    if (this.head < tail) return this.head + bytes < tail ? this.head : undefined;
    if (this.head + bytes < this.data.byteLength) return this.head;
    return bytes < tail ? 0 : undefined;
  }

  /** Thread side: the hand-off placed at `base` was posted. */
  posted(base: number, bytes: number): void {
    this.head = base + bytes;
  }

  /** Main side: the hand-off that ends at `end` was read; its region, and every one before it, is free. */
  read(end: number): void {
    Atomics.store(this.tail, 0, end);
  }
}

const MESSAGES = 0;
const BLOCKS = 1;
const BYTES = 2;
/** A FlowCounter's slots. */
const FLOW_SLOTS = 3;
/** HandoffCounter: bumped by every taken(), what a waiting thread waits on. */
const TAKEN = 3;
/** HandoffCounter: 1 while the thread waits for room: the main thread wakes it only then (a notify per hand-off costs). */
const WAITING = 4;
const SLOTS = 5;

export interface HandoffBounds {
  /** Engine messages (a pool mailbox counts each as a batch)... */
  maxMessages: number;
  /** ...their blocks (the mailbox's block permits)... */
  maxBlocks: number;
  /** ...and their bytes, in flight from one thread (shared by its subscriptions: FlowCounter.fits). */
  maxBytes: number;
  /** How long a subscription's bursts wait for room before they are dropped instead. */
  waitMs: number;
}

/** What one hand-off or burst holds, in the units of the bounds. */
export interface HandoffSize {
  messages: number;
  blocks: number;
  bytes: number;
}

/**
 * Messages, blocks and bytes in flight from one subscription on an ingest thread: the thread adds
 * what it hands off, the main thread subtracts what the pools applied. Shared memory, so bounding
 * the queue costs no message back. One per subscription (issue 26 item 5): a subscription whose
 * pool is slow fills only its own count, and only its own sockets wait (the thread polls for room),
 * where a count per thread let one engine's large bursts make every other engine on the thread wait
 * and then drop theirs.
 */
export class FlowCounter {
  private readonly counts: Int32Array;

  constructor(readonly shared: SharedArrayBuffer = new SharedArrayBuffer(FLOW_SLOTS * 4)) {
    this.counts = new Int32Array(shared);
  }

  /** Thread side: messages in flight (0: nothing of this subscription waits to be applied). */
  get messages(): number {
    return Atomics.load(this.counts, MESSAGES);
  }

  /**
   * Thread side: whether `size` more fits this subscription's share of the thread's bounds: the
   * bounds divided by `active()`, the subscriptions of the thread with something in flight (this one
   * included). One with nothing in flight takes anything, so a burst larger than a share is not
   * refused forever and each subscription always has one burst's room of its own; it so never
   * counts the others (a walk over every subscription of the thread, per burst: at 512 sources
   * and low rates nearly every burst finds its subscription with nothing in flight).
   */
  fits(size: HandoffSize, bounds: HandoffBounds, active: () => number): boolean {
    const messages = this.messages;
    if (messages <= 0) return true;
    const share = Math.max(1, active());
    return (
      messages + size.messages <= bounds.maxMessages / share &&
      Atomics.load(this.counts, BLOCKS) + size.blocks <= bounds.maxBlocks / share &&
      Atomics.load(this.counts, BYTES) + size.bytes <= bounds.maxBytes / share
    );
  }

  /** Thread side: `size` was handed off. */
  add(size: HandoffSize): void {
    Atomics.add(this.counts, MESSAGES, size.messages);
    Atomics.add(this.counts, BLOCKS, size.blocks);
    Atomics.add(this.counts, BYTES, size.bytes);
  }

  /** Main side: `size` was applied (or dropped). */
  taken(size: HandoffSize): void {
    Atomics.sub(this.counts, MESSAGES, size.messages);
    Atomics.sub(this.counts, BLOCKS, size.blocks);
    Atomics.sub(this.counts, BYTES, size.bytes);
  }
}

/**
 * Messages, blocks and bytes in flight from one thread: the thread adds what it posts, the main
 * thread subtracts what its pools applied and wakes the thread. Shared memory, so bounding the
 * queue costs no message back.
 */
export class HandoffCounter {
  private readonly counts: Int32Array;

  constructor(readonly shared: SharedArrayBuffer = new SharedArrayBuffer(SLOTS * 4)) {
    this.counts = new Int32Array(shared);
  }

  /**
   * Thread side: counts one more hand-off once it fits the bounds, blocking this thread meanwhile
   * (back-pressure: its sockets queue in ZMQ, whose bound shows up as a gap and a replay).
   * False when no room came within `waitMs`: the caller drops the hand-off.
   */
  add(size: HandoffSize, bounds: HandoffBounds): boolean {
    const deadline = performance.now() + bounds.waitMs;
    for (;;) {
      const taken = Atomics.load(this.counts, TAKEN);
      if (this.fits(size, bounds)) break;
      const left = deadline - performance.now();
      if (left <= 0) return false;
      Atomics.store(this.counts, WAITING, 1);
      Atomics.wait(this.counts, TAKEN, taken, left);
      Atomics.store(this.counts, WAITING, 0);
    }
    Atomics.add(this.counts, MESSAGES, size.messages);
    Atomics.add(this.counts, BLOCKS, size.blocks);
    Atomics.add(this.counts, BYTES, size.bytes);
    return true;
  }

  /** Main side: a hand-off was applied (or dropped). */
  taken(size: HandoffSize): void {
    Atomics.sub(this.counts, MESSAGES, size.messages);
    Atomics.sub(this.counts, BLOCKS, size.blocks);
    Atomics.sub(this.counts, BYTES, size.bytes);
    Atomics.add(this.counts, TAKEN, 1);
    if (Atomics.load(this.counts, WAITING) === 1) Atomics.notify(this.counts, TAKEN);
  }

  private fits(size: HandoffSize, bounds: HandoffBounds): boolean {
    const messages = Atomics.load(this.counts, MESSAGES);
    // An empty hand-off takes anything, so one larger than the bounds is not refused forever.
    if (messages <= 0) return true;
    return (
      messages + size.messages <= bounds.maxMessages &&
      Atomics.load(this.counts, BLOCKS) + size.blocks <= bounds.maxBlocks &&
      Atomics.load(this.counts, BYTES) + size.bytes <= bounds.maxBytes
    );
  }
}
