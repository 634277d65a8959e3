// The JavaScript decoder the native EngineBatchDecoder replaced in production (#8 item 1): msgpackr
// decode into objects, the same filters, then tokens hashed per event and packed by PoolEventBatch.
// Kept only here, as the tests' independent oracle for random and mutated payloads (production has
// one decoder, the native one); the fixture tests state their expected outcomes directly.
import { Unpackr } from 'msgpackr';
import { MAX_U32, MAX_U64 } from '../../src/config/limits';
import { DecodeError } from '../../src/ingest/errors';
import type { SourceKey } from '../../src/ingest/types';
import { blockHashes, saltSeed, type PoolEvent } from '../../src/native';

/**
 * A decoded engine event. Only primary-tier (GPU / no medium) events of the main attention group
 * reach the sink; everything else is dropped by ingest and counted as `ignored`.
 */
export type EngineKvEvent =
  | {
      kind: 'stored';
      /** Engine block hashes (external ids, u64), one per block, in chain order. */
      blockHashes: bigint[];
      /** Engine hash of the block before blockHashes[0]; null at the start of a sequence. */
      parentBlockHash: bigint | null;
      /** Concatenated tokens of all blocks (normally blockHashes.length × blockSize; may be short). */
      tokenIds: Uint32Array;
      /** The engine's block size for this event; the producer drops blocks whose size differs. */
      blockSize: number;
      /** LoRA adapter name (salts canonical hashes); null for the base model. */
      loraName: string | null;
      /** Per block: the MM hashes found in extra_keys (engine order), or null; absent when no block has MM. */
      mmHashes?: (bigint[] | null)[];
    }
  | { kind: 'removed'; blockHashes: bigint[] }
  | { kind: 'cleared' };

/**
 * Folds an engine hash to u64: integers by two's complement (an i64 and its u64 are the same
 * hash), bytes to their big-endian value mod 2^64, i.e. the last 8 bytes — what vLLM's int mode
 * publishes for the same digest.
 */
export function engineHashToU64(value: unknown, field: string): bigint {
  if (typeof value === 'bigint') {
    if (value < -(1n << 63n) || value > MAX_U64) throw new DecodeError(`${field}: out of 64-bit range`);
    return value & MAX_U64;
  }
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value)) throw new DecodeError(`${field}: not an integer`);
    return BigInt(value) & MAX_U64;
  }
  if (value instanceof Uint8Array) {
    if (value.length === 0) throw new DecodeError(`${field}: empty bytes`);
    let out = 0n;
    for (const byte of value.subarray(Math.max(0, value.length - 8))) out = (out << 8n) | BigInt(byte);
    return out;
  }
  throw new DecodeError(`${field}: expected an integer or bytes`);
}

export interface DecodedBatch {
  timestamp: number;
  /** data_parallel_rank (vLLM) / attn_dp_rank (SGLang); null when the engine left it unset. */
  dpRank: number | null;
  events: EngineKvEvent[];
  /** Events of another tier or attention group, of an unknown type, or self-referencing stores. */
  ignored: number;
}

const unpackr = new Unpackr({ useRecords: false, mapsAsObjects: true, int64AsType: 'bigint' });

/** Positional field order after the tag, per event type (msgspec declaration order). */
const POSITIONAL_FIELDS: Record<string, readonly string[]> = {
  BlockStored: [
    'block_hashes', 'parent_block_hash', 'token_ids', 'block_size', 'lora_id', 'medium', 'lora_name',
    'extra_keys', 'group_idx', 'kv_cache_spec_kind', 'kv_cache_spec_sliding_window',
  ],
  BlockRemoved: ['block_hashes', 'medium', 'group_idx'],
  AllBlocksCleared: [],
};

/** Dynamo's main-attention kinds (zmq_wire.rs); other kinds belong to secondary KV-cache groups. */
const MAIN_ATTENTION_KINDS = new Set(['full_attention', 'mla_attention', 'sink_full_attention']);
/**
 * Media of Dynamo's host, disk and external tiers (engine-inputs.md §3.3). Like Dynamo's
 * StorageTier::from_kv_medium_or_default, any other value (GPU, DEVICE, absent, unknown) is the
 * device tier, the only one the CKF counts (hashing-ckf-cbi1.md §4.1). Matching is exact.
 */
