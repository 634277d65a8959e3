// Token hashing against the golden vectors (block_hashes.json, salt.json), the batch/async entry
// points against the single-prompt ones, and native XXH3 against xxhash-addon's JS API.
import fc from 'fast-check';
import { XXHash3 } from 'xxhash-addon';
import {
  blockHashes,
  hashBatch,
  hashBatchAsync,
  hashMmIdentifier,
  packPrompts,
  padValueForMmHash,
  saltSeed,
  sequenceHashes,
  sequenceHashesFromBlocks,
  splitBatch,
  xxh3,
  XXH3_SEED,
} from '../../src/native';
import { expectThrows, loadVector, type BlockCase } from './hashing.helpers';

const blockVectors = loadVector('block_hashes.json');
const saltVectors = loadVector('salt.json');

const big = (xs: string[]) => xs.map((x) => BigInt(x));
const mmList = (infos: BlockCase['mm_infos']) =>
  infos === null ? null : infos.map((i) => (i === null ? null : i.mm_objects.map((o) => BigInt(o.mm_hash))));

/** xxhash-addon wants the seed as 8 big-endian bytes and returns the digest big-endian. */
function jsXxh3(data: Uint8Array, seed: bigint): bigint {
  const seedBuf = Buffer.alloc(8);
  seedBuf.writeBigUInt64BE(seed);
  const h = new XXHash3(seedBuf);
  h.update(Buffer.from(data.buffer, data.byteOffset, data.byteLength));
  return h.digest().readBigUInt64BE();
}

describe('block_hashes.json', () => {
  test('has the expected number of cases', () => {
    expect(blockVectors.cases.length).toBeGreaterThanOrEqual(49);
  });

  test.each<[string, BlockCase]>(blockVectors.cases.map((c: BlockCase) => [c.name, c]))('%s', (_name, c: BlockCase) => {
    const seed = saltSeed(c.cache_namespace, c.lora_name);
    expect(seed).toBe(BigInt(c.block_hash_seed));
    const tokens = Uint32Array.from(c.tokens);
    const eagle = c.hash_format === 'eagle';
    const mm = mmList(c.mm_infos);
    expect(Array.from(blockHashes(tokens, c.kv_block_size, eagle, seed, mm))).toEqual(big(c.expected_block_hashes));
    expect(Array.from(sequenceHashes(tokens, c.kv_block_size, eagle, seed, mm))).toEqual(
      big(c.expected_sequence_hashes),
    );
    // The chain from block hashes equals the one-call path.
    expect(Array.from(sequenceHashesFromBlocks(big(c.expected_block_hashes)))).toEqual(big(c.expected_sequence_hashes));
  });

  test.each<[string, any]>(blockVectors.primitive_goldens.map((g: { name: string }) => [g.name, g]))(
    'primitive %s',
    (_n, g: { data_hex: string; seed: string; expected: string }) => {
      expect(xxh3(Buffer.from(g.data_hex, 'hex'), BigInt(g.seed))).toBe(BigInt(g.expected));
    },
  );

  test.each<[string, any]>(blockVectors.chain_cases.map((c: { name: string }) => [c.name, c]))(
    'chain %s',
    (_n, c: { block_hashes: string[]; expected_sequence_hashes: string[] }) => {
      expect(Array.from(sequenceHashesFromBlocks(BigUint64Array.from(big(c.block_hashes))))).toEqual(
        big(c.expected_sequence_hashes),
      );
    },
  );

  test('mm helpers', () => {
    for (const c of blockVectors.mm_helpers.pad_value_for_mm_hash) {
      expect(padValueForMmHash(BigInt(c.mm_hash))).toBe(c.expected);
    }
    for (const c of blockVectors.mm_helpers.hash_mm_identifier) {
      expect(hashMmIdentifier(c.identifier)).toBe(c.expected === null ? null : BigInt(c.expected));
    }
  });

  test('kv_block_size 0 is a RangeError', () => {
    const z = blockVectors.zero_block_size;
    expectThrows(() => blockHashes(Uint32Array.from(z.tokens), 0, false, XXH3_SEED), 'RangeError');
    expect(() => sequenceHashes(Uint32Array.from(z.tokens), 0, false, XXH3_SEED)).toThrow('kvBlockSize cannot be 0');
    expectThrows(() => hashBatch(packPrompts([Uint32Array.from(z.tokens)]), { kvBlockSize: 0 }), 'RangeError');
  });
});

