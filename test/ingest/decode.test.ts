// Engine payloads through the production decoder (native EngineBatchDecoder), fixtures built here
// (spec bytes, msgpackr) with the outcome each must have: the packed events the pool gets (engine
// ids, canonical hashes of the tokens), the counters, or a MalformedKvBatch rejection.
import { pack } from 'msgpackr';
import { DecodeError } from '../../src/ingest/errors';
import { END_SEQ, encodeSequence, parseLiveMessage, parseReplayReply } from '../../src/ingest/frames';
import { EngineBatchDecoder, type EngineDecoderOptions } from '../../src/native';
import { encodeBatch } from '../../src/sim/encode';
import { nativeDecode, rejectsWithoutWriting } from '../native/engine-decoder.helpers';
import { tokensHashes, unpackEvents, type UnpackedEvent } from '../support/packed';

const W = 7n;
const decoders = new Map<string, EngineBatchDecoder>();

/** The decoder of a worker with ranks 0..7 and a pool of block size `kvBlockSize`. */
function decoderFor(kvBlockSize: number, eagle = false): EngineBatchDecoder {
  const opts: EngineDecoderOptions = { workerId: W, kvBlockSize, eagle, dpStartRank: 0, dpSize: 8 };
  const key = `${kvBlockSize}/${eagle}`;
  if (!decoders.has(key)) decoders.set(key, new EngineBatchDecoder(opts));
  return decoders.get(key)!;
}

/** What the pool gets from one payload: the summary and the events (workerId checked, rank kept). */
function decode(payload: Uint8Array, kvBlockSize = 4, eagle = false, fallbackRank = 0) {
  const d = nativeDecode(decoderFor(kvBlockSize, eagle), payload, fallbackRank);
  const { events } = unpackEvents(Uint32Array.from(d.meta), BigUint64Array.from(d.words));
  return {
    ...d.summary,
    events: events.map(({ workerId, dpRank, ...e }): UnpackedEvent => {
      expect([workerId, dpRank]).toEqual([W, d.summary.dpRank]);
      return e;
    }),
  };
}

/** msgpack bytes with the one fixstr "RAW" replaced by the given raw bytes (any, even invalid). */
function withRaw(packed: Uint8Array, rawHex: string): Buffer {
  const buf = Buffer.from(packed);
  const at = buf.indexOf(Buffer.from('a3524157', 'hex'));
  return Buffer.concat([buf.subarray(0, at), bytes(rawHex), buf.subarray(at + 4)]);
}

function expectMalformed(payload: Uint8Array, kvBlockSize = 4): void {
  expect(rejectsWithoutWriting(decoderFor(kvBlockSize), payload)?.code).toBe('MalformedKvBatch');
}

/** Hex bytes and quoted strings (their UTF-8 bytes, no header), as engine-inputs.md §1.6 writes them. */
function bytes(...parts: string[]): Buffer {
  return Buffer.concat(
    parts.map((p) => (p.startsWith('"') ? Buffer.from(p.slice(1, -1), 'utf8') : Buffer.from(p.replace(/\s+/g, ''), 'hex'))),
  );
}

const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');
const TS = 'cb 41 d9 54 fc 40 20 00 00';
const HASH = 12345678901234567890n;
const HASH_CF = 'cf ab 54 a9 8c eb 1f 0a d2';

