// Bad arguments throw TypeError / RangeError (or a codec error where the spec names one); they
// never crash the process. Includes detached buffers and hand-built decoded chunks.
import {
  decodeFrame,
  encodeDelta,
  encodeSnapshotAsync,
  encodeSnapshotChunk,
  encodeSnapshotChunks,
  filterFormat,
  isCbi1Error,
  snapshotChunkCount,
  SnapshotAssembly,
  type DecodedChunk,
} from '../../src/native';
import { thrown } from './cbi1.helpers';

const format = { seed: 0x5eedn, bucketCount: 16 };
// The untyped surface, as plain JavaScript callers would reach it.
/* eslint-disable @typescript-eslint/no-explicit-any */
const anyEncodeDelta = encodeDelta as (...args: any[]) => Buffer;
const anyDecode = decodeFrame as (...args: any[]) => unknown;
const anyChunks = encodeSnapshotChunks as (...args: any[]) => Buffer[];
const anyChunk = encodeSnapshotChunk as (...args: any[]) => Buffer;
const anyFormat = filterFormat as (...args: any[]) => unknown;

function errorName(fn: () => unknown): string {
  const error = thrown(fn);
  return `${error.name}${error.code ? `:${error.code}` : ''}`;
}

function detached<T extends ArrayBufferView>(view: T): T {
  structuredClone(view.buffer, { transfer: [view.buffer as ArrayBuffer] });
  return view;
}

describe('formats', () => {
  test.each<[string, unknown, string]>([
    ['not an object', 5, 'TypeError'],
    ['missing seed', { bucketCount: 16 }, 'TypeError'],
    ['number seed', { seed: 1, bucketCount: 16 }, 'TypeError'],
    ['negative seed', { seed: -1n, bucketCount: 16 }, 'RangeError'],
    ['seed ≥ 2^64', { seed: 2n ** 64n, bucketCount: 16 }, 'RangeError'],
    ['string bucket count', { seed: 1n, bucketCount: '16' }, 'TypeError'],
    ['fractional bucket count', { seed: 1n, bucketCount: 16.5 }, 'RangeError:Format.BucketCount'],
    ['NaN bucket count', { seed: 1n, bucketCount: NaN }, 'RangeError:Format.BucketCount'],
    ['negative bucket count', { seed: 1n, bucketCount: -16 }, 'RangeError:Format.BucketCount'],
    ['bigint 2^25 buckets', { seed: 1n, bucketCount: 2n ** 25n }, 'RangeError:Format.BucketCount'],
    ['format version 2', { seed: 1n, bucketCount: 16, formatVersion: 2 }, 'Error:UnsupportedFormatIdentity'],
    ['fingerprint bits 8', { seed: 1n, bucketCount: 16, fingerprintBits: 8 }, 'Error:UnsupportedFormatIdentity'],
    ['slots 2 (before the bucket count check)', { seed: 1n, bucketCount: 3, slotsPerBucket: 2 }, 'Error:UnsupportedFormatIdentity'],
    ['string slots', { seed: 1n, bucketCount: 16, slotsPerBucket: '4' }, 'TypeError'],
  ])('%s', (_, value, expected) => {
    expect(errorName(() => anyFormat(value))).toBe(expected);
    expect(errorName(() => anyDecode(value, Buffer.alloc(48)))).toBe(expected);
  });

  test('a wire CkfFormat (bigint bucket count, identity fields) is accepted and normalized', () => {
    const ckf = { formatVersion: 1, seed: 7n, bucketCount: 1024n, fingerprintBits: 16, slotsPerBucket: 4 };
    expect(filterFormat(ckf)).toEqual({ seed: 7n, bucketCount: 1024 });
    expect(snapshotChunkCount(ckf)).toBe(1);
  });
});