describe('salt.json', () => {
  test.each<[number, string, any]>(saltVectors.entries.map((e: { seed_hex: string }, i: number) => [i, e.seed_hex, e]))(
    'entry %i -> %s',
    (_i, _hex, e: { cache_namespace: string | null; lora_name: string | null; seed: string }) => {
      expect(saltSeed(e.cache_namespace, e.lora_name)).toBe(BigInt(e.seed));
    },
  );

  test('empty strings and undefined mean absent', () => {
    expect(saltSeed('', '')).toBe(1337n);
    expect(saltSeed()).toBe(1337n);
    expect(saltSeed(undefined, 'adapter-a')).toBe(saltSeed('', 'adapter-a'));
  });
});

describe('batch entry points', () => {
  const prompts = (seed: number) => {
    const rnd = fc.sample(fc.array(fc.integer({ min: 0, max: 0xffff_ffff }), { maxLength: 200 }), { seed, numRuns: 40 });
    return rnd.map((p) => Uint32Array.from(p));
  };

  test.each([
    [16, false, false],
    [16, false, true],
    [4, true, true],
    [1, false, true],
    [3, true, false],
  ])('bs %i eagle %s sequence %s equals per-prompt hashing', (bs, eagle, sequence) => {
    const ps = prompts(bs * 7 + (eagle ? 1 : 0));
    const seed = saltSeed('tenant-a', 'adapter-a');
    const result = hashBatch(packPrompts(ps), { kvBlockSize: bs, eagle, seed, sequence });
    const parts = splitBatch(result);
    expect(parts.length).toBe(ps.length);
    ps.forEach((p, i) => {
      const single = sequence ? sequenceHashes(p, bs, eagle, seed) : blockHashes(p, bs, eagle, seed);
      expect(Array.from(parts[i])).toEqual(Array.from(single));
    });
  });

  test('async batch resolves to the same hashes', async () => {
    const ps = prompts(99);
    const batch = packPrompts(ps);
    const sync = hashBatch(batch, { kvBlockSize: 8, sequence: true });
    const async = await hashBatchAsync(batch, { kvBlockSize: 8, sequence: true });
    expect(Array.from(async.hashes)).toEqual(Array.from(sync.hashes));
    expect(Array.from(async.blockOffsets)).toEqual(Array.from(sync.blockOffsets));
  });

  test('async batch validates synchronously', () => {
    expectThrows(
      () => hashBatchAsync({ tokens: new Uint32Array(4), promptOffsets: Uint32Array.of(0, 3) }, { kvBlockSize: 2 }),
      'RangeError',
    );
  });

  test('bad prompt offsets are rejected', () => {
    const tokens = new Uint32Array(8);
    expectThrows(() => hashBatch({ tokens, promptOffsets: Uint32Array.of(0, 5, 4, 8) }, { kvBlockSize: 2 }), 'RangeError');
    expectThrows(() => hashBatch({ tokens, promptOffsets: Uint32Array.of(1, 8) }, { kvBlockSize: 2 }), 'RangeError');
    expectThrows(() => hashBatch({ tokens, promptOffsets: new Uint32Array(0) }, { kvBlockSize: 2 }), 'RangeError');
  });
});

