// Dynamo event-plane decoding in one native call per burst (native/ingest/router_event_decode.h):
// MessagePack EventEnvelopes, ZMQ event-plane frames or bare serde_json RouterEvents go in; per
// message a record (status, publisher, sequence, worker, rank, kind, blocks) and the counted events
// as one packed apply batch (the pool's layout: engine block ids for lineage, tokens_hash as the
// block hash) come out, in message order, with no JS object per message, event or block.
import type * as Binding from '../../binding';
import { INGEST_RETAINED_BUFFER_BYTES } from '../config/defaults';
import { relayAddon } from './addon';

const addon = relayAddon();

export const routerEventRecord = addon.routerEventRecord;

export type RouterEventFormat = 'envelope' | 'framed' | 'json';

const FORMAT: Record<RouterEventFormat, number> = {
  envelope: routerEventRecord.formatEnvelope,
  framed: routerEventRecord.formatFramed,
  json: routerEventRecord.formatJson,
};

/** What decode() filled: views valid until the next decode(). */
export interface RouterEventBatch {
  count: number;
  /** routerEventRecord.stride u32 per message. */
  records: Uint32Array;
  meta: Uint32Array;
  words: BigUint64Array;
}

const INITIAL_RECORDS = 64;
const INITIAL_META = 1024;
const INITIAL_WORDS = 8192;

/** A decoder with the arrays it fills (grown as bursts need); one per thread. */
export class RouterEventBatchDecoder {
  private readonly sizes = new Float64Array(2);
  private readonly native: Binding.RouterEventDecoder;
  private records = new Uint32Array(INITIAL_RECORDS * routerEventRecord.stride);
  private meta = new Uint32Array(INITIAL_META);
  private words = new BigUint64Array(INITIAL_WORDS);

  /** `topic`: the envelope topic accepted (kv-events); `legacyTopic` too (kv_events). */
  constructor(topic: string, legacyTopic = '') {
    this.native = new addon.RouterEventDecoder(topic, legacyTopic, this.sizes);
  }

  /** Decodes `count` messages laid end to end in `arena` (message i ends at ends[i]). */
  decode(arena: Uint8Array, ends: Uint32Array, count: number, format: RouterEventFormat): RouterEventBatch {
    if (this.records.length < count * routerEventRecord.stride) this.records = new Uint32Array(2 * count * routerEventRecord.stride);
    while (!this.native.decodeBatch(arena, ends, count, FORMAT[format], this.records, this.meta, this.words)) {
      this.meta = new Uint32Array(Math.max(this.sizes[0], 2 * this.meta.length));
      this.words = new BigUint64Array(Math.max(this.sizes[1], 2 * this.words.length));
    }
    return {
      count,
      records: this.records,
      meta: this.meta.subarray(0, this.sizes[0]),
      words: this.words.subarray(0, this.sizes[1]),
    };
  }

  /** Gives back arrays an outsized burst grew past INGEST_RETAINED_BUFFER_BYTES (the last decode()'s views are then invalid). */
  trim(): void {
    if (this.records.byteLength > INGEST_RETAINED_BUFFER_BYTES) this.records = new Uint32Array(INITIAL_RECORDS * routerEventRecord.stride);
    if (this.meta.byteLength > INGEST_RETAINED_BUFFER_BYTES) this.meta = new Uint32Array(INITIAL_META);
    if (this.words.byteLength > INGEST_RETAINED_BUFFER_BYTES) this.words = new BigUint64Array(INITIAL_WORDS);
  }

  /** Bytes of the arrays it holds. */
  get byteLength(): number {
    return this.records.byteLength + this.meta.byteLength + this.words.byteLength;
  }

  /** Why message `index` of the last decode() was malformed. */
  errorOf(index: number): string {
    return this.native.errorOf(index);
  }
}

/** The u64 at record slots lo, hi. */
export function recordU64(records: Uint32Array, at: number): bigint {
  return (BigInt(records[at + 1]) << 32n) | BigInt(records[at]);
}