const NON_PRIMARY_MEDIA = new Set([
  'CPU', 'CPU_PINNED', 'CPU_TIER1', 'CPU_TIER2', 'DISK', 'NVME', 'STORAGE', 'EXTERNAL', 'NETWORK', 'REMOTE', 'SHARED',
]);
const MM_IDENTIFIER = /^[0-9a-fA-F]{64}$/;

type Fields = Record<string, unknown>;

/** Decodes one msgpack batch payload; throws DecodeError when it is not a valid batch. */
export function decodeBatchPayload(payload: Uint8Array): DecodedBatch {
  let raw: unknown;
  try {
    raw = unpackr.unpack(payload);
  } catch (err) {
    throw new DecodeError(`msgpack: ${(err as Error).message}`);
  }
  let ts: unknown, events: unknown, dpRank: unknown;
  if (Array.isArray(raw)) {
    [ts, events, dpRank] = raw;
  } else if (isMap(raw)) {
    ts = field(raw, 'ts');
    events = field(raw, 'events');
    dpRank = field(raw, 'data_parallel_rank') ?? field(raw, 'attn_dp_rank') ?? field(raw, 'dp_rank');
  } else {
    throw new DecodeError('batch: expected an array or a map');
  }
  if (!Array.isArray(events)) throw new DecodeError('batch.events: expected an array');
  const out: DecodedBatch = { timestamp: decodeTimestamp(ts), dpRank: optionalU32(dpRank, 'batch.dp_rank'), events: [], ignored: 0 };
  for (const rawEvent of events) {
    const event = decodeEvent(rawEvent);
    if (event) out.events.push(event);
    else out.ignored += 1;
  }
  return out;
}

/** One event; null when it does not count (other tier or group, unknown type, self-referencing store). */
export function decodeEvent(raw: unknown): EngineKvEvent | null {
  const { type, fields, positional } = normalizeEvent(raw);
  if (typeof type !== 'string') throw new DecodeError('event: the type tag is not a string');
  switch (type) {
    case 'BlockStored':
      return decodeStored(fields, positional);
    case 'BlockRemoved': {
      const blockHashes = decodeHashList(field(fields, 'block_hashes'), 'BlockRemoved.block_hashes');
      if (!countsAsPrimary(fields)) return null;
      return { kind: 'removed', blockHashes };
    }
    case 'AllBlocksCleared':
      return { kind: 'cleared' };
    default:
      return null;
  }
}

function normalizeEvent(raw: unknown): { type: unknown; fields: Fields; positional: boolean } {
  if (Array.isArray(raw)) {
    const type = raw[0];
    const names = typeof type === 'string' ? POSITIONAL_FIELDS[type] : undefined;
    const fields: Fields = Object.create(null);
    // Extra trailing elements (newer fields) are ignored, missing trailing ones are defaults.
    names?.forEach((name, i) => { fields[name] = raw[i + 1]; });
    return { type, fields, positional: true };
  }
  if (isMap(raw)) return { type: field(raw, 'type'), fields: raw, positional: false };
  throw new DecodeError('event: expected a tagged array or a tagged map');
}

