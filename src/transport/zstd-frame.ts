// The sizes a zstd payload declares in its frame headers (RFC 8878 §3.1), read without decoding:
// a decoder allocates a frame's window (or, for a single-segment frame, its content size) before
// it produces a byte, so a request must be judged by these numbers first.

const ZSTD_MAGIC = 0xfd2fb528;
/** Skippable frames: magic 0x184D2A50..0x184D2A5F, then a 4-byte length (their bytes are ignored). */
const SKIPPABLE_MAGIC_MASK = 0xfffffff0;
const SKIPPABLE_MAGIC = 0x184d2a50;
const BLOCK_TYPE_RLE = 1;
const BLOCK_TYPE_RESERVED = 3;

export interface ZstdFrameSizes {
  /** Bytes of history the decoder keeps for this frame (its allocation). */
  windowBytes: number;
  /** Decompressed size the header declares, when it declares one. */
  contentBytes: number | undefined;
}

/** Every zstd frame of `data` (skippable frames left out); throws RangeError when the layout is malformed. */
export function zstdFrameSizes(data: Uint8Array): ZstdFrameSizes[] {
  const frames: ZstdFrameSizes[] = [];
  let at = 0;
  const need = (n: number): void => {
    if (at + n > data.length) throw new RangeError('truncated zstd frame');
  };
  while (at < data.length) {
    need(4);
    const magic = readLE(data, at, 4);
    at += 4;
    if (((magic & SKIPPABLE_MAGIC_MASK) >>> 0) === SKIPPABLE_MAGIC) {
      need(4);
      at += 4 + readLE(data, at, 4);
      need(0);
      continue;
    }
    if (magic !== ZSTD_MAGIC) throw new RangeError('not a zstd frame');
    need(1);
    const descriptor = data[at++];
    if (descriptor & 0x08) throw new RangeError('reserved zstd frame header bit set');
    const singleSegment = (descriptor & 0x20) !== 0;
    const contentFlag = descriptor >> 6;
    const dictionaryBytes = [0, 1, 2, 4][descriptor & 0x03];
    const contentFieldBytes = contentFlag === 0 ? (singleSegment ? 1 : 0) : 1 << contentFlag;
    let windowBytes = 0;
    if (!singleSegment) {
      need(1);
      const exponent = data[at] >> 3;
      const base = 2 ** (10 + exponent);
      windowBytes = base + (base / 8) * (data[at] & 0x07);
      at += 1;
    }
    need(dictionaryBytes + contentFieldBytes);
    at += dictionaryBytes;
    let contentBytes: number | undefined;
    if (contentFieldBytes > 0) {
      contentBytes = readLE(data, at, contentFieldBytes) + (contentFieldBytes === 2 ? 256 : 0);
      at += contentFieldBytes;
    }
    if (singleSegment) windowBytes = contentBytes!;
    frames.push({ windowBytes, contentBytes });
    // Blocks: a 3-byte header each (last flag, type, size); an RLE block carries one byte.
    for (let last = false; !last; ) {
      need(3);
      const header = readLE(data, at, 3);
      at += 3;
      last = (header & 1) === 1;
      const type = (header >> 1) & 0x03;
      if (type === BLOCK_TYPE_RESERVED) throw new RangeError('reserved zstd block type');
      at += type === BLOCK_TYPE_RLE ? 1 : header >>> 3;
      need(0);
    }
    if (descriptor & 0x04) {
      need(4);
      at += 4; // content checksum
    }
  }
  return frames;
}

/** Little-endian unsigned integer of 1..8 bytes (exact up to 2^53, which is all a size needs). */
function readLE(data: Uint8Array, at: number, bytes: number): number {
  let value = 0;
  for (let i = bytes - 1; i >= 0; i -= 1) value = value * 256 + data[at + i];
  return value;
}
