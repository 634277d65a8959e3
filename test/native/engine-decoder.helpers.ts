// Shared by the engine-decoder tests: running the native decoder into fresh arrays, the former JS
// path (engine-decoder.reference.ts + PoolEventBatch) as the oracle for random payloads, and msgpack fixtures built with
// msgpackr (independent of the native code under test).
import fc from 'fast-check';
import { Packr } from 'msgpackr';
import { EngineBatchDecoder, needsRoom, PoolEventBatch, type EngineDecodeResult, type EngineDecoderOptions } from '../../src/native';
import { decodeBatchPayload, SaltCache, toPoolEvent } from './engine-decoder.reference';

export const compactPackr = new Packr({ useRecords: false, variableMapSize: true });
export const plainPackr = new Packr({ useRecords: false }); // maps with 16-bit headers

export const OPTIONS: EngineDecoderOptions = { workerId: 0xfeed_beef_cafe_f00dn, kvBlockSize: 4, eagle: false, dpStartRank: 0, dpSize: 8 };

/** What one payload decodes to: the summary and exactly the words it appended. */
export interface Decoded {
  summary: Omit<EngineDecodeResult, 'metaEnd' | 'wordsEnd'>;
  meta: number[];
  words: bigint[];
}

/** Native decoder into arrays grown until they fit. */
export function nativeDecode(decoder: EngineBatchDecoder, payload: Uint8Array, fallbackRank = 0): Decoded {
  let meta = new Uint32Array(16);
  let words = new BigUint64Array(16);
  for (;;) {
    const r = decoder.decodeInto(payload, fallbackRank, meta, 0, words, 0);
    if (needsRoom(r)) {
      meta = new Uint32Array(r.needMeta);
      words = new BigUint64Array(r.needWords);
      continue;
    }
    const { metaEnd, wordsEnd, ...summary } = r;
    return { summary, meta: Array.from(meta.subarray(0, metaEnd)), words: Array.from(words.subarray(0, wordsEnd)) };
  }
}

/** The former JS path (test oracle): decodeBatchPayload, toPoolEvent per event, PoolEventBatch. Throws DecodeError. */
export function jsDecode(payload: Uint8Array, opts: EngineDecoderOptions, fallbackRank = 0): Decoded {
  const batch = decodeBatchPayload(payload);
  const dpRank = batch.dpRank ?? fallbackRank;
  const source = { workerId: opts.workerId, dpRank };
  const seeds = new SaltCache();
  const packed = new PoolEventBatch();
  let droppedBlockSize = 0;
  let droppedNoCompleteBlock = 0;
  let lastDroppedBlockSize = 0;
  let blocks = 0;
  for (const ev of batch.events) {
    if (ev.kind !== 'cleared') blocks += ev.blockHashes.length;
    const c = toPoolEvent(source, ev, { kvBlockSize: opts.kvBlockSize, eagle: opts.eagle }, seeds);
    if ('event' in c) packed.add(c.event);
    else if (c.dropped === 'block_size') {
      droppedBlockSize += 1;
      if (ev.kind === 'stored') lastDroppedBlockSize = ev.blockSize;
    }
    else droppedNoCompleteBlock += 1;
  }
  const { meta, words } = packed.packed();
  return {
    summary: {
      timestamp: batch.timestamp,
      dpRank,
      events: batch.events.length,
      blocks,
      ignored: batch.ignored,
      droppedBlockSize,
      droppedNoCompleteBlock,
      lastDroppedBlockSize,
    },
    meta: Array.from(meta),
    words: Array.from(words),
  };
}

export type Outcome = { ok: Decoded } | { error: { name: string; code?: string; message: string } };

export function outcome(fn: () => Decoded): Outcome {
  try {
    return { ok: fn() };
  } catch (err) {
    const e = err as Error & { code?: string };
    return { error: { name: e.name, code: e.code, message: e.message } };
  }
}

/**
 * Decodes into arrays pre-filled with a pattern and checks that a rejection leaves every element
 * as it was. Returns the error (or null when the payload was accepted).
 */
export function rejectsWithoutWriting(decoder: EngineBatchDecoder, payload: Uint8Array, fallbackRank = 0): (Error & { code?: string }) | null {
  const meta = new Uint32Array(4096).fill(0xa5a5a5a5);
  const words = new BigUint64Array(4096).fill(0x5a5a5a5a5a5a5a5an);
  try {
    decoder.decodeInto(payload, fallbackRank, meta, 3, words, 7);
    return null;
  } catch (err) {
    expect(meta.every((v) => v === 0xa5a5a5a5)).toBe(true);
    expect(words.every((v) => v === 0x5a5a5a5a5a5a5a5an)).toBe(true);
    return err as Error & { code?: string };
  }
}

