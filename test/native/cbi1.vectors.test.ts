// Every case of /work/shared/vectors/cbi1.json against the native codec.
import { createHash } from 'crypto';
import {
  decodeFrame,
  encodeDelta,
  encodeSnapshotAsync,
  encodeSnapshotChunks,
  filterFormat,
  isCbi1Error,
  SnapshotAssembly,
  CBI1,
} from '../../src/native';
import {
  decodedHeaderMatches,
  expectedDecoded,
  expectedError,
  hex,
  imagePairs,
  Json,
  loadCbi1,
  thrown,
  toFormat,
  xxh3,
} from './cbi1.helpers';

const vectors = loadCbi1();

describe('constants', () => {
  test('match the vector file', () => {
    const c = vectors.constants;
    expect(CBI1).toMatchObject({
      headerLen: c.header_len,
      snapshotChunkBuckets: c.snapshot_chunk_buckets,
      maxBucketCount: c.max_bucket_count,
      maxFrameBytes: c.max_frame_bytes,
      maxDeltaImages: c.max_delta_images,
      wireVersion: c.wire_version,
      flagSnapshotChunk: c.flag_snapshot_chunk,
      flagDelta: c.flag_delta,
      formatVersion: c.format_version,
      fingerprintBits: c.fingerprint_bits,
      slotsPerBucket: c.slots_per_bucket,
    });
  });
});

describe('frames[]', () => {
  test.each<[string, Json]>(vectors.frames.map((f: Json) => [f.name, f]))('%s: decode gives the fields, encode reproduces the bytes', (_, f: Json) => {
    const format = toFormat(f.expected_format);
    const bytes = Buffer.from(f.frame_hex, 'hex');
    expect(bytes.length).toBe(f.frame_len);
    const decoded = decodeFrame(format, bytes);
    expect(decoded).toMatchObject(expectedDecoded(f.decoded));
    decodedHeaderMatches(decoded);
    expect(decoded.header.checksum).toBe(Number(f.checksum_hex));
    expect(decoded.header.flags).toBe(decoded.kind === 'delta' ? CBI1.flagDelta : CBI1.flagSnapshotChunk);

    const { header } = decoded;
    if (decoded.kind === 'delta') {
      expect(hex(encodeDelta(format, header.dcId, decoded.baseEpoch, header.epoch, decoded.buckets, decoded.values))).toBe(f.frame_hex);
    } else {
      const chunks = encodeSnapshotChunks(format, header.dcId, header.epoch, decoded.words);
      expect(chunks.map(hex)).toEqual([f.frame_hex]);
    }
  });
});

function ruleWords(name: string, bucketCount: number): BigUint64Array {
  const words = new BigUint64Array(bucketCount);
  if (name === 'snapshot_2pow20_rule') {
    // word i = i * 0x0001000100010001 mod 2^64, computed on u32 halves: with a = i * 0x10001,
    // low = a mod 2^32 and high = (a + floor(a / 2^32)) mod 2^32.
    const halves = new Uint32Array(words.buffer);
    for (let i = 0; i < bucketCount; i++) {
      const a = i * 0x10001;
      const carry = Math.floor(a / 2 ** 32);
      halves[2 * i] = a % 2 ** 32;
      halves[2 * i + 1] = (a + carry) % 2 ** 32;
    }
  } else if (name === 'upstream_snapshot_2pow20_sparse') {
    words[0] = 11n;
    words[524289] = 22n;
    words[1048575] = 33n;
  } else if (name !== 'snapshot_2pow24_empty') {
    throw new Error(`no word rule for ${name}`);
  }
  return words;
}

describe('compact_snapshots[]', () => {
  test.each<[string, Json]>(vectors.compact_snapshots.map((s: Json) => [s.name, s]))('%s', async (_, s: Json) => {
    const format = toFormat(s.expected_format);
    const words = ruleWords(s.name, format.bucketCount);
    const dcId = BigInt(s.dc_id);
    const epoch = BigInt(s.epoch);
    const chunks = await encodeSnapshotAsync(format, dcId, epoch, words);
    expect(chunks).toHaveLength(s.chunk_count);
    if (format.bucketCount <= 1 << 20) {
      // The synchronous encoder produces the same bytes.
      expect(encodeSnapshotChunks(format, dcId, epoch, words).every((c, i) => c.equals(chunks[i]))).toBe(true);
    }
    s.chunks.forEach((expected: Json, i: number) => {
      const frame = chunks[i];
      expect(frame.length).toBe(expected.frame_len);
      expect(hex(frame.subarray(0, 48))).toBe(expected.header_hex);
      expect(hex(frame.subarray(48, 64))).toBe(expected.body_prefix_hex);
      expect(frame.readUInt32LE(44)).toBe(Number(expected.checksum_hex));
      expect(hex(frame.subarray(frame.length - 32))).toBe(expected.frame_tail_hex);
      expect(xxh3(frame)).toBe(BigInt(expected.frame_xxh3_64));
      expect(createHash('sha256').update(frame).digest('hex')).toBe(expected.frame_sha256);
      const decoded = decodeFrame(format, frame);
      expect(decoded).toMatchObject({
        kind: 'chunk',
        chunkIndex: expected.chunk_index,
        chunkCount: expected.chunk_count,
        bucketOffset: Number(expected.bucket_offset),
      });
      expect(decoded.kind === 'chunk' && decoded.words.length).toBe(expected.word_count);
    });

    const assembly = new SnapshotAssembly(format);
    const results = chunks.map((chunk) => assembly.absorb(chunk));
    expect(results.slice(0, -1).every((r) => r === null)).toBe(true);
    const done = results[results.length - 1];
    expect(done).not.toBeNull();
    const { buckets, values } = done!;
    expect(done!.epoch).toBe(BigInt(s.assembly.epoch));
    expect(buckets.length).toBe(s.assembly.nonzero_image_count);
    expect(imagePairs(buckets, values, 0, s.assembly.first_images.length)).toEqual(s.assembly.first_images);
    expect(imagePairs(buckets, values, buckets.length - s.assembly.last_images.length)).toEqual(s.assembly.last_images);
    if (s.assembly.images) expect(imagePairs(buckets, values)).toEqual(s.assembly.images);
  });
});