// engine-inputs.md §1.6, exact example bytes.
const LEGACY_ARRAY = bytes('93', TS, '91 98 ab', '"BlockStored"', '91', HASH_CF, 'c0 94 01 02 03 04 04 c0 a3', '"GPU"', 'c0 00');
const LATE_ARRAY = bytes(
  '93', TS, '91 9b ab', '"BlockStored"', '91', HASH_CF, 'c0 94 01 02 03 04 04 c0 a3', '"GPU"', 'c0',
  '91 c0 00 ae 66 75 6c 6c 5f 61 74 74 65 6e 74 69 6f 6e', '00',
);
const MAP_EVENTS = bytes(
  '93', TS, '91 8b',
  'a4 74 79 70 65  ab 42 6c 6f 63 6b 53 74 6f 72 65 64',
  'ac 62 6c 6f 63 6b 5f 68 61 73 68 65 73  91', HASH_CF,
  'b1 70 61 72 65 6e 74 5f 62 6c 6f 63 6b 5f 68 61 73 68  c0',
  'a9 74 6f 6b 65 6e 5f 69 64 73  94 01 02 03 04',
  'aa 62 6c 6f 63 6b 5f 73 69 7a 65  04',
  'a7 6c 6f 72 61 5f 69 64  c0',
  'a6 6d 65 64 69 75 6d  a3 47 50 55',
  'a9 6c 6f 72 61 5f 6e 61 6d 65  c0',
  'aa 65 78 74 72 61 5f 6b 65 79 73  91 c0',
  'a9 67 72 6f 75 70 5f 69 64 78  00',
  'b2 6b 76 5f 63 61 63 68 65 5f 73 70 65 63 5f 6b 69 6e 64  ae 66 75 6c 6c 5f 61 74 74 65 6e 74 69 6f 6e',
  '00',
);
const REMOVED_MAP = bytes('93', TS, '91 84 a4', '"type"', 'ac', '"BlockRemoved"', 'ac', '"block_hashes"', '91', HASH_CF, 'a6', '"medium"', 'a3', '"GPU"', 'a9', '"group_idx"', '00 00');
const CLEARED_MAP = bytes('93', TS, '91 81 a4 74 79 70 65 b0 41 6c 6c 42 6c 6f 63 6b 73 43 6c 65 61 72 65 64 00');
const REMOVED_ARRAY = bytes('93', TS, '91 93 ac', '"BlockRemoved"', '91', HASH_CF, 'a3', '"GPU"', '00');
const CLEARED_ARRAY = bytes('93', TS, '91 91 b0', '"AllBlocksCleared"', '00');

const STORED: UnpackedEvent = { kind: 'stored', blockHashes: [HASH], parentHash: null, tokensHashes: tokensHashes([1, 2, 3, 4], 4) };
const SUMMARY = { timestamp: 1700000000.5, dpRank: 0, ignored: 0, droppedBlockSize: 0, droppedNoCompleteBlock: 0, lastDroppedBlockSize: 0 };

