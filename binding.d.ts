// Types of the whole native addon surface (build/Release/kv_dc_relay.node).
// Only src/native/ imports this file.

/** XXH3-64 of `data` with a 64-bit seed. */
export function xxh3(data: Uint8Array, seed: bigint): bigint;

// --- CBI1 codec (native/cbi1*.cc) -------------------------------------------------------------
// Errors: TypeError / RangeError for bad arguments; codec errors are Errors whose `code` is the
// ImagesWireError name (Format errors as 'Format.<FormatError>') with their details as properties.

/** CKF filter format. `bucketCount` is a power of two in 2..=2^24. */
export interface FilterFormat {
  seed: bigint;
  bucketCount: number;
}

/** A format as it appears on the wire (CkfFormat); identity fields, when given, must be 1/16/4. */
export interface FilterFormatInput {
  seed: bigint;
  bucketCount: number | bigint;
  formatVersion?: number;
  fingerprintBits?: number;
  slotsPerBucket?: number;
}

export interface Cbi1Header {
  wireVersion: number;
  flags: number;
  fingerprintBits: number;
  slotsPerBucket: number;
  formatVersion: number;
  seed: bigint;
  bucketCount: number;
  dcId: bigint;
  /** The frame's publication sequence. */
  epoch: bigint;
  checksum: number;
}

export interface DecodedDelta {
  kind: 'delta';
  header: Cbi1Header;
  baseEpoch: bigint;
  buckets: Uint32Array;
  values: BigUint64Array;
}

export interface DecodedChunk {
  kind: 'chunk';
  header: Cbi1Header;
  chunkIndex: number;
  chunkCount: number;
  bucketOffset: number;
  words: BigUint64Array;
}

export type DecodedFrame = DecodedDelta | DecodedChunk;

/** A completed snapshot: sparse nonzero bucket images (the rest of the table is zero). */
export interface AssembledSnapshot {
  epoch: bigint;
  buckets: Uint32Array;
  values: BigUint64Array;
}

export interface Cbi1Constants {
  readonly headerLen: number;
  readonly snapshotChunkBuckets: number;
  readonly maxBucketCount: number;
  readonly maxFrameBytes: number;
  readonly maxDeltaImages: number;
  readonly wireVersion: number;
  readonly flagSnapshotChunk: number;
  readonly flagDelta: number;
  readonly formatVersion: number;
  readonly fingerprintBits: number;
  readonly slotsPerBucket: number;
}

export const cbi1Constants: Cbi1Constants;
export function validateFilterFormat(format: FilterFormatInput): FilterFormat;
export function snapshotChunkCount(format: FilterFormatInput): number;
export function encodeDelta(
  format: FilterFormatInput,
  dcId: bigint,
  baseSequence: bigint,
  sequence: bigint,
  buckets: Uint32Array,
  values: BigUint64Array,
): Buffer;
export function encodeSnapshotChunks(format: FilterFormatInput, dcId: bigint, epoch: bigint, words: BigUint64Array): Buffer[];
export function encodeSnapshotChunk(
  format: FilterFormatInput,
  dcId: bigint,
  epoch: bigint,
  words: BigUint64Array,
  chunkIndex: number,
): Buffer;
export function encodeSnapshotAsync(format: FilterFormatInput, dcId: bigint, epoch: bigint, words: BigUint64Array): Promise<Buffer[]>;
export function decodeFrame(expected: FilterFormatInput, bytes: Uint8Array): DecodedFrame;

export class SnapshotAssembly {
  constructor(format: FilterFormatInput);
  /** null while incomplete; the sparse images once the last chunk arrived. */
  absorb(frame: Uint8Array | DecodedFrame): AssembledSnapshot | null;
  reset(): void;
}
