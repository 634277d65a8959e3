// The native engine-batch decoder: the spec's example bytes, the decodeInto contract (appending,
// growing, SharedArrayBuffer-backed arrays, ranks), argument checks, and the golden hashing vectors
// through engine events.
import { blockHashes, EngineBatchDecoder, PoolEventBatch, PoolFilterState, type EngineDecodeResult } from '../../src/native';
import { compactPackr, nativeDecode, OPTIONS, rejectsWithoutWriting } from './engine-decoder.helpers';
import { expectThrows, loadVector, type BlockCase } from './hashing.helpers';

/** Hex bytes and quoted strings (their UTF-8 bytes, no header), as engine-inputs.md §1.6 writes them. */
function bytes(...parts: string[]): Buffer {
  return Buffer.concat(parts.map((p) => (p.startsWith('"') ? Buffer.from(p.slice(1, -1), 'utf8') : Buffer.from(p.replace(/\s+/g, ''), 'hex'))));
}

const TS = 'cb 41 d9 54 fc 40 20 00 00';
const HASH = 12345678901234567890n;
const HASH_CF = 'cf ab 54 a9 8c eb 1f 0a d2';
const KIND = 'ae 66 75 6c 6c 5f 61 74 74 65 6e 74 69 6f 6e';

// engine-inputs.md §1.6, exact example bytes (block size 4, tokens [1, 2, 3, 4], dp rank 0).
const LEGACY_ARRAY = bytes('93', TS, '91 98 ab', '"BlockStored"', '91', HASH_CF, 'c0 94 01 02 03 04 04 c0 a3', '"GPU"', 'c0 00');
const LATE_ARRAY = bytes('93', TS, '91 9b ab', '"BlockStored"', '91', HASH_CF, 'c0 94 01 02 03 04 04 c0 a3', '"GPU"', 'c0', '91 c0 00', KIND, '00');
const MAP_EVENTS = bytes(
  '93', TS, '91 8b',
  'a4', '"type"', 'ab', '"BlockStored"',
  'ac', '"block_hashes"', '91', HASH_CF,
  'b1', '"parent_block_hash"', 'c0',
  'a9', '"token_ids"', '94 01 02 03 04',
  'aa', '"block_size"', '04',
  'a7', '"lora_id"', 'c0',
  'a6', '"medium"', 'a3', '"GPU"',
  'a9', '"lora_name"', 'c0',
  'aa', '"extra_keys"', '91 c0',
  'a9', '"group_idx"', '00',
  'b2', '"kv_cache_spec_kind"', KIND,
  '00',
);
const REMOVED_MAP = bytes('93', TS, '91 84 a4', '"type"', 'ac', '"BlockRemoved"', 'ac', '"block_hashes"', '91', HASH_CF, 'a6', '"medium"', 'a3', '"GPU"', 'a9', '"group_idx"', '00 00');
const REMOVED_ARRAY = bytes('93', TS, '91 93 ac', '"BlockRemoved"', '91', HASH_CF, 'a3', '"GPU"', '00');
const CLEARED_MAP = bytes('93', TS, '91 81 a4', '"type"', 'b0', '"AllBlocksCleared"', '00');
const CLEARED_ARRAY = bytes('93', TS, '91 91 b0', '"AllBlocksCleared"', '00');

const W = OPTIONS.workerId;
const tokensHash = (tokens: number[]) => blockHashes(Uint32Array.from(tokens), tokens.length, false, 1337n)[0];
const TOKENS_HASH = tokensHash([1, 2, 3, 4]);

describe('spec example bytes (engine-inputs.md §1.6)', () => {
  const decoder = new EngineBatchDecoder(OPTIONS);

  it.each([
    ['legacy array events', LEGACY_ARRAY],
    ['late array events', LATE_ARRAY],
    ['map events (vLLM PR #42892)', MAP_EVENTS],
  ])('%s: one stored block, hashed', (_name, payload) => {
    expect(nativeDecode(decoder, payload)).toEqual({
      summary: { timestamp: 1700000000.5, dpRank: 0, events: 1, blocks: 1, ignored: 0, droppedBlockSize: 0, droppedNoCompleteBlock: 0, lastDroppedBlockSize: 0 },
      meta: [1, 0, 0, 0, 1],
      words: [W, HASH, TOKENS_HASH],
    });
  });

  it.each([
    ['map', REMOVED_MAP],
    ['array', REMOVED_ARRAY],
  ])('BlockRemoved (%s)', (_name, payload) => {
    const out = nativeDecode(decoder, payload);
    expect([out.meta, out.words, out.summary.blocks]).toEqual([[2, 0, 0, 0, 1], [W, HASH], 1]);
  });

  it.each([
    ['map', CLEARED_MAP],
    ['array', CLEARED_ARRAY],
  ])('AllBlocksCleared (%s)', (_name, payload) => {
    const out = nativeDecode(decoder, payload);
    expect([out.meta, out.words, out.summary.events]).toEqual([[3, 0, 0, 0, 0], [W], 1]);
  });

  it('the packed output is what PoolEventBatch encodes and PoolFilterState.applyPacked accepts', () => {
    const expected = new PoolEventBatch()
      .addStored(W, 0, null, null, [HASH], [TOKENS_HASH])
      .addRemoved(W, 0, [HASH])
      .addCleared(W, 0)
      .packed();
    const meta = new Uint32Array(15);
    const words = new BigUint64Array(6);
    let m = 0;
    let w = 0;
    for (const payload of [MAP_EVENTS, REMOVED_ARRAY, CLEARED_MAP]) {
      const r = decoder.decodeInto(payload, 0, meta, m, words, w) as EngineDecodeResult;
      m = r.metaEnd;
      w = r.wordsEnd;
    }
    expect([m, w]).toEqual([15, 6]);
    expect(meta).toEqual(expected.meta);
    expect(words).toEqual(expected.words);
    const pool = new PoolFilterState({ bucketCount: 1024 });
    expect(pool.applyPacked(meta, words).errorCount).toBe(0);
    expect(pool.stats().lineageEntries).toBe(0);
    pool.close();
  });
});

