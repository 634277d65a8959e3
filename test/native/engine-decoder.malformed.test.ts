// Hostile payloads: every malformation class is rejected whole with one coded error, writes nothing,
// never crashes, and (where msgpackr decodes it) agrees with the JS path's verdict.
import fc from 'fast-check';
import { EngineBatchDecoder } from '../../src/native';
import { expectThrows } from './hashing.helpers';
import { compactPackr, jsDecode, nativeDecode, OPTIONS, outcome, plainPackr, rejectsWithoutWriting } from './engine-decoder.helpers';

const decoder = new EngineBatchDecoder(OPTIONS);
const HEX64 = '0123456789abcdef'.repeat(4);

/** A BlockStored map event with every field, all of them validated (GPU tier, group 0, no kind). */
function storedFields(): Record<string, unknown> {
  return {
    type: 'BlockStored',
    block_hashes: [10n, 2n ** 64n - 1n, Buffer.from('0102030405060708090a', 'hex')],
    parent_block_hash: 9,
    token_ids: Array.from({ length: 12 }, (_, i) => i * 1000),
    block_size: 4,
    lora_id: null,
    medium: 'GPU',
    lora_name: 'adapter-a',
    extra_keys: [[[HEX64, 0]], null, [{ type: 'mm', hash: HEX64 }]],
    block_mm_infos: [{ mm_objects: [{ mm_hash: 5, offsets: [[0, 2]] }] }, null, null],
    group_idx: 0,
  };
}

const SAMPLES: [string, Uint8Array][] = [
  ['map batch, map events', compactPackr.pack({ ts: 1.25, events: [storedFields(), { type: 'BlockRemoved', block_hashes: [1, 2], medium: 'GPU' }, { type: 'AllBlocksCleared' }], data_parallel_rank: 1 })],
  ['array batch, array events', plainPackr.pack([7, [['BlockStored', [1, 2], null, [[1, 2], [2, 3], [3, 4], [4, 5], [5, 6], [6, 7], [7, 8], [8, 9]], 4, null, 'GPU', { sglang: 1 }, [null], 0, 'full_attention'], ['BlockRemoved', [3], null, 0]], 2])],
];

/** msgpack of `value` with the string 'RAW' replaced by the given raw bytes (any encoding, even invalid). */
function withRaw(value: unknown, rawHex: string): Buffer {
  const packed = Buffer.from(compactPackr.pack(value));
  const marker = Buffer.from('a3524157', 'hex'); // fixstr "RAW"
  const at = packed.indexOf(marker);
  if (at < 0 || packed.indexOf(marker, at + 1) >= 0) throw new Error('exactly one RAW slot expected');
  return Buffer.concat([packed.subarray(0, at), Buffer.from(rawHex.replace(/\s+/g, ''), 'hex'), packed.subarray(at + marker.length)]);
}
const eventWith = (field: string, rawHex: string) => withRaw({ ts: 1, events: [{ ...storedFields(), [field]: 'RAW' }] }, rawHex);

function expectMalformed(payload: Uint8Array, message?: RegExp): void {
  const e = rejectsWithoutWriting(decoder, payload);
  expect(e).not.toBeNull();
  expect(e?.code).toBe('MalformedKvBatch');
  if (message) expect(e?.message).toMatch(message);
}

it('the samples decode', () => {
  for (const [, payload] of SAMPLES) expect(rejectsWithoutWriting(decoder, payload)).toBeNull();
  expect(nativeDecode(decoder, SAMPLES[0][1]).summary).toMatchObject({ events: 3, blocks: 5 });
});

describe.each(SAMPLES)('%s', (_name, payload) => {
  it('truncated at every byte offset: rejected, nothing written', () => {
    for (let n = 0; n < payload.length; n++) expectMalformed(payload.subarray(0, n), /truncated|claims more|expected/);
  });

  it('trailing bytes after the batch: rejected', () => {
    expectMalformed(Buffer.concat([payload, Buffer.from([0])]), /trailing/);
    expectMalformed(Buffer.concat([payload, payload]), /trailing/);
  });

  it('every single-byte change: the same verdict and output as the JS path, or a documented strictness', () => {
    const bytes = Buffer.from(payload);
    for (let i = 0; i < bytes.length; i++) {
      for (const b of [0x00, 0x80, 0xa0, 0xc1, 0xcb, 0xcf, 0xdc, 0xff, bytes[i] ^ 1]) {
        const mutated = Buffer.from(bytes);
        mutated[i] = b;
        const native = outcome(() => nativeDecode(decoder, mutated));
        const js = outcome(() => jsDecode(mutated, OPTIONS));
        if ('ok' in native) expect(js).toEqual(native);
        else if ('ok' in js) expect(native.error.message).toMatch(/UTF-8|extension|0xc1|nested|outside this worker/);
      }
    }
  });
});