function decodeStored(fields: Fields, positional: boolean): EngineKvEvent | null {
  const blockHashes = decodeHashList(field(fields, 'block_hashes'), 'BlockStored.block_hashes');
  const rawParent = field(fields, 'parent_block_hash');
  const parentBlockHash = rawParent == null ? null : engineHashToU64(rawParent, 'BlockStored.parent_block_hash');
  const tokenIds = decodeTokens(field(fields, 'token_ids'));
  const blockSize = field(fields, 'block_size');
  if (typeof blockSize !== 'number' || !Number.isInteger(blockSize) || blockSize < 1 || blockSize > MAX_U32) {
    throw new DecodeError('BlockStored.block_size: expected a positive integer');
  }
  const loraName = decodeLoraName(field(fields, 'lora_name'), positional);
  if (!countsAsPrimary(fields)) return null;
  // A store that repeats a hash (or its parent) references itself; Dynamo drops it as a no-op.
  const ids = parentBlockHash === null ? blockHashes : [parentBlockHash, ...blockHashes];
  if (new Set(ids).size !== ids.length) return null;
  const event: EngineKvEvent = { kind: 'stored', blockHashes, parentBlockHash, tokenIds, blockSize, loraName };
  const mmHashes = decodeMmInfos(field(fields, 'block_mm_infos')) ?? decodeMmHashes(field(fields, 'extra_keys'));
  if (mmHashes) event.mmHashes = mmHashes;
  return event;
}

function countsAsPrimary(fields: Fields): boolean {
  const medium = optionalString(field(fields, 'medium'), 'medium');
  if (medium !== null && NON_PRIMARY_MEDIA.has(medium)) return false;
  const kind = optionalString(field(fields, 'kv_cache_spec_kind'), 'kv_cache_spec_kind');
  if (kind !== null) return MAIN_ATTENTION_KINDS.has(kind);
  const groupIdx = optionalU32(field(fields, 'group_idx'), 'group_idx');
  return groupIdx === null || groupIdx === 0;
}

function decodeLoraName(value: unknown, positional: boolean): string | null {
  // SGLang puts its salt metadata map where vLLM has lora_name (positional index 7).
  if (positional && isMap(value)) return null;
  const name = optionalString(value, 'BlockStored.lora_name');
  return name === '' ? null : name;
}

function decodeHashList(value: unknown, name: string): bigint[] {
  if (!Array.isArray(value)) throw new DecodeError(`${name}: expected an array`);
  return value.map((h) => engineHashToU64(h, name));
}

/**
 * Plain u32 token ids, or Eagle's bigram pairs [[t0, t1], [t1, t2], …] (Dynamo's KvTokenIds),
 * which carry one token more than they have pairs: the firsts, then the last pair's second.
 */
function decodeTokens(value: unknown): Uint32Array {
  if (!Array.isArray(value)) throw new DecodeError('BlockStored.token_ids: expected an array');
  if (value.length > 0 && Array.isArray(value[0])) {
    const out = new Uint32Array(value.length + 1);
    value.forEach((pair, i) => {
      if (!Array.isArray(pair) || pair.length !== 2) throw new DecodeError('BlockStored.token_ids: expected bigram pairs');
      out[i] = tokenId(pair[0]);
      if (i === value.length - 1) out[i + 1] = tokenId(pair[1]);
      else tokenId(pair[1]);
    });
    return out;
  }
  // A plain loop: Uint32Array.from with a mapping function is several times slower on hot paths.
  const out = new Uint32Array(value.length);
  for (let i = 0; i < value.length; i++) out[i] = tokenId(value[i]);
  return out;
}

function tokenId(value: unknown): number {
  const t = typeof value === 'bigint' ? Number(value) : value;
  if (typeof t !== 'number' || !Number.isInteger(t) || t < 0 || t > MAX_U32) {
    throw new DecodeError('BlockStored.token_ids: expected u32 token ids');
  }
  return t;
}

/** Dynamo's own `block_mm_infos` ([{mm_objects: [{mm_hash, offsets}]} | null] per block), as custom engines send it. */
function decodeMmInfos(value: unknown): (bigint[] | null)[] | undefined {
  if (!Array.isArray(value)) return undefined;
  const perBlock = value.map((info) => {
    const objects = isMap(info) ? field(info, 'mm_objects') : undefined;
    if (!Array.isArray(objects)) return null;
    return objects.map((o) => engineHashToU64(isMap(o) ? field(o, 'mm_hash') : undefined, 'block_mm_infos.mm_hash'));
  });
  return perBlock.some((b) => b !== null) ? perBlock : undefined;
}

