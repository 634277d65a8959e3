// One source's messages being gathered in the pool's packed layout (packed_batch.h, PackedEngineEvents):
// the vLLM decoder writes into it in place (burst.ts), the Dynamo event plane copies decoded events
// into it (dynamo/event-plane/channel.ts). It grows by doubling and, when emptied, gives back what
// an outsized burst grew past INGEST_RETAINED_BUFFER_BYTES: a buffer that only grows keeps what one
// hostile message made it hold (issue 26 item 2).
import { INGEST_RETAINED_BUFFER_BYTES } from '../config/defaults';
import { MESSAGE_INFO_STRIDE, type PackedEngineEvents } from './types';

const INITIAL_META = 1024;
const INITIAL_WORDS = 16_384;
const INITIAL_MESSAGES = 64;

export class PackedEventsBuffer {
  meta = new Uint32Array(INITIAL_META);
  words = new BigUint64Array(INITIAL_WORDS);
  metaLength = 0;
  wordsLength = 0;
  private sequences = new BigUint64Array(INITIAL_MESSAGES);
  private info = new Uint32Array(INITIAL_MESSAGES * MESSAGE_INFO_STRIDE);
  private messages = 0;
  private droppedBlockSize = 0;
  private receivedAtMs = 0;

  constructor(private readonly workerId: bigint) {}

  get isEmpty(): boolean {
    return this.messages === 0;
  }

  /** Packed words held. */
  get wordCount(): number {
    return this.wordsLength;
  }

  /** Room for `meta` and `words` entries in all, keeping what is held (the decoder writes in place). */
  reserve(meta: number, words: number): void {
    this.meta = grown(this.meta, meta, this.metaLength);
    this.words = grown(this.words, words, this.wordsLength);
  }

  /** Closes a message whose events were written up to `metaEnd` / `wordsEnd`; the first one dates the burst. */
  endMessage(sequence: bigint, dpRank: number, metaEnd: number, wordsEnd: number, receivedAtMs: number, droppedBlockSize = 0): void {
    if (this.messages === 0) this.receivedAtMs = receivedAtMs;
    if (this.messages === this.sequences.length) {
      this.sequences = grown(this.sequences, this.messages + 1, this.messages);
      this.info = grown(this.info, (this.messages + 1) * MESSAGE_INFO_STRIDE, this.messages * MESSAGE_INFO_STRIDE);
    }
    this.sequences[this.messages] = sequence;
    this.info[this.messages * MESSAGE_INFO_STRIDE] = dpRank;
    this.info[this.messages * MESSAGE_INFO_STRIDE + 1] = metaEnd;
    this.messages += 1;
    this.metaLength = metaEnd;
    this.wordsLength = wordsEnd;
    this.droppedBlockSize += droppedBlockSize;
  }

  /** Copies one message's packed events (already decoded elsewhere) after those held. */
  append(meta: Uint32Array, words: BigUint64Array, sequence: bigint, dpRank: number, receivedAtMs: number): void {
    this.reserve(this.metaLength + meta.length, this.wordsLength + words.length);
    this.meta.set(meta, this.metaLength);
    this.words.set(words, this.wordsLength);
    this.endMessage(sequence, dpRank, this.metaLength + meta.length, this.wordsLength + words.length, receivedAtMs);
  }

  /** Views of what is held, valid until clear(); `cut`: PackedEngineEvents.cut. */
  view(cut?: boolean): PackedEngineEvents {
    return {
      ...(cut === undefined ? {} : { cut }),
      workerId: this.workerId,
      meta: this.meta.subarray(0, this.metaLength),
      words: this.words.subarray(0, this.wordsLength),
      messages: this.messages,
      sequences: this.sequences.subarray(0, this.messages),
      messageInfo: this.info.subarray(0, this.messages * MESSAGE_INFO_STRIDE),
      droppedBlockSize: this.droppedBlockSize,
      receivedAtMs: this.receivedAtMs,
    };
  }

  /** Empties the buffer; arrays an outsized burst grew past INGEST_RETAINED_BUFFER_BYTES are given back. */
  clear(): void {
    this.metaLength = 0;
    this.wordsLength = 0;
    this.messages = 0;
    this.droppedBlockSize = 0;
    if (this.meta.byteLength > INGEST_RETAINED_BUFFER_BYTES) this.meta = new Uint32Array(INITIAL_META);
    if (this.words.byteLength > INGEST_RETAINED_BUFFER_BYTES) this.words = new BigUint64Array(INITIAL_WORDS);
    if (this.sequences.byteLength > INGEST_RETAINED_BUFFER_BYTES) {
      this.sequences = new BigUint64Array(INITIAL_MESSAGES);
      this.info = new Uint32Array(INITIAL_MESSAGES * MESSAGE_INFO_STRIDE);
    }
  }
}

type Growable = Uint8Array | Uint32Array | Float64Array | BigUint64Array;

/** `array` if it holds `need` elements, else a copy of its first `keep` elements in one at least twice as long. */
export function grown<T extends Growable>(array: T, need: number, keep: number): T {
  if (need <= array.length) return array;
  let size = array.length * 2;
  while (size < need) size *= 2;
  const out = new (array.constructor as new (n: number) => T)(size);
  (out as Growable).set(array.subarray(0, keep) as never);
  return out;
}