describe('wrong types at each field', () => {
  const wrong: [string, string][] = [
    ['string', 'a178'],
    ['true', 'c3'],
    ['map', '80'],
    ['array', '90'],
    ['bin', 'c40101'],
    ['nil', 'c0'],
    ['-1', 'ff'],
    ['2^32', 'cf0000000100000000'],
    ['1.5', 'cb3ff8000000000000'],
    ['16 as int64', 'd30000000000000010'],
    ['4.0', 'cb4010000000000000'],
  ];
  const fields = ['type', 'block_hashes', 'parent_block_hash', 'token_ids', 'block_size', 'medium', 'lora_name', 'group_idx', 'kv_cache_spec_kind', 'block_mm_infos', 'extra_keys'];

  it.each(fields)('%s: rejected exactly when the JS path rejects, naming the field', (field) => {
    let rejected = 0;
    for (const [, raw] of wrong) {
      const payload = eventWith(field, raw);
      const native = outcome(() => nativeDecode(decoder, payload));
      const js = outcome(() => jsDecode(payload, OPTIONS));
      if ('ok' in js) {
        expect(native).toEqual(js);
        continue;
      }
      rejected += 1;
      expect(rejectsWithoutWriting(decoder, payload)?.code).toBe('MalformedKvBatch');
      expect('error' in native && native.error.message).toMatch(field === 'type' ? /type tag/ : field);
    }
    // Fields every store validates refuse most of these; the optional multimodal ones ignore them.
    if (!['extra_keys', 'block_mm_infos', 'parent_block_hash', 'lora_name', 'medium', 'kv_cache_spec_kind', 'group_idx'].includes(field)) {
      expect(rejected).toBeGreaterThanOrEqual(8);
    }
  });

  it('inside lists: a token, a hash, an mm_hash, a bigram pair', () => {
    expectMalformed(withRaw({ ts: 1, events: [{ ...storedFields(), token_ids: [1, 2, 'RAW', 4] }] }, 'a178'), /token_ids/);
    expectMalformed(withRaw({ ts: 1, events: [{ ...storedFields(), block_hashes: [1, 'RAW'] }] }, 'c2'), /block_hashes/);
    expectMalformed(withRaw({ ts: 1, events: [{ ...storedFields(), block_hashes: [1, 'RAW'] }] }, 'c400'), /block_hashes: empty bytes/);
    expectMalformed(withRaw({ ts: 1, events: [{ ...storedFields(), block_mm_infos: [{ mm_objects: [{ mm_hash: 'RAW' }] }] }] }, 'a178'), /mm_hash/);
    expectMalformed(withRaw({ ts: 1, events: [{ ...storedFields(), block_mm_infos: [{ mm_objects: ['RAW'] }] }] }, '01'), /mm_hash/);
    expectMalformed(compactPackr.pack({ ts: 1, events: [{ ...storedFields(), token_ids: [[1, 2], [2, 3, 4]] }] }), /bigram/);
    expectMalformed(compactPackr.pack({ ts: 1, events: [{ ...storedFields(), token_ids: [[1, 2], 3] }] }), /bigram/);
    expectMalformed(compactPackr.pack({ ts: 1, events: [{ ...storedFields(), token_ids: [1, [2, 3]] }] }), /token_ids/);
  });

  it('the batch: ts, events, rank, the envelope itself', () => {
    expectMalformed(compactPackr.pack({ ts: 'x', events: [] }), /batch\.ts/);
    expectMalformed(compactPackr.pack({ events: [] }), /batch\.ts/);
    expectMalformed(withRaw({ ts: 'RAW', events: [] }, 'cb7ff8000000000000'), /batch\.ts/); // NaN
    expectMalformed(withRaw({ ts: 'RAW', events: [] }, 'cb7ff0000000000000'), /batch\.ts/); // Infinity
    expectMalformed(compactPackr.pack({ ts: 1, events: {} }), /batch\.events/);
    expectMalformed(compactPackr.pack({ ts: 1 }), /batch\.events/);
    expectMalformed(compactPackr.pack([1]), /batch\.events/);
    expectMalformed(compactPackr.pack({ ts: 1, events: [], data_parallel_rank: 'x' }), /dp_rank/);
    expectMalformed(compactPackr.pack([1, [], 1.5]), /dp_rank/);
    expectMalformed(compactPackr.pack('batch'), /batch: expected/);
    expectMalformed(compactPackr.pack([1, [5]]), /event: expected/);
    expectMalformed(compactPackr.pack([1, [[]]]), /type tag/);
    expectMalformed(compactPackr.pack([1, [{ block_hashes: [] }]]), /type tag/);
  });
});