describe('spec example bytes (engine-inputs.md §1.6)', () => {
  it('have the documented sizes', () => {
    expect([LEGACY_ARRAY.length, LATE_ARRAY.length, MAP_EVENTS.length, REMOVED_MAP.length, CLEARED_MAP.length]).toEqual([48, 66, 188, 76, 35]);
  });

  it.each([
    ['legacy array events', LEGACY_ARRAY],
    ['late array events', LATE_ARRAY],
    ['map events (vLLM PR #42892)', MAP_EVENTS],
  ])('%s decode to the same BlockStored', (_name, payload) => {
    expect(decode(payload)).toEqual({ ...SUMMARY, events: [STORED], blocks: 1 });
  });

  it.each([
    ['map', REMOVED_MAP],
    ['array', REMOVED_ARRAY],
  ])('BlockRemoved (%s)', (_name, payload) => {
    expect(decode(payload)).toEqual({ ...SUMMARY, events: [{ kind: 'removed', blockHashes: [HASH] }], blocks: 1 });
  });

  it.each([
    ['map', CLEARED_MAP],
    ['array', CLEARED_ARRAY],
  ])('AllBlocksCleared (%s)', (_name, payload) => {
    expect(decode(payload)).toEqual({ ...SUMMARY, events: [{ kind: 'cleared' }], blocks: 0 });
  });

  it('the simulated engine encodes exactly these bytes', () => {
    const stored = { type: 'BlockStored' as const, blockHashes: [HASH], parentBlockHash: null, tokenIds: [1, 2, 3, 4], blockSize: 4 };
    expect(hex(encodeBatch(1700000000.5, [stored], 0, { events: 'array' }))).toBe(hex(LEGACY_ARRAY));
    expect(hex(encodeBatch(1700000000.5, [{ ...stored, extraKeys: [null], groupIdx: 0, kvCacheSpecKind: 'full_attention' }], 0, { events: 'array' }))).toBe(hex(LATE_ARRAY));
    expect(hex(encodeBatch(1700000000.5, [{ ...stored, extraKeys: [null], groupIdx: 0, kvCacheSpecKind: 'full_attention' }], 0, { events: 'map' }))).toBe(hex(MAP_EVENTS));
    expect(hex(encodeBatch(1700000000.5, [{ type: 'BlockRemoved', blockHashes: [HASH], groupIdx: 0 }], 0, { events: 'map' }))).toBe(hex(REMOVED_MAP));
    expect(hex(encodeBatch(1700000000.5, [{ type: 'BlockRemoved', blockHashes: [HASH] }], 0, { events: 'array' }))).toBe(hex(REMOVED_ARRAY));
    expect(hex(encodeBatch(1700000000.5, [{ type: 'AllBlocksCleared' }], 0, { events: 'map' }))).toBe(hex(CLEARED_MAP));
    expect(hex(encodeBatch(1700000000.5, [{ type: 'AllBlocksCleared' }], 0, { events: 'array' }))).toBe(hex(CLEARED_ARRAY));
  });

  it('frames: topic, 8-byte big-endian sequence, payload', () => {
    const frames = [bytes('6b 76 2d 65 76 65 6e 74 73'), bytes('00 00 00 00 00 00 00 2a'), LEGACY_ARRAY];
    expect(parseLiveMessage(frames)).toEqual({ topic: 'kv-events', sequence: 42n, payload: LEGACY_ARRAY });
    expect(encodeSequence(42n)).toEqual(frames[1]);
  });
});

describe('block hash encodings', () => {
  const bin32 = Buffer.concat([Buffer.alloc(24, 0x5a), bytes('ab 54 a9 8c eb 1f 0a d2')]);
  it.each([
    ['uint64', bytes(HASH_CF), HASH],
    ['int64 (two\'s complement)', bytes('d3 ab 54 a9 8c eb 1f 0a d2'), HASH],
    ['bytes, 32 (last 8 big-endian)', Buffer.concat([bytes('c4 20'), bin32]), HASH],
    ['bytes, 8', bytes('c4 08 ab 54 a9 8c eb 1f 0a d2'), HASH],
    ['bytes, shorter than 8', bytes('c4 02 01 02'), 0x0102n],
    ['fixint', bytes('05'), 5n],
    ['negative fixint', bytes('ff'), 0xffff_ffff_ffff_ffffn],
    ['uint32', bytes('ce ff ff ff ff'), 0xffff_ffffn],
    ['int64 max negative', bytes('d3 80 00 00 00 00 00 00 00'), 1n << 63n],
  ])('%s', (_name, hashBytes, expected) => {
    const payload = bytes('93 00 91 93 ac', '"BlockRemoved"', '91', hashBytes.toString('hex'), 'c0 00');
    expect(decode(payload).events).toEqual([{ kind: 'removed', blockHashes: [expected] }]);
  });

  it.each([
    ['a float', 'cb 3f f8 00 00 00 00 00 00'],
    ['a string', 'a2 31 32'],
    ['empty bytes', 'c4 00'],
    ['nil', 'c0'],
    ['above u64', 'cb 43 f0 00 00 00 00 00 00'],
  ])('rejects %s', (_name, hashHex) => {
    expectMalformed(bytes('93 00 91 93 ac', '"BlockRemoved"', '91', hashHex, 'c0 00'));
  });

  it('the simulated engine\'s hash modes all decode to the same u64', () => {
    const events = [{ type: 'BlockStored' as const, blockHashes: [HASH, 7n], parentBlockHash: 0xfedcba9876543210n, tokenIds: [1, 2, 3, 4, 5, 6], blockSize: 3 }];
    const decoded = (['uint', 'int', 'bytes'] as const).map((hashes) => decode(encodeBatch(1, events, 0, { events: 'map', hashes }), 3).events);
    expect(decoded[0]).toEqual([{ kind: 'stored', blockHashes: [HASH, 7n], parentHash: 0xfedcba9876543210n, tokensHashes: tokensHashes([1, 2, 3, 4, 5, 6], 3) }]);
    expect(decoded[1]).toEqual(decoded[0]);
    expect(decoded[2]).toEqual(decoded[0]);
  });
});

