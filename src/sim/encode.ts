// vLLM KV-event payload encoding for the simulated engine (engine-inputs.md §1.4–§1.6): msgspec's
// layout with tagged-array (before vLLM PR #42892) or tagged-map (after) events, and the hash modes
// of VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES (uint64, signed int64 as custom engines send, bytes).
import { Packr } from 'msgpackr';

/** One engine event as the simulated engine publishes it; optional fields are omitted when undefined. */
export type SimEvent =
  | {
      type: 'BlockStored';
      blockHashes: bigint[];
      parentBlockHash?: bigint | null;
      tokenIds: readonly number[] | Uint32Array;
      /** Send token_ids as Eagle bigram pairs [[t0, t1], [t1, t2], …] (one pair fewer than tokens). */
      bigramTokens?: boolean;
      blockSize: number;
      loraName?: string | null;
      /** Defaults to "GPU". */
      medium?: string | null;
      extraKeys?: unknown[] | null;
      groupIdx?: number | null;
      kvCacheSpecKind?: string | null;
    }
  | { type: 'BlockRemoved'; blockHashes: bigint[]; medium?: string | null; groupIdx?: number | null }
  | { type: 'AllBlocksCleared' };

export type EventEncoding = 'array' | 'map';
export type HashEncoding = 'uint' | 'int' | 'bytes';

export interface EncodeOptions {
  events: EventEncoding;
  /** The batch itself: positional as vLLM sends it, or the map of one intermediate revision. */
  envelope?: 'array' | 'map';
  hashes?: HashEncoding;
}

const packr = new Packr({ useRecords: false, variableMapSize: true });
const BYTES_HASH_LENGTH = 32;

export function encodeBatch(ts: number, events: readonly SimEvent[], dpRank: number, opts: EncodeOptions): Buffer {
  const encoded = events.map((e) => encodeEvent(e, opts.events, opts.hashes ?? 'uint'));
  const batch = opts.envelope === 'map' ? { ts, events: encoded, data_parallel_rank: dpRank } : [ts, encoded, dpRank];
  return packr.pack(batch);
}

function encodeEvent(e: SimEvent, encoding: EventEncoding, hashes: HashEncoding): unknown {
  const h = (v: bigint): unknown => encodeHash(v, hashes);
  let fields: [string, unknown][];
  switch (e.type) {
    case 'BlockStored':
      fields = [
        ['block_hashes', e.blockHashes.map(h)],
        ['parent_block_hash', e.parentBlockHash == null ? null : h(e.parentBlockHash)],
        ['token_ids', e.bigramTokens ? bigrams(e.tokenIds) : Array.from(e.tokenIds)],
        ['block_size', e.blockSize],
        ['lora_id', null],
        ['medium', e.medium === undefined ? 'GPU' : e.medium],
        ['lora_name', e.loraName ?? null],
        ['extra_keys', e.extraKeys],
        ['group_idx', e.groupIdx],
        ['kv_cache_spec_kind', e.kvCacheSpecKind],
      ];
      break;
    case 'BlockRemoved':
      fields = [
        ['block_hashes', e.blockHashes.map(h)],
        ['medium', e.medium === undefined ? 'GPU' : e.medium],
        ['group_idx', e.groupIdx],
      ];
      break;
    case 'AllBlocksCleared':
      fields = [];
      break;
  }
  if (encoding === 'map') {
    // omit_defaults: fields whose default is None are left out when unset.
    return Object.fromEntries([['type', e.type], ...fields.filter(([, v]) => v !== undefined)]);
  }
  // Positional: trailing defaults are omitted, earlier ones are written as nil.
  let end = fields.length;
  while (end > 0 && fields[end - 1][1] === undefined) end--;
  return [e.type, ...fields.slice(0, end).map(([, v]) => (v === undefined ? null : v))];
}

function encodeHash(value: bigint, mode: HashEncoding): unknown {
  if (mode === 'bytes') {
    // A 32-byte digest whose last 8 bytes (big-endian) are the hash, as vLLM's bytes mode publishes.
    const buf = Buffer.alloc(BYTES_HASH_LENGTH, 0xa5);
    buf.writeBigUInt64BE(BigInt.asUintN(64, value), BYTES_HASH_LENGTH - 8);
    return buf;
  }
  const v = mode === 'int' ? BigInt.asIntN(64, value) : BigInt.asUintN(64, value);
  // Small values as plain numbers so they get msgpack's smallest integer form, as msgspec writes them.
  return v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
}

function bigrams(tokens: readonly number[] | Uint32Array): number[][] {
  return Array.from({ length: Math.max(0, tokens.length - 1) }, (_, i) => [tokens[i], tokens[i + 1]]);
}