describe('sizes, ints and strings from the peer', () => {
  it('arrays, maps, strings and bins that claim more than the payload holds', () => {
    expectMalformed(Buffer.from('92cb3ff0000000000000ddffffffff', 'hex'), /claims more elements/);
    expectMalformed(Buffer.from('dfffffffff', 'hex'), /claims more entries/);
    expectMalformed(Buffer.from('92cb3ff000000000000091dc7fff00', 'hex'), /claims more elements/);
    expectMalformed(eventWith('token_ids', 'ddffffffff 01 02'), /claims more elements/);
    expectMalformed(eventWith('block_hashes', 'dc0400 01'), /claims more elements/);
    expectMalformed(eventWith('lora_name', 'dbffffffff 41'), /truncated/);
    expectMalformed(eventWith('extra_keys', 'c6ffffffff 41'), /truncated/);
    expectMalformed(eventWith('extra_keys', '91 deffff 01'), /claims more entries/);
  });

  it('huge ints and negative ints where a u32 is needed', () => {
    expectMalformed(eventWith('block_size', 'ce00000000'), /block_size/); // 0
    expectMalformed(eventWith('block_size', 'cf0000000100000000'), /block_size/);
    expectMalformed(eventWith('block_size', 'cb41f0000000000000'), /block_size/); // 2^32 as float
    expectMalformed(eventWith('block_size', 'd0fc'), /block_size/);
    expectMalformed(eventWith('token_ids', '94 01 02 03 cf0000000100000000'), /token_ids/);
    expectMalformed(eventWith('token_ids', '94 01 02 03 ff'), /token_ids/);
    expectMalformed(eventWith('token_ids', '94 01 02 03 d3ffffffffffffffff'), /token_ids/);
    expectMalformed(eventWith('group_idx', 'd3ffffffffffffffff'), /group_idx/);
    expectMalformed(eventWith('group_idx', 'cf0000000100000000'), /group_idx/);
    expectMalformed(withRaw({ ts: 1, events: [], data_parallel_rank: 'RAW' }, 'ff'), /dp_rank/);
    expectMalformed(withRaw({ ts: 1, events: [], data_parallel_rank: 'RAW' }, 'cf0000000100000000'), /dp_rank/);
    expectMalformed(eventWith('parent_block_hash', 'cb4340000000000000'), /not an integer/); // 2^53
    // Accepted where the JS path accepts: 64-bit token ids below 2^32, the extremes of u64/i64 hashes.
    const ok = (payload: Uint8Array) => expect(rejectsWithoutWriting(decoder, payload)).toBeNull();
    ok(eventWith('token_ids', '94 01 02 03 cf00000000ffffffff'));
    ok(eventWith('parent_block_hash', 'd38000000000000000'));
    ok(eventWith('parent_block_hash', 'cfffffffffffffffff'));
    ok(eventWith('parent_block_hash', 'cbc33fffffffffffff')); // -(2^53 - 1)
  });

  it('strings that are not UTF-8, wherever they are', () => {
    expectMalformed(eventWith('type', 'ab 426c6f636b53746f7265ff'), /UTF-8/);
    expectMalformed(eventWith('medium', 'a3 4750c3'), /UTF-8/);
    expectMalformed(eventWith('lora_name', 'a2 c080'), /UTF-8/); // overlong NUL
    expectMalformed(eventWith('lora_name', 'a3 eda080'), /UTF-8/); // a surrogate
    expectMalformed(eventWith('lora_name', 'a4 f4908080'), /UTF-8/); // beyond U+10FFFF
    expectMalformed(eventWith('extra_keys', '91 91 a2 80 80'), /UTF-8/);
    expectMalformed(withRaw({ ts: 1, events: [], RAW: 1 }, 'a3 ff4142'), /UTF-8/); // a key
    expect(rejectsWithoutWriting(decoder, eventWith('lora_name', 'aa c3bc f09f9880 e282ac 41'))).toBeNull();
  });

  it('extension types and the reserved byte 0xc1', () => {
    expectMalformed(eventWith('extra_keys', 'd6ff00000001'), /extension/); // a msgpack timestamp
    expectMalformed(eventWith('lora_id', 'd40000'), /extension/); // msgpackr's undefined
    expectMalformed(eventWith('lora_id', 'c1'), /0xc1/);
  });

  it('map keys that are not scalars', () => {
    expectMalformed(withRaw({ ts: 1, events: [{ type: 'BlockStored', x: { RAW: 1 } }] }, '9101'), /key/);
    expectMalformed(withRaw({ ts: 1, events: [], x: { RAW: 1 } }, 'c40101'), /key/);
    // Scalars are property names in JS (never a field's): accepted.
    expect(rejectsWithoutWriting(decoder, withRaw({ ts: 1, events: [], RAW: 1 }, 'cb3ff8000000000000'))).toBeNull();
  });

  it('nesting: 32 levels pass, deeper is refused, a million levels neither crash nor recurse', () => {
    const nested = (depth: number) => withRaw({ ts: 1, events: [{ ...storedFields(), unknown_field: 'RAW' }] }, '91'.repeat(depth) + '00');
    // The event field sits at depth 3, so it may hold 29 more levels.
    expect(rejectsWithoutWriting(decoder, nested(29))).toBeNull();
    expectMalformed(nested(30), /nested/);
    expectMalformed(nested(1_000_000), /nested/);
    expectMalformed(Buffer.from('91'.repeat(1_000_000) + '00', 'hex'), /nested|expected/);
    expectMalformed(withRaw({ ts: 1, events: [{ ...storedFields(), extra_keys: 'RAW' }] }, '91'.repeat(100_000) + '00'), /nested/);
  });

  it('random bytes and random msgpack never crash: accepted, or one coded error with nothing written', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), (bytes) => {
        const e = rejectsWithoutWriting(decoder, bytes);
        if (e) expect(['MalformedKvBatch', 'RankOutOfRange']).toContain(e.code);
      }),
      { numRuns: 3000 },
    );
    fc.assert(
      fc.property(fc.anything({ withBigInt: true, withTypedArray: false, withNullPrototype: false, maxDepth: 5 }), (value) => {
        let payload: Uint8Array;
        try {
          payload = compactPackr.pack([1, [value], 0]);
        } catch {
          return; // a value msgpackr cannot encode
        }
        const e = rejectsWithoutWriting(decoder, payload);
        if (e) expect(['MalformedKvBatch', 'RankOutOfRange']).toContain(e.code);
      }),
      { numRuns: 1000 },
    );
  });
});