describe('encoders', () => {
  test.each<[string, unknown[], string]>([
    ['no arguments', [], 'TypeError'],
    ['number dc id', [format, 1, 1n, 2n, new Uint32Array(0), new BigUint64Array(0)], 'TypeError'],
    ['negative sequence', [format, 1n, 1n, -2n, new Uint32Array(0), new BigUint64Array(0)], 'RangeError'],
    ['Int32Array buckets', [format, 1n, 1n, 2n, new Int32Array(1), new BigUint64Array(1)], 'TypeError'],
    ['BigInt64Array values', [format, 1n, 1n, 2n, new Uint32Array(1), new BigInt64Array(1)], 'TypeError'],
    ['plain array buckets', [format, 1n, 1n, 2n, [1], new BigUint64Array(1)], 'TypeError'],
    ['length mismatch', [format, 1n, 1n, 2n, new Uint32Array(2), new BigUint64Array(1)], 'RangeError'],
    ['bucket out of range', [format, 1n, 1n, 2n, Uint32Array.of(16), new BigUint64Array(1)], 'Error:BucketIndex'],
  ])('encodeDelta: %s', (_, args, expected) => {
    expect(errorName(() => anyEncodeDelta(...args))).toBe(expected);
  });

  test('encodeDelta with detached arrays encodes an empty delta', () => {
    const frame = encodeDelta(format, 1n, 1n, 2n, detached(new Uint32Array(4)), detached(new BigUint64Array(4)));
    expect(decodeFrame(format, frame)).toMatchObject({ kind: 'delta', buckets: new Uint32Array(0) });
  });

  test.each<[string, unknown[], string]>([
    ['words as Float64Array', [format, 1n, 1n, new Float64Array(16)], 'TypeError'],
    ['words too short', [format, 1n, 1n, new BigUint64Array(15)], 'Error:SnapshotBucketCount'],
    ['detached words', [format, 1n, 1n, detached(new BigUint64Array(16))], 'Error:SnapshotBucketCount'],
    ['number epoch', [format, 1n, 1, new BigUint64Array(16)], 'TypeError'],
  ])('encodeSnapshotChunks: %s', (_, args, expected) => {
    expect(errorName(() => anyChunks(...args))).toBe(expected);
  });

  test.each<[string, unknown, string]>([
    ['index = chunk count', 1, 'RangeError'],
    ['negative index', -1, 'RangeError'],
    ['fractional index', 0.5, 'RangeError'],
    ['bigint index', 0n, 'TypeError'],
    ['missing index', undefined, 'TypeError'],
  ])('encodeSnapshotChunk: %s', (_, index, expected) => {
    expect(errorName(() => anyChunk(format, 1n, 1n, new BigUint64Array(16), index))).toBe(expected);
  });

  test('encodeSnapshotAsync rejects (does not throw) on bad arguments', async () => {
    const anyAsync = encodeSnapshotAsync as (...args: any[]) => Promise<Buffer[]>;
    await expect(anyAsync(format, 1n, 1n, 'words')).rejects.toMatchObject({ name: 'TypeError' });
    await expect(anyAsync(format, 1n, 1n, detached(new BigUint64Array(16)))).rejects.toMatchObject({ code: 'SnapshotBucketCount' });
  });
});

describe('decoder', () => {
  test.each<[string, unknown, string]>([
    ['a string', 'CBI1', 'TypeError'],
    ['an ArrayBuffer', new ArrayBuffer(64), 'TypeError'],
    ['a Uint16Array', new Uint16Array(40), 'TypeError'],
    ['a detached Uint8Array', detached(new Uint8Array(64)), 'Error:Truncated'],
  ])('decodeFrame of %s', (_, bytes, expected) => {
    expect(errorName(() => anyDecode(format, bytes))).toBe(expected);
  });

  test('decodeFrame reads a frame at an unaligned offset of a larger buffer', () => {
    const frame = encodeSnapshotChunks(format, 1n, 2n, new BigUint64Array(16).fill(3n))[0];
    const padded = Buffer.alloc(frame.length + 3);
    frame.copy(padded, 3);
    const decoded = decodeFrame(format, padded.subarray(3));
    expect(decoded.kind === 'chunk' && Array.from(decoded.words)).toEqual(new Array(16).fill(3n));
  });
});