describe('event contents and filtering', () => {
  const stored = (fields: Record<string, unknown>) => ({
    type: 'BlockStored', block_hashes: [1], parent_block_hash: null, token_ids: [9, 9], block_size: 2, lora_id: null, medium: 'GPU', lora_name: null, ...fields,
  });
  const batchOf = (...events: unknown[]) => decode(pack([1.5, events, 0]), 2);
  const base = (tokens: number[]) => tokensHashes(tokens, 2);

  it.each([
    ['medium CPU', { medium: 'CPU' }, false],
    ['medium STORAGE', { medium: 'STORAGE' }, false],
    ['medium CPU_PINNED', { medium: 'CPU_PINNED' }, false],
    ['medium NVME', { medium: 'NVME' }, false],
    ['medium EXTERNAL', { medium: 'EXTERNAL' }, false],
    ['medium cpu (names match exactly; anything else is the device tier, as in Dynamo)', { medium: 'cpu' }, true],
    ['medium HBM (unknown: device tier)', { medium: 'HBM' }, true],
    ['medium absent (null)', { medium: null }, true],
    ['medium DEVICE', { medium: 'DEVICE' }, true],
    ['group_idx 1', { group_idx: 1 }, false],
    ['group_idx 0', { group_idx: 0 }, true],
    ['kind sliding_window in group 0', { group_idx: 0, kv_cache_spec_kind: 'sliding_window' }, false],
    ['kind mamba', { kv_cache_spec_kind: 'mamba' }, false],
    ['kind mla_attention in group 1 (kind decides)', { group_idx: 1, kv_cache_spec_kind: 'mla_attention' }, true],
    ['kind sink_full_attention', { kv_cache_spec_kind: 'sink_full_attention' }, true],
  ])('BlockStored with %s counts: %s', (_name, fields, counts) => {
    const out = batchOf(stored(fields));
    expect(out.events).toEqual(counts ? [{ kind: 'stored', blockHashes: [1n], parentHash: null, tokensHashes: base([9, 9]) }] : []);
    expect([out.events.length, out.ignored, out.blocks]).toEqual(counts ? [1, 0, 1] : [0, 1, 0]);
  });

  it('filters BlockRemoved by tier and group, never AllBlocksCleared', () => {
    const out = batchOf(
      { type: 'BlockRemoved', block_hashes: [1], medium: 'CPU' },
      ['BlockRemoved', [2], 'GPU', 3],
      ['BlockRemoved', [3], 'GPU', 0],
      ['AllBlocksCleared'],
    );
    expect(out.events).toEqual([{ kind: 'removed', blockHashes: [3n] }, { kind: 'cleared' }]);
    expect(out.ignored).toBe(2);
  });

  it('ignores unknown event types but keeps the rest of the batch', () => {
    const out = batchOf({ type: 'BlockUpdated', foo: 1 }, ['SomethingNew', 1, 2], stored({}));
    expect(out.ignored).toBe(2);
    expect(out.events).toHaveLength(1);
  });

  it('the LoRA name salts the canonical hashes; an empty name is the base model', () => {
    const salted = tokensHashes([9, 9], 2, 'adapter-a');
    expect(salted).not.toEqual(base([9, 9]));
    expect(batchOf(stored({ lora_name: 'adapter-a' })).events[0]).toMatchObject({ tokensHashes: salted });
    expect(batchOf(stored({ lora_name: '' })).events[0]).toMatchObject({ tokensHashes: base([9, 9]) });
    expect(batchOf(['BlockStored', [1], 5, [1, 2], 2, null, 'GPU', 'tenant-lora']).events[0]).toEqual({
      kind: 'stored', blockHashes: [1n], parentHash: 5n, tokensHashes: tokensHashes([1, 2], 2, 'tenant-lora'),
    });
  });

  it('SGLang positional events: salt metadata where vLLM has lora_name', () => {
    const out = batchOf(['BlockStored', [1, 2], null, [1, 2, 3, 4], 2, null, 'GPU', { cache_salt: 'abc' }]);
    expect(out.events).toEqual([{ kind: 'stored', blockHashes: [1n, 2n], parentHash: null, tokensHashes: base([1, 2, 3, 4]) }]);
  });

  it('SGLang map events: salt metadata under "metadata", medium present', () => {
    const out = decode(pack([1.5, [{ type: 'BlockStored', block_hashes: [-3], parent_block_hash: 4, token_ids: [1, 2], block_size: 2, lora_id: null, medium: 'GPU', metadata: { cache_salt: 'salt' } }], 1]), 2);
    expect(out).toMatchObject({ dpRank: 1, events: [{ kind: 'stored', blockHashes: [0xffff_ffff_ffff_fffdn], parentHash: 4n, tokensHashes: base([1, 2]) }] });
  });

  it('a store of another block size is dropped and counted; too few tokens keep the complete blocks', () => {
    expect(decode(pack([1, [stored({})], 0]), 4)).toMatchObject({ events: [], droppedBlockSize: 1, lastDroppedBlockSize: 2, blocks: 1 });
    expect(batchOf(stored({ block_hashes: [1, 2, 3], token_ids: [1, 2, 3, 4, 5] })).events).toEqual([
      { kind: 'stored', blockHashes: [1n, 2n], parentHash: null, tokensHashes: base([1, 2, 3, 4]) },
    ]);
    expect(batchOf(stored({ block_hashes: [1], token_ids: [1] }))).toMatchObject({ events: [], droppedNoCompleteBlock: 1 });
  });

  it('ignores unknown map fields and extra trailing array elements', () => {
    const a = batchOf(stored({ event_version: 1, locality: 'LOCAL', ownership: 'x', brand_new: [1, 2] }));
    const b = batchOf(['BlockStored', [1], null, [9, 9], 2, null, 'GPU', null, null, 0, 'full_attention', null, 1, 'LOCAL', 'x', 'more']);
    expect(a.events).toEqual(b.events);
    expect(a.events).toHaveLength(1);
  });

  it('extracts MM hashes from extra_keys', () => {
    const id = '0123456789abcdef'.repeat(4);
    const out = batchOf(stored({
      block_hashes: [1, 2, 3],
      token_ids: [1, 2, 3, 4, 5, 6],
      extra_keys: [[[id, 0], 'adapter-a'], null, [{ type: 'mm', modality: 'image', hash: 'ffffffffffffffff' + '0'.repeat(48), block_offset: 0 }, id]],
    }));
    const mm = [[0x0123456789abcdefn], null, [0xffffffffffffffffn, 0x0123456789abcdefn]];
    expect(out.events[0]).toMatchObject({ tokensHashes: tokensHashes([1, 2, 3, 4, 5, 6], 2, null, false, mm) });
    expect(tokensHashes([1, 2, 3, 4, 5, 6], 2, null, false, mm)).not.toEqual(base([1, 2, 3, 4, 5, 6]));
    expect(batchOf(stored({ extra_keys: [['adapter-a']] })).events[0]).toMatchObject({ tokensHashes: base([9, 9]) });
  });

  it('Eagle bigram token pairs become the firsts plus the last second (windows of block size + 1)', () => {
    const eagle = tokensHashes([10, 11, 12, 13, 14], 2, null, true);
    const out = decode(pack([1, [stored({ block_hashes: [11, 12], token_ids: [[10, 11], [11, 12], [12, 13], [13, 14]], block_size: 2 })], 0]), 2, true);
    expect(out.events).toEqual([{ kind: 'stored', blockHashes: [11n, 12n], parentHash: null, tokensHashes: eagle }]);
    const sim = encodeBatch(1, [{ type: 'BlockStored', blockHashes: [11n, 12n], tokenIds: [10, 11, 12, 13, 14], bigramTokens: true, blockSize: 2 }], 0, { events: 'map' });
    expect(decode(sim, 2, true).events[0]).toMatchObject({ tokensHashes: eagle });
    expectMalformed(pack([1, [stored({ token_ids: [[1, 2], [3]] })], 0]), 2);
    expectMalformed(pack([1, [stored({ token_ids: [[1, 2], 3] })], 0]), 2);
  });

  it('a store that repeats a hash or its parent references itself and is dropped', () => {
    expect(batchOf(stored({ block_hashes: [1, 2, 1], token_ids: [1, 1, 2, 2, 3, 3] }))).toMatchObject({ events: [], ignored: 1 });
    expect(batchOf(stored({ block_hashes: [1, 2], parent_block_hash: 2, token_ids: [1, 1, 2, 2] }))).toMatchObject({ events: [], ignored: 1 });
    // -1 as int64 and 2^64-1 as uint64 are the same hash.
    expect(batchOf(stored({ block_hashes: [-1, 0xffff_ffff_ffff_ffffn], token_ids: [1, 1, 2, 2] }))).toMatchObject({ events: [], ignored: 1 });
  });

  it('takes MM hashes from Dynamo-style block_mm_infos before extra_keys', () => {
    const out = batchOf(stored({
      block_hashes: [1, 2],
      token_ids: [1, 2, 3, 4],
      block_mm_infos: [null, { mm_objects: [{ mm_hash: 9533257059414191570n, offsets: [[0, 2]] }, { mm_hash: 5, offsets: [] }] }],
      extra_keys: [['0123456789abcdef'.repeat(4)], null],
    }));
    expect(out.events[0]).toMatchObject({ tokensHashes: tokensHashes([1, 2, 3, 4], 2, null, false, [null, [9533257059414191570n, 5n]]) });
  });

  it('accepts a map envelope and SGLang attn_dp_rank', () => {
    expect(decode(pack({ ts: 2, events: [['AllBlocksCleared']], data_parallel_rank: 3 }))).toMatchObject({ timestamp: 2, dpRank: 3, events: [{ kind: 'cleared' }] });
    expect(decode(pack({ ts: 2, events: [], attn_dp_rank: 5 }))).toMatchObject({ dpRank: 5 });
    expect(decode(pack({ ts: 2, events: [], dp_rank: 6 }))).toMatchObject({ dpRank: 6 });
    // No rank in the batch: the rank of the socket it came on.
    expect(decode(pack([2, []]), 4, false, 2)).toMatchObject({ dpRank: 2 });
    expect(decode(pack([2, [], null]), 4, false, 2)).toMatchObject({ dpRank: 2 });
  });

  it('a rank outside the worker\'s ranks rejects the batch (RankOutOfRange), nothing written', () => {
    const e = rejectsWithoutWriting(decoderFor(4), pack({ ts: 2, events: [['AllBlocksCleared']], attn_dp_rank: 8 }));
    expect(e).toMatchObject({ code: 'RankOutOfRange', rank: 8 });
  });
});

