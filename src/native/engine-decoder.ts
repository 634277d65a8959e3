// Engine KV-event decoding in one native call: the raw msgpack payload of a vLLM / SGLang KVEventBatch
// (engine-inputs.md §1.4-§1.6, §2.1, §3.3) goes in; the pool's packed apply batch (PoolEventBatch's
// layout, for PoolFilterState.applyPacked) comes out, with token windows hashed (hashing-ckf-cbi1.md
// §1.3-§1.4) and no JS object per event or block.
//
// Contract:
// - decodeInto appends to caller-owned arrays (plain or SharedArrayBuffer-backed) at the given
//   offsets, so a burst of messages accumulates in one buffer; the result's metaEnd / wordsEnd are
//   the next offsets. When the arrays are too small it writes nothing and returns the lengths they
//   need ({needMeta, needWords}); grow them and call again.
// - A rejected payload throws one Error and writes nothing: code 'MalformedKvBatch' (the message
//   names the field) or 'RankOutOfRange' (a batch rank outside [dpStartRank, dpStartRank + dpSize),
//   with `rank`). Events the filters drop are counted, not errors: `ignored` (other tier or
//   attention group, unknown type, self-referencing store), `droppedBlockSize`,
//   `droppedNoCompleteBlock`.
// - One decoder per thread (it keeps scratch buffers); calls are synchronous (bench/engine-decode.ts:
//   ~1-2 µs of CPU for a 1-event message, ~25-35 µs for 16 events × 32 blocks of 16 tokens).
import type * as Binding from '../../binding';
import { INGEST_MAX_BLOCKS_PER_EVENT, INGEST_MAX_MESSAGE_WORDS, INGEST_RETAINED_BUFFER_BYTES } from '../config/defaults';
import { relayAddon } from './addon';

const addon = relayAddon();

export interface EngineDecoderOptions {
  /** The worker whose sockets this decoder serves (u64). */
  workerId: bigint;
  /** The pool's block size: stores of another size are dropped and counted. */
  kvBlockSize: number;
  /** Eagle hash format (each block's window includes the next block's first token). */
  eagle: boolean;
  /** The worker's ranks are [dpStartRank, dpStartRank + dpSize). */
  dpStartRank: number;
  dpSize: number;
  /** Blocks one event may carry (default INGEST_MAX_BLOCKS_PER_EVENT); more: MalformedKvBatch. */
  maxBlocksPerEvent?: number;
  /** Packed words one message may decode to (default INGEST_MAX_MESSAGE_WORDS); more: MalformedKvBatch. */
  maxMessageWords?: number;
  /** Scratch grown past this is given back after each call (default INGEST_RETAINED_BUFFER_BYTES). */
  retainedBytes?: number;
}

export interface EngineDecodeResult {
  /** Next free index in meta / words (the events of this payload end here). */
  metaEnd: number;
  wordsEnd: number;
  /** The batch's ts (engine wall clock, seconds). */
  timestamp: number;
  /** The batch's data_parallel_rank / attn_dp_rank / dp_rank, else the fallback rank. */
  dpRank: number;
  /** Events that count (as the JS decoder's events): packed ones plus the two dropped kinds. */
  events: number;
  /** Engine block hashes in those events. */
  blocks: number;
  ignored: number;
  droppedBlockSize: number;
  droppedNoCompleteBlock: number;
  /** The block_size of the payload's last store dropped for its block size (0: none). */
  lastDroppedBlockSize: number;
}

/** The output arrays are too small: nothing was written; they need at least these lengths. */
export interface EngineDecodeRoom {
  needMeta: number;
  needWords: number;
}

export type EngineDecodeErrorCode = 'MalformedKvBatch' | 'RankOutOfRange';

const SLOT = addon.engineDecodeSlots;

export class EngineBatchDecoder {
  private readonly results = new Float64Array(SLOT.count);
  private readonly native: Binding.EngineBatchDecoder;
  /** The results of decodeInto with `reuse`. */
  private readonly reused = blankResult();
  private readonly reusedRoom: EngineDecodeRoom = { needMeta: 0, needWords: 0 };

  constructor(opts: EngineDecoderOptions) {
    this.native = new addon.EngineBatchDecoder(opts.workerId, opts.kvBlockSize, opts.eagle, opts.dpStartRank, opts.dpSize, this.results, {
      maxBlocksPerEvent: opts.maxBlocksPerEvent ?? INGEST_MAX_BLOCKS_PER_EVENT,
      maxMessageWords: opts.maxMessageWords ?? INGEST_MAX_MESSAGE_WORDS,
      retainedBytes: opts.retainedBytes ?? INGEST_RETAINED_BUFFER_BYTES,
    });
  }

  /**
   * Appends one payload's packed events at meta[metaOffset..] / words[wordsOffset..]. `reuse`: the
   * result is one of two objects this decoder reuses for every such call, to be read before the
   * next (ingest decodes every message so: no object per message); otherwise a new one.
   */
  decodeInto(
    payload: Uint8Array,
    fallbackRank: number,
    meta: Uint32Array,
    metaOffset: number,
    words: BigUint64Array,
    wordsOffset: number,
    reuse = false,
  ): EngineDecodeResult | EngineDecodeRoom {
    const r = this.results;
    if (!this.native.decodeInto(payload, fallbackRank, meta, metaOffset, words, wordsOffset)) {
      const need = reuse ? this.reusedRoom : { needMeta: 0, needWords: 0 };
      need.needMeta = r[SLOT.needMeta];
      need.needWords = r[SLOT.needWords];
      return need;
    }
    const into = reuse ? this.reused : blankResult();
    into.metaEnd = r[SLOT.metaEnd];
    into.wordsEnd = r[SLOT.wordsEnd];
    into.timestamp = r[SLOT.timestamp];
    into.dpRank = r[SLOT.dpRank];
    into.events = r[SLOT.events];
    into.blocks = r[SLOT.blocks];
    into.ignored = r[SLOT.ignored];
    into.droppedBlockSize = r[SLOT.droppedBlockSize];
    into.droppedNoCompleteBlock = r[SLOT.droppedNoCompleteBlock];
    into.lastDroppedBlockSize = r[SLOT.lastDroppedBlockSize];
    return into;
  }
}

/** A result to fill (decodeInto). */
function blankResult(): EngineDecodeResult {
  return { metaEnd: 0, wordsEnd: 0, timestamp: 0, dpRank: 0, events: 0, blocks: 0, ignored: 0, droppedBlockSize: 0, droppedNoCompleteBlock: 0, lastDroppedBlockSize: 0 };
}

export function needsRoom(r: EngineDecodeResult | EngineDecodeRoom): r is EngineDecodeRoom {
  return 'needMeta' in r;
}