describe('decodeInto', () => {
  const decoder = new EngineBatchDecoder(OPTIONS);
  const storeOf = (hashes: number[], parent: number | null = null) => ({
    type: 'BlockStored',
    block_hashes: hashes,
    parent_block_hash: parent,
    token_ids: hashes.flatMap((h) => [h, h, h, h]),
    block_size: 4,
  });
  const batch = (events: unknown[], rank?: unknown) => compactPackr.pack(rank === undefined ? [1.5, events] : [1.5, events, rank]);

  it('appends at the offsets, leaving the elements before and after alone', () => {
    const meta = new Uint32Array(20).fill(7);
    const words = new BigUint64Array(20).fill(9n);
    const r = decoder.decodeInto(batch([storeOf([11, 12], 10)]), 0, meta, 3, words, 2) as EngineDecodeResult;
    expect([r.metaEnd, r.wordsEnd]).toEqual([8, 2 + 1 + 1 + 2 + 2]);
    expect(Array.from(meta.subarray(0, 3))).toEqual([7, 7, 7]);
    expect(Array.from(meta.subarray(3, 8))).toEqual([1, 0, 1, 0, 2]);
    expect(Array.from(meta.subarray(8))).toEqual(new Array(12).fill(7));
    expect(Array.from(words.subarray(2, 6))).toEqual([W, 10n, 11n, 12n]);
    expect(Array.from(words.subarray(8))).toEqual(new Array(12).fill(9n));
  });

  it('reports the lengths it needs when the arrays are too small, and writes nothing', () => {
    const payload = batch([storeOf([1, 2, 3]), { type: 'AllBlocksCleared' }]);
    const meta = new Uint32Array(12).fill(1);
    const words = new BigUint64Array(8).fill(2n);
    expect(decoder.decodeInto(payload, 0, meta, 2, words, 1)).toEqual({ needMeta: 12, needWords: 1 + 7 + 1 });
    expect(meta.every((v) => v === 1) && words.every((v) => v === 2n)).toBe(true);
    const bigger = new BigUint64Array(9);
    expect(decoder.decodeInto(payload, 0, meta, 2, bigger, 1)).toMatchObject({ metaEnd: 12, wordsEnd: 9, events: 2, blocks: 3 });
  });

  it('with `reuse`, every call answers in one of two objects holding its own values; without, each call in a new one', () => {
    const meta = new Uint32Array(20);
    const words = new BigUint64Array(20);
    const first = decoder.decodeInto(batch([storeOf([1])]), 0, meta, 0, words, 0, true) as EngineDecodeResult;
    expect(first).toMatchObject({ metaEnd: 5, blocks: 1 });
    const second = decoder.decodeInto(batch([storeOf([2, 3])]), 0, meta, 5, words, first.wordsEnd, true) as EngineDecodeResult;
    expect(second).toBe(first);
    expect(second).toMatchObject({ metaEnd: 10, blocks: 2 });
    const room = decoder.decodeInto(batch([storeOf([4])]), 0, meta, 20, words, 0, true);
    expect(room).toEqual({ needMeta: 25, needWords: expect.any(Number) });
    expect(decoder.decodeInto(batch([storeOf([5])]), 0, meta, 20, words, 0, true)).toBe(room);
    const own = decoder.decodeInto(batch([storeOf([6])]), 0, meta, 0, words, 0) as EngineDecodeResult;
    expect(own).not.toBe(first);
    expect(decoder.decodeInto(batch([storeOf([7, 8])]), 0, meta, 0, words, 0)).not.toBe(own);
    expect(own.blocks).toBe(1);
  });

  it('writes into SharedArrayBuffer-backed arrays and reads a SharedArrayBuffer-backed payload', () => {
    const source = batch([storeOf([5])], 3);
    const payload = new Uint8Array(new SharedArrayBuffer(source.length + 5), 5);
    payload.set(source);
    const meta = new Uint32Array(new SharedArrayBuffer(40));
    const words = new BigUint64Array(new SharedArrayBuffer(64));
    const r = decoder.decodeInto(payload, 0, meta, 0, words, 0) as EngineDecodeResult;
    expect(r).toMatchObject({ metaEnd: 5, wordsEnd: 3, dpRank: 3 });
    expect(Array.from(meta.subarray(0, 5))).toEqual([1, 3, 0, 0, 1]);
    expect(Array.from(words.subarray(0, 3))).toEqual([W, 5n, tokensHash([5, 5, 5, 5])]);
  });

  it('dpRank: the batch rank, else the fallback; the first of data_parallel_rank / attn_dp_rank / dp_rank that is not nil', () => {
    const ranks = (payload: Uint8Array, fallback: number) => nativeDecode(decoder, payload, fallback).summary.dpRank;
    expect(ranks(batch([]), 5)).toBe(5);
    expect(ranks(batch([], null), 5)).toBe(5);
    expect(ranks(batch([], 2), 5)).toBe(2);
    const map = (fields: Record<string, unknown>) => compactPackr.pack({ ts: 1, events: [], ...fields });
    expect(ranks(map({ attn_dp_rank: 3 }), 0)).toBe(3);
    expect(ranks(map({ dp_rank: 4 }), 0)).toBe(4);
    expect(ranks(map({ data_parallel_rank: null, attn_dp_rank: 6, dp_rank: 4 }), 0)).toBe(6);
    expect(ranks(map({ data_parallel_rank: 1, attn_dp_rank: 6 }), 0)).toBe(1);
    // Every event of the batch carries the rank.
    expect(nativeDecode(decoder, batch([{ type: 'AllBlocksCleared' }, storeOf([1])], 6)).meta.filter((_, i) => i % 5 === 1)).toEqual([6, 6]);
  });

  it('a batch rank outside [dpStartRank, dpStartRank + dpSize) is RankOutOfRange, and writes nothing', () => {
    const ranked = new EngineBatchDecoder({ ...OPTIONS, dpStartRank: 4, dpSize: 2 });
    expect(nativeDecode(ranked, batch([storeOf([1])], 5), 4).summary.dpRank).toBe(5);
    for (const rank of [3, 6, 0xffff_ffff]) {
      const e = rejectsWithoutWriting(ranked, batch([storeOf([1])], rank), 4);
      expect(e).toMatchObject({ code: 'RankOutOfRange', rank });
      expect(e?.message).toContain(`rank ${rank}`);
    }
    // A malformed batch with a bad rank is malformed first.
    expect(rejectsWithoutWriting(ranked, batch([7], 9), 4)?.code).toBe('MalformedKvBatch');
  });

  it('counts what it drops: other block size, no complete block, ignored events', () => {
    const out = nativeDecode(
      decoder,
      batch([
        { ...storeOf([1]), block_size: 16 },
        { ...storeOf([2]), token_ids: [1, 2, 3] },
        { ...storeOf([3, 4]), token_ids: [1, 2, 3, 4, 5] }, // stops at the incomplete second block
        { ...storeOf([5]), medium: 'CPU' },
        { ...storeOf([6]), kv_cache_spec_kind: 'sliding_window' },
        { ...storeOf([7]), group_idx: 1 },
        storeOf([8, 8]),
        storeOf([9], 9),
        { type: 'SomethingNew' },
      ]),
    );
    expect(out.summary).toMatchObject({ events: 3, blocks: 4, ignored: 6, droppedBlockSize: 1, droppedNoCompleteBlock: 1, lastDroppedBlockSize: 16 });
    expect(out.meta).toEqual([1, 0, 0, 0, 1]);
    expect(out.words.slice(0, 2)).toEqual([W, 3n]);
  });

  it('self-referencing stores of any size are ignored (a repeated id, or the parent among the ids)', () => {
    const ids = Array.from({ length: 300 }, (_, i) => 1_000_000 + i * 7919);
    const verdicts = [
      storeOf(ids),
      storeOf([...ids.slice(0, 299), ids[150]]),
      storeOf(ids, ids[299]),
      storeOf(ids.slice(0, 9), ids[4]),
      storeOf([...ids.slice(0, 8), ids[0]]),
    ].map((event) => nativeDecode(decoder, batch([event])).summary.ignored);
    expect(verdicts).toEqual([0, 1, 1, 1, 1]);
  });

  it('checks its arguments', () => {
    const ok = batch([]);
    const m = new Uint32Array(8);
    const w = new BigUint64Array(8);
    expectThrows(() => decoder.decodeInto('x' as unknown as Uint8Array, 0, m, 0, w, 0), 'TypeError');
    expectThrows(() => decoder.decodeInto(ok, 0, new Int32Array(8) as unknown as Uint32Array, 0, w, 0), 'TypeError');
    expectThrows(() => decoder.decodeInto(ok, 0, m, 0, new BigInt64Array(8) as unknown as BigUint64Array, 0), 'TypeError');
    expectThrows(() => decoder.decodeInto(ok, 0, m, 9, w, 0), 'RangeError');
    expectThrows(() => decoder.decodeInto(ok, 0, m, 0, w, 9), 'RangeError');
    expectThrows(() => decoder.decodeInto(ok, 8, m, 0, w, 0), 'RangeError');
    expectThrows(() => decoder.decodeInto(ok, -1, m, 0, w, 0), 'RangeError');
    expectThrows(() => new EngineBatchDecoder({ ...OPTIONS, kvBlockSize: 0 }), 'RangeError');
    expectThrows(() => new EngineBatchDecoder({ ...OPTIONS, dpSize: 0 }), 'RangeError');
    expectThrows(() => new EngineBatchDecoder({ ...OPTIONS, dpStartRank: 0xffff_ffff, dpSize: 2 }), 'RangeError');
    expectThrows(() => new EngineBatchDecoder({ ...OPTIONS, workerId: 1 as unknown as bigint }), 'TypeError');
    expectThrows(() => new EngineBatchDecoder({ ...OPTIONS, eagle: 1 as unknown as boolean }), 'TypeError');
  });
});

