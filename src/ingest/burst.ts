// One rank's burst: the engine messages its socket had queued at one wake-up, each decoded by the
// native decoder (decode, validate, hash) straight into one packed apply batch, so that a burst
// costs one hand-off to the pool rather than one per message and no JS object per event or block.
import { monotonicMs } from '../clock';
import { EngineBatchDecoder, needsRoom, type EngineDecodeResult } from '../native';
import { PackedEventsBuffer } from './packed-events-buffer';
import type { PackedEngineEvents } from './types';

export class PackedBurst {
  private readonly buffer: PackedEventsBuffer;

  constructor(
    private readonly decoder: EngineBatchDecoder,
    workerId: bigint,
  ) {
    this.buffer = new PackedEventsBuffer(workerId);
  }

  get isEmpty(): boolean {
    return this.buffer.isEmpty;
  }

  /** Packed words held (a rank hands its burst on at INGEST_MAX_MESSAGE_WORDS). */
  get wordCount(): number {
    return this.buffer.wordCount;
  }

  /**
   * Decodes one message after those already held. A rejected payload throws (code MalformedKvBatch
   * or RankOutOfRange) and adds nothing.
   */
  add(sequence: bigint, payload: Uint8Array, fallbackRank: number): EngineDecodeResult {
    const b = this.buffer;
    const receivedAtMs = b.isEmpty ? monotonicMs() : 0; // only a burst's first message dates it
    for (;;) {
      const r = this.decoder.decodeInto(payload, fallbackRank, b.meta, b.metaLength, b.words, b.wordsLength);
      if (needsRoom(r)) {
        b.reserve(r.needMeta, r.needWords);
        continue;
      }
      b.endMessage(sequence, r.dpRank, r.metaEnd, r.wordsEnd, receivedAtMs, r.droppedBlockSize);
      return r;
    }
  }

  /** Views of what is held, valid until clear(); `cut`: PackedEngineEvents.cut. */
  view(cut: boolean): PackedEngineEvents {
    return this.buffer.view(cut);
  }

  /** Empties the burst; arrays an outsized message grew are given back (PackedEventsBuffer.clear). */
  clear(): void {
    this.buffer.clear();
  }
}
