// Shared helpers of the CBI1 tests: loading cbi1.json and comparing decoded frames and errors
// with the vector notation (snake_case names, u64 values as decimal strings).
import * as fs from 'fs';
import * as path from 'path';
import { XXHash3 } from 'xxhash-addon';
import type { DecodedFrame, FilterFormat } from '../../src/native';

export const VECTORS_DIR = path.resolve(__dirname, '..', '..', '..', 'shared', 'vectors');

export interface VectorFormat {
  seed: string;
  bucket_count: number;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Json = any;

export function loadCbi1(): Json {
  return JSON.parse(fs.readFileSync(path.join(VECTORS_DIR, 'cbi1.json'), 'utf8'));
}

export function toFormat(format: VectorFormat): FilterFormat {
  return { seed: BigInt(format.seed), bucketCount: format.bucket_count };
}

export function hex(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex');
}

/** Unseeded XXH3-64 by an independent implementation (xxhash-addon). */
export function xxh3(bytes: Uint8Array): bigint {
  return XXHash3.hash(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)).readBigUInt64BE();
}

/** The expected decoded structure of a vector, in the shape decodeFrame returns. */
export function expectedDecoded(decoded: Json): Json {
  const header = {
    dcId: BigInt(decoded.header.dc_id),
    epoch: BigInt(decoded.header.epoch),
    seed: BigInt(decoded.header.seed),
    bucketCount: decoded.header.bucket_count,
  };
  if (decoded.kind === 'delta') {
    return {
      kind: 'delta',
      header,
      baseEpoch: BigInt(decoded.base_epoch),
      buckets: Uint32Array.from(decoded.images.map((image: [number, string]) => image[0])),
      values: BigUint64Array.from(decoded.images.map((image: [number, string]) => BigInt(image[1]))),
    };
  }
  return {
    kind: 'chunk',
    header,
    chunkIndex: decoded.chunk_index,
    chunkCount: decoded.chunk_count,
    bucketOffset: Number(decoded.bucket_offset),
    words: BigUint64Array.from(decoded.words.map((word: string) => BigInt(word))),
  };
}

/** `{code, ...details}` as the thrown error carries them. */
export function expectedError(error: Json): Json {
  const result: Json = { code: error.format_error ? `${error.error}.${error.format_error}` : error.error };
  for (const [key, value] of Object.entries(error)) {
    if (key === 'error' || key === 'format_error') continue;
    if (key === 'expected' && typeof value === 'object') {
      const format = value as VectorFormat;
      result.expected = { seed: BigInt(format.seed), bucketCount: format.bucket_count };
    } else if (key === 'seed' || key === 'buckets') {
      result[key] = BigInt(value as string | number);
    } else {
      result[key.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase())] = value;
    }
  }
  return result;
}

/** Runs `fn` and returns what it threw (fails the test when nothing was thrown). */
export function thrown(fn: () => unknown): Json {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected an exception');
}

/** Images as [bucket, value-string] pairs, the vector notation. */
export function imagePairs(buckets: Uint32Array, values: BigUint64Array, from = 0, to = buckets.length): [number, string][] {
  const pairs: [number, string][] = [];
  for (let i = Math.max(0, from); i < Math.min(to, buckets.length); i++) pairs.push([buckets[i], values[i].toString()]);
  return pairs;
}

export function decodedHeaderMatches(frame: DecodedFrame): void {
  // Fixed header fields of every frame the decoder accepts.
  expect(frame.header).toMatchObject({ wireVersion: 1, fingerprintBits: 16, slotsPerBucket: 4, formatVersion: 1 });
}