describe('cross-check against xxhash-addon', () => {
  test('xxh3 on random bytes and seeds', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 600 }), fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }), (data, seed) => {
        expect(xxh3(data, seed)).toBe(jsXxh3(data, seed));
      }),
      { numRuns: 300 },
    );
  });

  test('block and sequence hashes on random prompts', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 0xffff_ffff }), { maxLength: 120 }),
        fc.integer({ min: 1, max: 17 }),
        fc.boolean(),
        fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }),
        (tokenList, bs, eagle, seed) => {
          const tokens = Uint32Array.from(tokenList);
          const window = bs + (eagle ? 1 : 0);
          const expected: bigint[] = [];
          for (let start = 0; start + window <= tokens.length; start += bs) {
            expected.push(jsXxh3(new Uint8Array(tokens.buffer, start * 4, window * 4), seed));
          }
          expect(Array.from(blockHashes(tokens, bs, eagle, seed))).toEqual(expected);
          const chained = expected.slice(0, 1);
          for (let i = 1; i < expected.length; i++) {
            const pair = new BigUint64Array([chained[i - 1], expected[i]]);
            chained.push(jsXxh3(new Uint8Array(pair.buffer), 1337n));
          }
          expect(Array.from(sequenceHashes(tokens, bs, eagle, seed))).toEqual(chained);
        },
      ),
      { numRuns: 200 },
    );
  });

  // 64-byte windows (16 tokens, or 15 plus Eagle's extra one) and the chain step have hashes of their
  // own in native/core/block_hash.h, windows above 240 bytes a secret derived once per call; the
  // batch chains eight prompts at a time.
  test('64-byte and long windows, eight-lane chains, on random tokens and seeds', () => {
    fc.assert(
      fc.property(
        fc.array(fc.array(fc.integer({ min: 0, max: 0xffff_ffff }), { maxLength: 300 }), { minLength: 8, maxLength: 19 }),
        fc.constantFrom([16, false], [15, true], [61, false], [64, false], [64, true], [100, false]),
        fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }),
        (promptLists, [bs, eagle], seed) => {
          const window = (bs + (eagle ? 1 : 0)) * 4;
          const ps = promptLists.map((p) => Uint32Array.from(p));
          const { hashes, blockOffsets } = hashBatch(packPrompts(ps), { kvBlockSize: bs, eagle, seed, sequence: true });
          ps.forEach((tokens, i) => {
            const chained: bigint[] = [];
            for (let start = 0; start * 4 + window <= tokens.byteLength; start += bs) {
              const block = jsXxh3(new Uint8Array(tokens.buffer, start * 4, window), seed);
              const pair = new BigUint64Array([chained[chained.length - 1] ?? 0n, block]);
              chained.push(chained.length === 0 ? block : jsXxh3(new Uint8Array(pair.buffer), 1337n));
            }
            const end = i + 1 < ps.length ? blockOffsets[i + 1] : hashes.length;
            expect(Array.from(hashes.subarray(blockOffsets[i], end))).toEqual(chained);
          });
        },
      ),
      { numRuns: 60 },
    );
  });

  test('mm hashes are appended sorted (unsigned) after the tokens', () => {
    const tokens = Uint32Array.of(5, 6, 7, 8);
    const mm = [0xffff_ffff_ffff_fff0n, 3n, 3n];
    const sorted = new BigUint64Array([3n, 3n, 0xffff_ffff_ffff_fff0n]);
    const bytes = Buffer.concat([Buffer.from(tokens.buffer), Buffer.from(sorted.buffer)]);
    expect(blockHashes(tokens, 4, false, 1337n, [mm])[0]).toBe(jsXxh3(bytes, 1337n));
  });
});

describe('bad arguments throw, never crash', () => {
  const any = (v: unknown) => v as never;
  test.each([
    ['tokens not a Uint32Array', () => blockHashes(any([1, 2, 3]), 1, false, 1n), 'TypeError'],
    ['tokens an Int32Array', () => blockHashes(any(new Int32Array(4)), 1, false, 1n), 'TypeError'],
    ['block size negative', () => blockHashes(new Uint32Array(4), -1, false, 1n), 'RangeError'],
    ['block size fractional', () => blockHashes(new Uint32Array(4), 1.5, false, 1n), 'RangeError'],
    ['block size a string', () => blockHashes(new Uint32Array(4), any('4'), false, 1n), 'TypeError'],
    ['eagle not boolean', () => blockHashes(new Uint32Array(4), 2, any(1), 1n), 'TypeError'],
    ['seed a number', () => blockHashes(new Uint32Array(4), 2, false, any(1)), 'TypeError'],
    ['seed negative', () => blockHashes(new Uint32Array(4), 2, false, -1n), 'RangeError'],
    ['seed too big', () => blockHashes(new Uint32Array(4), 2, false, 1n << 64n), 'RangeError'],
    ['mm not an array', () => blockHashes(new Uint32Array(4), 2, false, 1n, any(5)), 'TypeError'],
    ['mm entry a number', () => blockHashes(new Uint32Array(4), 2, false, 1n, any([7])), 'TypeError'],
    ['mm hash a number', () => blockHashes(new Uint32Array(4), 2, false, 1n, any([[7]])), 'TypeError'],
    ['salt not a string', () => saltSeed(any(5)), 'TypeError'],
    ['mm identifier not a string', () => hashMmIdentifier(any(5)), 'TypeError'],
    ['pad of a number', () => padValueForMmHash(any(5)), 'TypeError'],
    ['sequence of numbers', () => sequenceHashesFromBlocks(any(new Float64Array(2))), 'TypeError'],
  ])('%s', (_name, fn, type) => {
    expectThrows(fn as () => unknown, type as string);
  });
});