function malformedBytes(m: Json): Buffer {
  if (m.frame_rule === '4194369 zero bytes') return Buffer.alloc(4194369);
  if (m.frame_rule) throw new Error(`unknown frame_rule ${m.frame_rule}`);
  return Buffer.from(m.frame_hex, 'hex');
}

describe('malformed_frames[]', () => {
  test.each<[string, Json]>(vectors.malformed_frames.map((m: Json) => [m.name, m]))('%s', (_, m: Json) => {
    const bytes = malformedBytes(m);
    expect(bytes.length).toBe(m.frame_len);
    const error = thrown(() => decodeFrame(toFormat(m.expected_format), bytes));
    expect(isCbi1Error(error)).toBe(true);
    expect(error).toMatchObject(expectedError(m.expected_error));
  });
});

describe('decoder_accepts[]', () => {
  test.each<[string, Json]>(vectors.decoder_accepts.map((a: Json) => [a.name, a]))('%s', (_, a: Json) => {
    const decoded = decodeFrame(toFormat(a.expected_format), Buffer.from(a.frame_hex, 'hex'));
    expect(decoded).toMatchObject(expectedDecoded(a.decoded));
    decodedHeaderMatches(decoded);
  });
});

describe('assembly_cases[]', () => {
  // Each case runs twice: absorbing raw frame bytes, and absorbing frames decodeFrame returned.
  const cases: [string, string, Json][] = vectors.assembly_cases.flatMap((c: Json) => [
    [c.name, 'bytes', c],
    [c.name, 'decoded', c],
  ]);
  test.each(cases)('%s (%s)', (_, input: string, c: Json) => {
    const format = toFormat(c.expected_format);
    const assembly = new SnapshotAssembly(format);
    for (const step of c.steps) {
      const bytes = Buffer.from(step.frame_hex, 'hex');
      const frame = input === 'bytes' ? bytes : decodeFrame(format, bytes);
      const expected = step.expected;
      if (expected.result === 'error') {
        expect(thrown(() => assembly.absorb(frame))).toMatchObject({ code: expected.error });
      } else if (expected.result === 'need_more') {
        expect(assembly.absorb(frame)).toBeNull();
      } else {
        const done = assembly.absorb(frame);
        expect(done).not.toBeNull();
        expect(done!.epoch).toBe(BigInt(expected.epoch));
        expect(imagePairs(done!.buckets, done!.values)).toEqual(expected.images);
      }
    }
  });
});

describe('encoder_errors[]', () => {
  const format = filterFormat({ seed: 0x5eedn, bucketCount: 1024 });
  const calls: Record<string, () => unknown> = {
    delta_349526_images: () => encodeDelta(format, 7n, 4n, 5n, new Uint32Array(349526), new BigUint64Array(349526)),
    delta_bucket_1024_of_1024: () => encodeDelta(format, 7n, 4n, 5n, Uint32Array.of(1024), BigUint64Array.of(1n)),
    snapshot_1_word_for_1024: () => encodeSnapshotChunks(format, 7n, 5n, BigUint64Array.of(0n)),
  };
  test.each<[string, Json]>(vectors.encoder_errors.map((e: Json) => [e.name, e]))('%s', (name: string, e: Json) => {
    expect(calls[name]).toBeDefined();
    const error = thrown(calls[name]);
    expect(isCbi1Error(error)).toBe(true);
    expect(error).toMatchObject(expectedError(e.expected_error));
  });

  test('the async snapshot encoder rejects the same length mismatch', async () => {
    await expect(encodeSnapshotAsync(format, 7n, 5n, BigUint64Array.of(0n))).rejects.toMatchObject({
      code: 'SnapshotBucketCount',
      expected: 1024,
      actual: 1,
    });
  });

  test('the largest delta (349525 images) encodes into 4194360 bytes', () => {
    const buckets = new Uint32Array(349525).map((_, i) => i % 1024);
    const frame = encodeDelta(format, 7n, 4n, 5n, buckets, new BigUint64Array(349525).fill(9n));
    expect(frame.length).toBe(4194360);
    const decoded = decodeFrame(format, frame);
    expect(decoded.kind === 'delta' && decoded.buckets).toEqual(buckets);
  });
});

describe('filter_format_new[]', () => {
  test.each<[number, Json]>(vectors.filter_format_new.map((c: Json) => [c.bucket_count, c]))('bucket_count %d', (bucketCount: number, c: Json) => {
    const make = () => filterFormat({ seed: 0x5eedn, bucketCount });
    if (c.ok) {
      expect(make()).toEqual({ seed: 0x5eedn, bucketCount });
    } else {
      const error = thrown(make);
      expect(isCbi1Error(error) && error.name).toBe('RangeError');
      expect(error).toMatchObject(expectedError(c.expected_error));
    }
  });
});