// block_hashes.json through engine events: the tokens of a BlockStored with one engine id per
// expected block; the tokens hashes of the packed batch are the expected block hashes. Engine events
// carry no cache namespace, so cases with one do not apply.
describe('golden block hashes through the decoder (block_hashes.json)', () => {
  const cases = (loadVector('block_hashes.json').cases as BlockCase[]).filter((c) => !c.cache_namespace);

  it('covers the standard, Eagle, LoRA and multimodal cases', () => {
    expect(cases.length).toBeGreaterThanOrEqual(35);
    expect(cases.some((c) => c.hash_format === 'eagle' && c.tokens.length > 2)).toBe(true);
    expect(cases.some((c) => c.mm_infos !== null)).toBe(true);
    expect(cases.some((c) => c.lora_name)).toBe(true);
  });

  const encodings = ['block_mm_infos, map event', 'extra_keys, array event'] as const;
  describe.each(encodings)('%s', (encoding) => {
    it.each(cases.map((c) => [c.name, c] as const))('%s', (_name, c) => {
      const decoder = new EngineBatchDecoder({ ...OPTIONS, kvBlockSize: c.kv_block_size, eagle: c.hash_format === 'eagle' });
      const expected = c.expected_block_hashes.map(BigInt);
      const ids = expected.map((_, i) => BigInt(i + 1));
      // Eagle tokens as the bigram pairs Eagle engines send (the same tokens, one pair fewer).
      const tokenIds = c.hash_format === 'eagle' && c.tokens.length >= 2 ? c.tokens.slice(0, -1).map((t, i) => [t, c.tokens[i + 1]]) : c.tokens;
      const mmHashes = c.mm_infos?.map((info) => (info === null ? null : info.mm_objects.map((o) => BigInt(o.mm_hash))));
      let event: unknown;
      if (encoding === 'block_mm_infos, map event') {
        const infos = c.mm_infos?.map((info) => (info === null ? null : { mm_objects: info.mm_objects.map((o) => ({ mm_hash: BigInt(o.mm_hash), offsets: o.offsets })) }));
        event = { type: 'BlockStored', block_hashes: ids, parent_block_hash: null, token_ids: tokenIds, block_size: c.kv_block_size, lora_name: c.lora_name, block_mm_infos: infos ?? null };
      } else {
        // A 64-hex identifier whose first 16 hex digits are the mm hash; vLLM's (identifier, offset) tuples.
        const extraKeys = mmHashes?.map((hs) => (hs === null ? null : hs.map((h) => [h.toString(16).padStart(16, '0') + 'ab'.repeat(24), 0])));
        event = ['BlockStored', ids, null, tokenIds, c.kv_block_size, null, 'GPU', c.lora_name, extraKeys ?? null];
      }
      const out = nativeDecode(decoder, compactPackr.pack([0, [event], 0]));
      if (expected.length === 0) {
        expect(out.summary.droppedNoCompleteBlock).toBe(1);
        expect(out.meta).toEqual([]);
        return;
      }
      expect(out.meta).toEqual([1, 0, 0, 0, expected.length]);
      expect(out.words).toEqual([W, ...ids, ...expected]);
    });
  });
});
