// Property tests: random tables survive snapshot chunks → assembly, random deltas survive
// encode → decode, and no corrupted or random input makes the decoder do anything but throw a
// codec error.
import fc from 'fast-check';
import {
  decodeFrame,
  encodeDelta,
  encodeSnapshotChunk,
  encodeSnapshotChunks,
  isCbi1Error,
  snapshotChunkCount,
  SnapshotAssembly,
  CBI1,
  type FilterFormat,
} from '../../src/native';

const u64 = fc.bigInt({ min: 0n, max: 2n ** 64n - 1n });

/** A format with 2^k buckets. */
const format = (maxLog2: number): fc.Arbitrary<FilterFormat> =>
  fc.record({ seed: u64, bucketCount: fc.integer({ min: 1, max: maxLog2 }).map((k) => 2 ** k) });

/** A table whose words are zero with probability ~1/2 (snapshot assembly drops zero words). */
const tableFor = (bucketCount: number): fc.Arbitrary<BigUint64Array> =>
  fc
    .array(fc.oneof(fc.constant(0n), u64), { minLength: bucketCount, maxLength: bucketCount })
    .map((words) => BigUint64Array.from(words));

const bytesOf = (words: BigUint64Array): Buffer => Buffer.from(words.buffer, words.byteOffset, words.byteLength);

function rebuild(assembly: SnapshotAssembly, chunks: Uint8Array[], bucketCount: number): { epoch: bigint; words: BigUint64Array } {
  const results = chunks.map((chunk) => assembly.absorb(chunk));
  expect(results.slice(0, -1).every((r) => r === null)).toBe(true);
  const done = results[results.length - 1];
  if (!done) throw new Error('incomplete');
  const words = new BigUint64Array(bucketCount);
  done.buckets.forEach((bucket, i) => (words[bucket] = done.values[i]));
  // Images are the nonzero words only, in bucket order.
  expect(Array.from(done.values).every((v) => v !== 0n)).toBe(true);
  expect(Array.from(done.buckets).every((b, i) => i === 0 || b > done.buckets[i - 1])).toBe(true);
  return { epoch: done.epoch, words };
}

test('random single-chunk tables: encode → assembly gives identical words', () => {
  fc.assert(
    fc.property(
      format(12).chain((f) => fc.tuple(fc.constant(f), tableFor(f.bucketCount), u64, u64)),
      ([f, words, dcId, epoch]) => {
        const chunks = encodeSnapshotChunks(f, dcId, epoch, words);
        expect(chunks).toHaveLength(1);
        const rebuilt = rebuild(new SnapshotAssembly(f), chunks, f.bucketCount);
        expect(rebuilt.epoch).toBe(epoch);
        expect(rebuilt.words).toEqual(words);
        const decoded = decodeFrame(f, chunks[0]);
        expect(decoded.header).toMatchObject({ dcId, epoch, seed: f.seed, bucketCount: f.bucketCount });
      },
    ),
    { numRuns: 60 },
  );
});

test('random multi-chunk tables (2^20 and 2^21 buckets): per-chunk encode → assembly gives identical words', () => {
  fc.assert(
    fc.property(
      fc.constantFrom(1 << 20, 1 << 21),
      u64,
      fc.array(fc.tuple(fc.nat(), u64), { maxLength: 200 }),
      u64,
      (bucketCount, seed, writes, epoch) => {
        const f = { seed, bucketCount };
        const words = new BigUint64Array(bucketCount);
        for (const [index, value] of writes) words[index % bucketCount] = value;
        const count = snapshotChunkCount(f);
        expect(count).toBe(bucketCount / CBI1.snapshotChunkBuckets);
        const chunks = Array.from({ length: count }, (_, i) => encodeSnapshotChunk(f, 3n, epoch, words, i));
        // Byte comparison: jest's deep equality over 2^21 bigints is far too slow.
        expect(bytesOf(rebuild(new SnapshotAssembly(f), chunks, bucketCount).words).equals(bytesOf(words))).toBe(true);
      },
    ),
    { numRuns: 8 },
  );
});

test('random deltas round-trip through encode → decode', () => {
  fc.assert(
    fc.property(
      format(24).chain((f) =>
        fc.tuple(
          fc.constant(f),
          fc.array(fc.tuple(fc.integer({ min: 0, max: f.bucketCount - 1 }), u64), { maxLength: 300 }),
          u64,
          u64,
          u64,
        ),
      ),
      ([f, images, dcId, base, sequence]) => {
        const buckets = Uint32Array.from(images.map(([b]) => b));
        const values = BigUint64Array.from(images.map(([, v]) => v));
        const frame = encodeDelta(f, dcId, base, sequence, buckets, values);
        expect(frame.length).toBe(CBI1.headerLen + 12 + 12 * images.length);
        const decoded = decodeFrame(f, frame);
        expect(decoded).toMatchObject({ kind: 'delta', baseEpoch: base, buckets, values });
        expect(decoded.header).toMatchObject({ flags: CBI1.flagDelta, dcId, epoch: sequence, seed: f.seed, bucketCount: f.bucketCount });
      },
    ),
    { numRuns: 200 },
  );
});

test('any single corrupted body byte is caught by the checksum', () => {
  const f = { seed: 0x5eedn, bucketCount: 64 };
  const frame = encodeDelta(f, 1n, 1n, 2n, Uint32Array.of(1, 2, 63), BigUint64Array.of(5n, 6n, 7n));
  fc.assert(
    fc.property(fc.integer({ min: CBI1.headerLen, max: frame.length - 1 }), fc.integer({ min: 1, max: 255 }), (at, xor) => {
      const corrupted = Buffer.from(frame);
      corrupted[at] ^= xor;
      expect(() => decodeFrame(f, corrupted)).toThrow(expect.objectContaining({ code: 'Checksum' }));
    }),
  );
});

test('random and mutated bytes either decode or throw a codec error, never anything else', () => {
  const f = { seed: 0x5eedn, bucketCount: 16 };
  const valid = [
    encodeDelta(f, 1n, 1n, 2n, Uint32Array.of(3), BigUint64Array.of(9n)),
    encodeSnapshotChunks(f, 1n, 2n, new BigUint64Array(16).fill(4n))[0],
  ];
  const mutated = fc
    .tuple(fc.constantFrom(...valid), fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 4 }), fc.integer({ min: -8, max: 8 }))
    .map(([frame, edits, resize]) => {
      const bytes = Buffer.alloc(Math.max(0, frame.length + resize));
      frame.copy(bytes);
      for (const [at, value] of edits) if (bytes.length > 0) bytes[at % bytes.length] = value;
      return bytes;
    });
  fc.assert(
    fc.property(fc.oneof(fc.uint8Array({ maxLength: 300 }), mutated), (bytes) => {
      try {
        const decoded = decodeFrame(f, bytes);
        expect(['delta', 'chunk']).toContain(decoded.kind);
      } catch (error) {
        expect(isCbi1Error(error)).toBe(true);
      }
    }),
    { numRuns: 2000 },
  );
});