// --- Random valid-ish batches (every field the engines send, both encodings) ---------------------

const HEX = '0123456789abcdef';
const hex64 = fc.array(fc.integer({ min: 0, max: 15 }), { minLength: 64, maxLength: 64 }).map((ds) => ds.map((d) => HEX[d]).join(''));

/** Engine hashes as msgpackr encodes them: small ints, floats (> 2^32), int64 / uint64 bigints, bytes. */
const engineHash = fc.oneof(
  fc.integer({ min: 0, max: 0xffff_ffff }),
  fc.integer({ min: -0x8000_0000, max: -1 }),
  fc.bigInt({ min: -(1n << 63n), max: (1n << 64n) - 1n }),
  fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
  fc.uint8Array({ minLength: 1, maxLength: 33 }).map((b) => Buffer.from(b)),
);
// A small pool so that repeats (self-referencing stores) happen now and then.
const repeatingHash = fc.oneof({ weight: 8, arbitrary: engineHash }, { weight: 1, arbitrary: fc.constantFrom(1, 2, 3n) });
const tokenId = fc.oneof({ weight: 6, arbitrary: fc.integer({ min: 0, max: 200_000 }) }, { weight: 1, arbitrary: fc.constantFrom(0, 127, 128, 255, 256, 65535, 65536, 0xffff_ffff) });
const medium = fc.constantFrom<unknown>(undefined, null, 'GPU', 'GPU', 'CPU', 'DISK', 'DEVICE', 'cpu', 'CPU_TIER1');
const kind = fc.constantFrom<unknown>(undefined, undefined, null, 'full_attention', 'mla_attention', 'sliding_window', 'mamba');
const group = fc.constantFrom<unknown>(undefined, undefined, null, 0, 0, 1, 2);
const loraName = fc.constantFrom<unknown>(undefined, null, '', 'adapter-a', 'adapter-b', 'ünï-çødé');
const extraKey = fc.oneof(
  hex64,
  hex64.map((id) => [id, 0]),
  hex64.map((id) => ({ type: 'mm', hash: id })),
  fc.constantFrom<unknown>('lora-x', 7, null, ['salt', 3], { type: 'lora', hash: 'x' }, [], 'f'.repeat(63), 'g'.repeat(64)),
);
const extraKeys = fc.oneof(
  { weight: 3, arbitrary: fc.constant<unknown>(undefined) },
  { weight: 1, arbitrary: fc.constant<unknown>(null) },
  { weight: 3, arbitrary: fc.array(fc.oneof(fc.constant(null), fc.array(extraKey, { maxLength: 3 })), { maxLength: 5 }) },
);
const mmInfos = fc.oneof(
  { weight: 3, arbitrary: fc.constant<unknown>(undefined) },
  { weight: 1, arbitrary: fc.constant<unknown>(null) },
  {
    weight: 3,
    arbitrary: fc.array(
      fc.oneof(
        fc.constant(null),
        fc.array(engineHash, { maxLength: 3 }).map((hs) => ({ mm_objects: hs.map((h) => ({ mm_hash: h, offsets: [[0, 2]] })) })),
        fc.constant({ other: 1 }),
      ),
      { maxLength: 5 },
    ),
  },
);

export interface EventSpec {
  tagged: 'array' | 'map';
  value: unknown;
}

/** Drops undefined (absent) fields from a map event; keeps null (nil). */
function mapEvent(fields: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined));
}

/** A positional event: undefined fields are nil unless trailing (then omitted, as omit_defaults does). */
function arrayEvent(tag: string, fields: unknown[]): unknown[] {
  const out = [tag, ...fields];
  while (out.length > 1 && out[out.length - 1] === undefined) out.pop();
  return out.map((v) => (v === undefined ? null : v));
}