describe('bounds on what one message may make the decoder hold (issue 26 item 2)', () => {
  // Small bounds, the same checks as the defaults (INGEST_MAX_BLOCKS_PER_EVENT, INGEST_MAX_MESSAGE_WORDS).
  const bounded = new EngineBatchDecoder({ ...OPTIONS, maxBlocksPerEvent: 8, maxMessageWords: 40 });
  const removal = (ids: number) => ['BlockRemoved', Array.from({ length: ids }, (_, i) => i + 1), 'GPU'];
  const store = (blocks: number, tokens = blocks * 4) => ['BlockStored', Array.from({ length: blocks }, (_, i) => i + 1), null, Array.from({ length: tokens }, (_, i) => i), 4, null, 'GPU'];
  const message = (...events: unknown[]) => plainPackr.pack([1, events, 0]);

  test('an event of the bound is taken, one block more is malformed', () => {
    expect(rejectsWithoutWriting(bounded, message(removal(8)))).toBeNull();
    expect(rejectsWithoutWriting(bounded, message(removal(9)))).toMatchObject({ code: 'MalformedKvBatch', message: expect.stringMatching(/9 blocks, more than the 8 one event may carry/) });
    expect(rejectsWithoutWriting(bounded, message(store(8)))).toBeNull();
    expect(rejectsWithoutWriting(bounded, message(store(9)))).toMatchObject({ code: 'MalformedKvBatch' });
  });

  test('token ids beyond what the largest store needs are malformed', () => {
    // (8 + 1) blocks of 4 tokens: the most a store may carry (Eagle's extra token included).
    expect(rejectsWithoutWriting(bounded, message(store(8, 36)))).toBeNull();
    expect(rejectsWithoutWriting(bounded, message(store(8, 37)))).toMatchObject({ code: 'MalformedKvBatch', message: expect.stringMatching(/37 tokens/) });
  });

  test('a message whose packed words would pass the bound is malformed, events each within theirs', () => {
    // A removal of n ids takes n + 1 words (the worker id): 4 of 8 ids take 36, a fifth of 3 makes 40, of 4 41.
    expect(rejectsWithoutWriting(bounded, message(removal(8), removal(8), removal(8), removal(8), removal(3)))).toBeNull();
    expect(rejectsWithoutWriting(bounded, message(removal(8), removal(8), removal(8), removal(8), removal(4)))).toMatchObject({
      code: 'MalformedKvBatch',
      message: expect.stringMatching(/more than the 40 packed words/),
    });
  });

  test('the bounds are checked', () => {
    expectThrows(() => new EngineBatchDecoder({ ...OPTIONS, maxBlocksPerEvent: 0 }), 'RangeError');
    expectThrows(() => new EngineBatchDecoder({ ...OPTIONS, maxMessageWords: 0 }), 'RangeError');
    expectThrows(() => new EngineBatchDecoder({ ...OPTIONS, maxBlocksPerEvent: -1 }), 'RangeError');
  });
});