/**
 * MM hashes per block from `extra_keys` (Dynamo: 64-hex MM identifiers → the first 16 hex chars).
 * An identifier may be bare, the first item of vLLM's (identifier, offset) tuple, or the `hash` of a
 * tagged `mm` ExtraKey. Other extra keys (LoRA, cache salt, prompt embeds) do not hash as MM.
 */
function decodeMmHashes(value: unknown): (bigint[] | null)[] | undefined {
  if (!Array.isArray(value)) return undefined;
  let any = false;
  const perBlock = value.map((keys) => {
    if (!Array.isArray(keys)) return null;
    const hashes: bigint[] = [];
    for (const key of keys) {
      const id = Array.isArray(key) ? key[0] : isMap(key) && field(key, 'type') === 'mm' ? field(key, 'hash') : key;
      if (typeof id === 'string' && MM_IDENTIFIER.test(id)) hashes.push(BigInt('0x' + id.slice(0, 16)));
    }
    if (hashes.length === 0) return null;
    any = true;
    return hashes;
  });
  return any ? perBlock : undefined;
}

function decodeTimestamp(value: unknown): number {
  const ts = typeof value === 'bigint' ? Number(value) : value;
  if (typeof ts !== 'number' || !Number.isFinite(ts)) throw new DecodeError('batch.ts: expected a number');
  return ts;
}

function optionalU32(value: unknown, name: string): number | null {
  if (value == null) return null;
  const n = typeof value === 'bigint' ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 0 || n > MAX_U32) {
    throw new DecodeError(`${name}: expected a non-negative integer`);
  }
  return n;
}

function optionalString(value: unknown, name: string): string | null {
  if (value == null) return null;
  if (typeof value !== 'string') throw new DecodeError(`${name}: expected a string`);
  return value;
}

function isMap(value: unknown): value is Fields {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Uint8Array);
}

function field(obj: Fields, key: string): unknown {
  return Object.prototype.hasOwnProperty.call(obj, key) ? obj[key] : undefined;
}

export interface PoolSemantics {
  kvBlockSize: number;
  eagle: boolean;
}

export type Conversion = { event: PoolEvent } | { dropped: 'block_size' | 'no_complete_block' };

export function toPoolEvent(source: SourceKey, ev: EngineKvEvent, semantics: PoolSemantics, seeds: SaltCache): Conversion {
  switch (ev.kind) {
    case 'removed':
      return { event: { kind: 'removed', workerId: source.workerId, dpRank: source.dpRank, blockHashes: ev.blockHashes } };
    case 'cleared':
      return { event: { kind: 'cleared', workerId: source.workerId, dpRank: source.dpRank } };
    case 'stored': {
      if (ev.blockSize !== semantics.kvBlockSize) return { dropped: 'block_size' };
      const native = blockHashes(ev.tokenIds, semantics.kvBlockSize, semantics.eagle, seeds.seed(ev.loraName), ev.mmHashes);
      // The addon allocates in the main realm; under a vm realm (jest) the wrapper's instanceof
      // check fails, so such an array is re-wrapped (never in a plain process).
      const hashes = native instanceof BigUint64Array ? native : BigUint64Array.from(native);
      // Too few tokens for some blocks: the event stops at the first incomplete block, like Dynamo.
      const count = Math.min(hashes.length, ev.blockHashes.length);
      if (count === 0) return { dropped: 'no_complete_block' };
      return {
        event: {
          kind: 'stored',
          workerId: source.workerId,
          dpRank: source.dpRank,
          parentHash: ev.parentBlockHash,
          blockHashes: ev.blockHashes.length === count ? ev.blockHashes : ev.blockHashes.slice(0, count),
          tokensHashes: hashes.length === count ? hashes : hashes.subarray(0, count),
        },
      };
    }
  }
}

/** Block-hash seeds per LoRA name (no cache namespace on engine events). */
export class SaltCache {
  private readonly seeds = new Map<string, bigint>();

  seed(loraName: string | null): bigint {
    const key = loraName ?? '';
    const known = this.seeds.get(key);
    if (known !== undefined) return known;
    const seed = saltSeed(null, loraName);
    this.seeds.set(key, seed);
    return seed;
  }
}