function storedEvent(kvBlockSize: number) {
  return fc
    .record({
      tagged: fc.constantFrom<'array' | 'map'>('array', 'map'),
      blocks: fc.integer({ min: 0, max: 6 }),
      tokenDelta: fc.integer({ min: -3, max: 3 }),
      bigram: fc.boolean(),
      blockSize: fc.oneof({ weight: 6, arbitrary: fc.constant(kvBlockSize) }, { weight: 1, arbitrary: fc.integer({ min: 1, max: 8 }) }),
      parent: fc.oneof(fc.constant<unknown>(undefined), fc.constant<unknown>(null), repeatingHash),
      medium,
      kind,
      group,
      loraName,
      sglangSalt: fc.boolean(),
      extraKeys,
      mmInfos,
      trailing: fc.array(fc.constantFrom<unknown>(1, 'LOCAL', null), { maxLength: 2 }),
      seed: fc.array(repeatingHash, { minLength: 6, maxLength: 6 }),
      tokens: fc.array(tokenId, { minLength: 60, maxLength: 60 }),
    })
    .map((r): EventSpec => {
      const hashes = r.seed.slice(0, r.blocks);
      const tokenCount = Math.max(0, r.blocks * r.blockSize + r.tokenDelta);
      const tokens = Array.from({ length: tokenCount }, (_, i) => r.tokens[i % r.tokens.length]);
      const tokenIds = r.bigram && tokens.length >= 2 ? tokens.slice(0, -1).map((t, i) => [t, tokens[i + 1]]) : tokens;
      if (r.tagged === 'map') {
        return {
          tagged: 'map',
          value: mapEvent({
            type: 'BlockStored',
            block_hashes: hashes,
            parent_block_hash: r.parent,
            token_ids: tokenIds,
            block_size: r.blockSize,
            lora_id: null,
            medium: r.medium,
            lora_name: r.loraName,
            extra_keys: r.extraKeys,
            block_mm_infos: r.mmInfos,
            group_idx: r.group,
            kv_cache_spec_kind: r.kind,
          }),
        };
      }
      const lora = r.sglangSalt ? { salt: 'tenant', x: [1, 2] } : r.loraName;
      return {
        tagged: 'array',
        value: arrayEvent('BlockStored', [hashes, r.parent ?? null, tokenIds, r.blockSize, null, r.medium, lora, r.extraKeys, r.group, r.kind, undefined, ...r.trailing]),
      };
    });
}

const removedEvent = fc
  .record({ tagged: fc.constantFrom<'array' | 'map'>('array', 'map'), hashes: fc.array(repeatingHash, { maxLength: 6 }), medium, kind, group })
  .map(
    (r): EventSpec =>
      r.tagged === 'map'
        ? { tagged: 'map', value: mapEvent({ type: 'BlockRemoved', block_hashes: r.hashes, medium: r.medium, group_idx: r.group, kv_cache_spec_kind: r.kind }) }
        : { tagged: 'array', value: arrayEvent('BlockRemoved', [r.hashes, r.medium, r.group]) },
  );

const otherEvent = fc.constantFrom<EventSpec>(
  { tagged: 'array', value: ['AllBlocksCleared'] },
  { tagged: 'map', value: { type: 'AllBlocksCleared' } },
  { tagged: 'array', value: ['AllBlocksCleared', 1, 2] },
  { tagged: 'map', value: { type: 'KVCacheResized', blocks: [1, 2] } },
  { tagged: 'array', value: ['BlockEvicted', [1, 2, 3], 'x'] },
);

export function batchArbitrary(kvBlockSize: number) {
  const event = fc.oneof({ weight: 5, arbitrary: storedEvent(kvBlockSize) }, { weight: 2, arbitrary: removedEvent }, { weight: 1, arbitrary: otherEvent });
  return fc
    .record({
      envelope: fc.constantFrom<'array' | 'map'>('array', 'map'),
      ts: fc.oneof(fc.double({ min: 1e9, max: 2e9, noNaN: true }), fc.integer({ min: 0, max: 2 ** 31 }), fc.bigInt({ min: 0n, max: 1n << 60n })),
      events: fc.array(event, { maxLength: 6 }),
      rank: fc.constantFrom<unknown>(undefined, null, 0, 1, 7),
      rankKey: fc.constantFrom('data_parallel_rank', 'attn_dp_rank', 'dp_rank'),
      compact: fc.boolean(),
    })
    .map((r) => {
      const events = r.events.map((e) => e.value);
      const body =
        r.envelope === 'array'
          ? r.rank === undefined
            ? [r.ts, events]
            : [r.ts, events, r.rank]
          : mapEvent({ ts: r.ts, events, [r.rankKey]: r.rank });
      return (r.compact ? compactPackr : plainPackr).pack(body);
    });
}