describe('SnapshotAssembly', () => {
  const words = new BigUint64Array(16).fill(1n);
  const chunk = () => decodeFrame(format, encodeSnapshotChunks(format, 1n, 2n, words)[0]) as DecodedChunk;

  test('constructor validates the format', () => {
    expect(errorName(() => new SnapshotAssembly({ seed: 1n, bucketCount: 3 }))).toBe('RangeError:Format.BucketCount');
    expect(errorName(() => new (SnapshotAssembly as any)())).toBe('TypeError');
  });

  test.each<[string, (c: DecodedChunk) => unknown, string]>([
    ['a number', () => 7, 'TypeError'],
    ['an unknown kind', (c) => ({ ...c, kind: 'heartbeat' }), 'TypeError'],
    ['words as a plain array', (c) => ({ ...c, words: Array.from(c.words) }), 'TypeError'],
    ['a number epoch', (c) => ({ ...c, header: { ...c.header, epoch: 2 } }), 'TypeError'],
    ['a negative chunk index', (c) => ({ ...c, chunkIndex: -1 }), 'RangeError'],
    ['more words than the table holds', (c) => ({ ...c, words: new BigUint64Array(32) }), 'Error:Malformed'],
    ['a foreign bucket count', (c) => ({ ...c, header: { ...c.header, bucketCount: 32 } }), 'Error:ChunkSequence'],
    ['chunk count 0', (c) => ({ ...c, chunkCount: 0 }), 'Error:ChunkSequence'],
  ])('absorb of %s', (_, make, expected) => {
    const assembly = new SnapshotAssembly(format) as any;
    expect(errorName(() => assembly.absorb(make(chunk())))).toBe(expected);
    // The assembly still works afterwards.
    expect(assembly.absorb(chunk())).toMatchObject({ epoch: 2n });
  });

  test('absorb of undecodable bytes throws the decoder error and leaves the assembly untouched', () => {
    const f = { seed: 0x5eedn, bucketCount: 1 << 20 };
    const chunks = encodeSnapshotChunks(f, 1n, 2n, new BigUint64Array(1 << 20).fill(5n));
    const assembly = new SnapshotAssembly(f);
    expect(assembly.absorb(chunks[0])).toBeNull();
    const corrupted = Buffer.from(chunks[1]);
    corrupted[100] ^= 1;
    expect(isCbi1Error(thrown(() => assembly.absorb(corrupted)), 'Checksum')).toBe(true);
    expect(assembly.absorb(chunks[1])?.buckets.length).toBe(1 << 20);
  });

  test('reset() drops a partial snapshot', () => {
    const f = { seed: 0x5eedn, bucketCount: 1 << 20 };
    const chunks = encodeSnapshotChunks(f, 1n, 2n, new BigUint64Array(1 << 20));
    const assembly = new SnapshotAssembly(f);
    expect(assembly.absorb(chunks[0])).toBeNull();
    assembly.reset();
    expect(thrown(() => assembly.absorb(chunks[1]))).toMatchObject({ code: 'ChunkSequence' });
  });
});

test('isCbi1Error recognizes codec errors only', () => {
  const codec = thrown(() => decodeFrame(format, Buffer.alloc(3)));
  expect(isCbi1Error(codec)).toBe(true);
  expect(isCbi1Error(codec, 'Truncated')).toBe(true);
  expect(isCbi1Error(codec, 'Magic')).toBe(false);
  expect(isCbi1Error(Object.assign(new Error('no such file'), { code: 'ENOENT' }))).toBe(false);
  expect(isCbi1Error({ code: 'Truncated', message: 'not an Error' })).toBe(false);
});