describe('malformed payloads are rejected whole (MalformedKvBatch), nothing written', () => {
  const ok = ['BlockStored', [1], null, [1, 2], 2, null, 'GPU', null];
  it.each([
    ['reserved byte 0xc1', bytes('c1')],
    ['truncated', bytes('93 01')],
    ['trailing bytes', Buffer.concat([CLEARED_ARRAY, bytes('00')])],
    ['empty', Buffer.alloc(0)],
    ['batch is a string', pack('hello')],
    ['events not an array', pack([1, 'x', 0])],
    ['ts not a number', pack(['now', [], 0])],
    ['dp_rank negative', pack([1, [], -1])],
    ['dp_rank a string', pack([1, [], '0'])],
    ['event is a number', pack([1, [7], 0])],
    ['event tag not a string', pack([1, [[7, [1]]], 0])],
    ['block_hashes not an array', pack([1, [['BlockRemoved', 5]], 0])],
    ['hash is a float', pack([1, [['BlockRemoved', [1.5]]], 0])],
    ['token id negative', pack([1, [['BlockStored', [1], null, [-1, 2], 2]], 0])],
    ['token id above u32', pack([1, [['BlockStored', [1], null, [2 ** 32, 2], 2]], 0])],
    ['token ids not an array', pack([1, [['BlockStored', [1], null, 'ab', 2]], 0])],
    ['block_size 0', pack([1, [['BlockStored', [1], null, [1, 2], 0]], 0])],
    ['block_size missing', pack([1, [['BlockStored', [1], null, [1, 2]]], 0])],
    ['lora_name a number', pack([1, [[...ok.slice(0, 7), 5]], 0])],
    ['medium a number', pack([1, [['BlockRemoved', [1], 3]], 0])],
    ['a bad event after a good one', pack([1, [ok, ['BlockRemoved', 'x']], 0])],
    ['array longer than the payload', bytes('93 01 dd 7f ff ff ff 00')],
    ['nested 100 000 deep', Buffer.concat([bytes('93 01 91 94 ac'), Buffer.from('BlockRemoved'), bytes('90 c0'), Buffer.alloc(100_000, 0x91), bytes('00 00')])],
    ['non-UTF-8 lora_name', withRaw(pack([1, [[...ok.slice(0, 7), 'RAW']], 0]), 'a2 c3 28')],
  ])('%s', (_name, payload) => {
    expectMalformed(payload);
  });
});

