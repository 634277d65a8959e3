// Typed wrappers of the native CBI1 codec (hashing-ckf-cbi1.md §3): delta and snapshot-chunk
// encoders, the decoder with the specified check order, and snapshot assembly.
import { types } from 'util';
import { coreAddon } from './addon';

const addon = coreAddon();
import { nativeLimits } from './limits';
import type {
  AssembledSnapshot,
  DecodedFrame,
  FilterFormat,
  FilterFormatInput,
  SnapshotAssemblyOptions,
} from '../../binding';

export type {
  AssembledSnapshot,
  SnapshotAssemblyOptions,
  Cbi1Constants,
  Cbi1Header,
  DecodedChunk,
  DecodedDelta,
  DecodedFrame,
  FilterFormat,
  FilterFormatInput,
} from '../../binding';

/** ImagesWireError names as thrown in `error.code` (Format errors as 'Format.<FormatError>'). */
export const CBI1_ERROR_CODES = [
  'Truncated',
  'FrameTooLarge',
  'Magic',
  'WireVersion',
  'Checksum',
  'Malformed',
  'Flags',
  'DeltaImageCount',
  'SnapshotChunkWordCount',
  'BucketIndex',
  'SnapshotBucketCount',
  'ChunkSequence',
  'IncompleteCoverage',
  'UnsupportedFormatIdentity',
  'AllocationFailed',
  'Format.BucketCount',
  'Format.Version',
  'Format.FingerprintBits',
  'Format.SlotsPerBucket',
  'Format.Mismatch',
] as const;

export type Cbi1ErrorCode = (typeof CBI1_ERROR_CODES)[number];

/** A codec error; details (actual, maximum, value, bucket, bucketCount, expected, seed, buckets) as properties. */
export interface Cbi1Error extends Error {
  code: Cbi1ErrorCode;
  [detail: string]: unknown;
}

// isNativeError rather than instanceof: the addon creates its errors in the main realm.
export function isCbi1Error(error: unknown, code?: Cbi1ErrorCode): error is Cbi1Error {
  if (!types.isNativeError(error)) return false;
  const actual = (error as { code?: unknown }).code;
  return code === undefined ? (CBI1_ERROR_CODES as readonly unknown[]).includes(actual) : actual === code;
}

/** Wire constants of CBI1 (frame limit 4194368 bytes, 524288 buckets per chunk, 349525 delta images, …). */
export const CBI1 = addon.cbi1Constants;

/** FilterFormat::new (+ the CkfFormat identity check when those fields are given). */
export function filterFormat(format: FilterFormatInput): FilterFormat {
  return addon.validateFilterFormat(format);
}

export function snapshotChunkCount(format: FilterFormatInput): number {
  return addon.snapshotChunkCount(format);
}

/** One delta frame: header epoch = `sequence`, body base_epoch = `baseSequence`, absolute images. */
export function encodeDelta(
  format: FilterFormatInput,
  dcId: bigint,
  baseSequence: bigint,
  sequence: bigint,
  buckets: Uint32Array,
  values: BigUint64Array,
): Buffer {
  return addon.encodeDelta(format, dcId, baseSequence, sequence, buckets, values);
}

// The native encoders write all chunks of a snapshot into one region; each chunk is a Buffer view
// of it (no copy), and the region is freed once every chunk is collected.
function asBuffers(views: Uint8Array[]): Buffer[] {
  return views.map((view) => Buffer.from(view.buffer, view.byteOffset, view.byteLength));
}

/**
 * Every chunk of a snapshot, on the calling thread: for small tables only (~1 ms per full chunk);
 * RangeError above nativeLimits.maxSyncFilterWords buckets (use encodeSnapshotAsync).
 */
export function encodeSnapshotChunks(format: FilterFormatInput, dcId: bigint, epoch: bigint, words: BigUint64Array): Buffer[] {
  return asBuffers(addon.encodeSnapshotChunks(format, dcId, epoch, words));
}

/** Chunk `chunkIndex` of a snapshot, for callers that pace chunk encoding themselves. */
export function encodeSnapshotChunk(
  format: FilterFormatInput,
  dcId: bigint,
  epoch: bigint,
  words: BigUint64Array,
  chunkIndex: number,
): Buffer {
  return addon.encodeSnapshotChunk(format, dcId, epoch, words, chunkIndex);
}

/**
 * Every chunk of a snapshot, encoded on a worker thread. A BigUint64Array over a SharedArrayBuffer is
 * copied at the call (other threads may write it meanwhile), up to nativeLimits.maxSyncFilterWords
 * words (RangeError above); any other `words` is read in place and must not be written or transferred
 * until the promise settles. Argument and codec errors reject the promise.
 */
export async function encodeSnapshotAsync(
  format: FilterFormatInput,
  dcId: bigint,
  epoch: bigint,
  words: BigUint64Array,
): Promise<Buffer[]> {
  return asBuffers(await addon.encodeSnapshotAsync(format, dcId, epoch, unshared(words)));
}

// Why unshared arrays are not taken from the caller too (#9): a copy of a 2^24-bucket table (128 MiB)
// holds the loop for tens of milliseconds, and a transfer (structuredClone) makes V8 account the
// buffer as fresh external memory and collect inside the encode (bench/snapshot loop busy 5-10x,
// measured A/B). Owning the producer's image without either needs a native image handle.
function unshared(words: BigUint64Array): BigUint64Array {
  // Not a BigUint64Array: the addon rejects it with the usual TypeError.
  if (!types.isBigUint64Array(words) || !types.isSharedArrayBuffer(words.buffer)) return words;
  if (words.length > nativeLimits.maxSyncFilterWords) {
    throw new RangeError(
      `encodeSnapshotAsync copies at most ${nativeLimits.maxSyncFilterWords} words of a SharedArrayBuffer on the calling thread; ` +
        'pass a BigUint64Array over an ArrayBuffer',
    );
  }
  return words.slice();
}

/** decode(expected, bytes): every check of §3.5 in order; throws a Cbi1Error. */
export function decodeFrame(expected: FilterFormatInput, bytes: Uint8Array): DecodedFrame {
  return addon.decodeFrame(expected, bytes);
}

/**
 * Reassembles a chunked snapshot (§3.6). `absorb` takes raw frame bytes (decoded with this
 * assembly's format) or a frame already returned by decodeFrame; it returns null until the last
 * chunk, then the sparse nonzero images. The caller rebuilds the table from zeros plus the images.
 */
export class SnapshotAssembly {
  private readonly native: InstanceType<typeof addon.SnapshotAssembly>;

  constructor(format: FilterFormatInput, options?: SnapshotAssemblyOptions) {
    this.native = new addon.SnapshotAssembly(format, options);
  }

  absorb(frame: Uint8Array | DecodedFrame): AssembledSnapshot | null {
    return this.native.absorb(frame);
  }

  reset(): void {
    this.native.reset();
  }
}
