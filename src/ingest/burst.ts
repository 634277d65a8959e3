// One rank's burst: the engine messages its socket had queued at one wake-up, each decoded by the
// native decoder (decode, validate, hash) straight into one packed apply batch, so that a burst
// costs one hand-off to the pool rather than one per message and no JS object per event or block.
import { monotonicMs } from '../clock';
import { INGEST_RETAINED_BUFFER_BYTES } from '../config/defaults';
import { EngineBatchDecoder, needsRoom, type EngineDecodeResult } from '../native';
import { PrefixViews } from './prefix-views';
import { MESSAGE_INFO_STRIDE, type PackedEngineEvents } from './types';

const INITIAL_META = 1024;
const INITIAL_WORDS = 2_048;
const INITIAL_MESSAGES = 64;

export class PackedBurst {
  private meta = new Uint32Array(INITIAL_META);
  private words = new BigUint64Array(INITIAL_WORDS);
  private sequences = new BigUint64Array(INITIAL_MESSAGES);
  private info = new Uint32Array(INITIAL_MESSAGES * MESSAGE_INFO_STRIDE);
  private metaLength = 0;
  private wordsLength = 0;
  private messages = 0;
  private droppedBlockSize = 0;
  private receivedAtMs = 0;
  private readonly metaViews = new PrefixViews<Uint32Array>();
  private readonly wordsViews = new PrefixViews<BigUint64Array>();
  private readonly sequencesViews = new PrefixViews<BigUint64Array>();
  private readonly infoViews = new PrefixViews<Uint32Array>();
  /** What view() hands out, rewritten by every call. */
  private readonly held: PackedEngineEvents;

  constructor(
    private readonly decoder: EngineBatchDecoder,
    workerId: bigint,
  ) {
    this.held = { cut: false, workerId, meta: this.meta, words: this.words, messages: 0, sequences: this.sequences, messageInfo: this.info, droppedBlockSize: 0, receivedAtMs: 0 };
  }

  get isEmpty(): boolean {
    return this.messages === 0;
  }

  /** Packed words held (a rank hands its burst on at INGEST_MAX_MESSAGE_WORDS). */
  get wordCount(): number {
    return this.wordsLength;
  }

  /**
   * Decodes one message after those already held. A rejected payload throws (code MalformedKvBatch
   * or RankOutOfRange) and adds nothing. The result is the decoder's, reused by its next decode.
   */
  add(sequence: bigint, payload: Uint8Array, fallbackRank: number): EngineDecodeResult {
    if (this.messages === 0) this.receivedAtMs = monotonicMs();
    for (;;) {
      const r = this.decoder.decodeInto(payload, fallbackRank, this.meta, this.metaLength, this.words, this.wordsLength, true);
      if (needsRoom(r)) {
        this.meta = grown(this.meta, r.needMeta, this.metaLength);
        this.words = grown(this.words, r.needWords, this.wordsLength);
        continue;
      }
      if (this.messages === this.sequences.length) {
        this.sequences = grown(this.sequences, this.messages + 1, this.messages);
        this.info = grown(this.info, (this.messages + 1) * MESSAGE_INFO_STRIDE, this.messages * MESSAGE_INFO_STRIDE);
      }
      this.sequences[this.messages] = sequence;
      this.info[this.messages * MESSAGE_INFO_STRIDE] = r.dpRank;
      this.info[this.messages * MESSAGE_INFO_STRIDE + 1] = r.metaEnd;
      this.messages += 1;
      this.metaLength = r.metaEnd;
      this.wordsLength = r.wordsEnd;
      this.droppedBlockSize += r.droppedBlockSize;
      return r;
    }
  }

  /**
   * What is held, valid until clear(): the same object for every call, its arrays views that are
   * reused while their lengths recur (a small message costs no view per message); `cut`:
   * PackedEngineEvents.cut. A sink copies what it keeps (IngestSink).
   */
  view(cut: boolean): PackedEngineEvents {
    const v = this.held;
    v.cut = cut;
    v.meta = this.metaViews.of(this.meta, this.metaLength);
    v.words = this.wordsViews.of(this.words, this.wordsLength);
    v.messages = this.messages;
    v.sequences = this.sequencesViews.of(this.sequences, this.messages);
    v.messageInfo = this.infoViews.of(this.info, this.messages * MESSAGE_INFO_STRIDE);
    v.droppedBlockSize = this.droppedBlockSize;
    v.receivedAtMs = this.receivedAtMs;
    return v;
  }

  /**
   * Empties the burst; arrays an outsized message grew past INGEST_RETAINED_BUFFER_BYTES are given
   * back, and with them every view of them (the view's, the kept ones), which would hold them.
   */
  clear(): void {
    this.metaLength = 0;
    this.wordsLength = 0;
    this.messages = 0;
    this.droppedBlockSize = 0;
    const outsized = this.meta.byteLength > INGEST_RETAINED_BUFFER_BYTES || this.words.byteLength > INGEST_RETAINED_BUFFER_BYTES || this.sequences.byteLength > INGEST_RETAINED_BUFFER_BYTES;
    if (!outsized) return;
    if (this.meta.byteLength > INGEST_RETAINED_BUFFER_BYTES) this.meta = new Uint32Array(INITIAL_META);
    if (this.words.byteLength > INGEST_RETAINED_BUFFER_BYTES) this.words = new BigUint64Array(INITIAL_WORDS);
    if (this.sequences.byteLength > INGEST_RETAINED_BUFFER_BYTES) {
      this.sequences = new BigUint64Array(INITIAL_MESSAGES);
      this.info = new Uint32Array(INITIAL_MESSAGES * MESSAGE_INFO_STRIDE);
    }
    for (const views of [this.metaViews, this.wordsViews, this.sequencesViews, this.infoViews]) views.forget();
    this.view(false);
  }
}

type Growable = Uint32Array | BigUint64Array;

/** `array` if it holds `need` elements, else a copy of its first `keep` elements in one at least twice as long. */
function grown<T extends Growable>(array: T, need: number, keep: number): T {
  if (need <= array.length) return array;
  let size = array.length * 2;
  while (size < need) size *= 2;
  const out = new (array.constructor as new (n: number) => T)(size);
  (out as Growable).set(array.subarray(0, keep) as never);
  return out;
}