describe('frames', () => {
  const seq = encodeSequence(7n);
  it.each([
    ['two frames', [Buffer.from(''), seq]],
    ['four frames', [Buffer.from(''), seq, Buffer.from('x'), Buffer.from('y')]],
    ['seven-byte sequence', [Buffer.from(''), seq.subarray(1), Buffer.from('x')]],
    ['nine-byte sequence', [Buffer.from(''), Buffer.concat([seq, Buffer.from([0])]), Buffer.from('x')]],
  ])('live message with %s is malformed', (_name, frames) => {
    expect(() => parseLiveMessage(frames)).toThrow(DecodeError);
  });

  it('replay replies: both layouts and both end markers', () => {
    const empty = Buffer.alloc(0);
    const end = encodeSequence(END_SEQ);
    expect(parseReplayReply([empty, seq, Buffer.from('p')])).toEqual({ end: false, topic: null, sequence: 7n, payload: Buffer.from('p') });
    expect(parseReplayReply([empty, Buffer.from('kv'), seq, Buffer.from('p')])).toEqual({ end: false, topic: 'kv', sequence: 7n, payload: Buffer.from('p') });
    expect(parseReplayReply([empty, end, empty])).toEqual({ end: true });
    expect(parseReplayReply([empty, empty, end, empty])).toEqual({ end: true });
    expect(parseReplayReply([empty, Buffer.from('kv'), seq, empty])).toEqual({ end: true }); // TRT-LLM sentinel
    expect(end).toEqual(Buffer.alloc(8, 0xff));
    expect(() => parseReplayReply([empty, seq])).toThrow(DecodeError);
    expect(() => parseReplayReply([empty, Buffer.from('abc'), Buffer.from('p')])).toThrow(DecodeError);
  });
});
