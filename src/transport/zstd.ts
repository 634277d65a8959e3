// zstd-compressed requests (wire-contract.md §1.3: tonic clients may send them). grpc-js only
// decompresses gzip/deflate, so its server call's decompression step is extended here with a
// pure-JS zstd decoder. Responses stay uncompressed, which every gRPC client accepts. This is the
// one place that reaches into grpc-js internals: if they change, zstd requests are refused (as
// grpc-js refuses any unknown encoding) and the relay keeps serving everything else.
import { Decompress as ZstdDecoder } from 'fzstd';
import { ZSTD_MAX_WINDOW_BYTES } from '../config/limits';
import { zstdFrameSizes } from './zstd-frame';

type Decompress = (this: { maxReceiveMessageSize: number }, message: Buffer, encoding: string) => Buffer | Promise<Buffer>;

/** The part of grpc-js's server call this module extends. */
export interface DecompressingCall {
  decompressMessage?: unknown;
}

const GRPC_RESOURCE_EXHAUSTED = 8;
const GRPC_INTERNAL = 13;

let accepted: boolean | undefined;

/**
 * Teaches the grpc-js server to read zstd-compressed request messages (idempotent). False when the
 * grpc-js internals are not the ones this was written against: zstd requests stay unsupported.
 */
export function acceptZstdRequests(): boolean {
  accepted ??= extendDecompress(serverCallPrototype());
  return accepted;
}

function serverCallPrototype(): DecompressingCall | undefined {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const internals = require('@grpc/grpc-js/build/src/server-interceptors') as {
      BaseServerInterceptingCall?: { prototype?: DecompressingCall };
    };
    return internals.BaseServerInterceptingCall?.prototype;
  } catch {
    return undefined;
  }
}

/** Wraps `call.decompressMessage` so it also decodes zstd; false (nothing changed) when it has none. */
export function extendDecompress(call: DecompressingCall | undefined): boolean {
  const original = call?.decompressMessage;
  if (!call || typeof original !== 'function') return false;
  const decompress: Decompress = function (message, encoding) {
    if (encoding !== 'zstd') return (original as Decompress).call(this, message, encoding);
    return decodeZstd(message.subarray(5), this.maxReceiveMessageSize);
  };
  call.decompressMessage = decompress;
  return true;
}

// The frame headers are judged first (a ~10-byte frame can declare a 2 GiB window, which the
// decoder would allocate at once); then the decoding streams, so a small request that would
// inflate past the limit is stopped early.
function decodeZstd(compressed: Buffer, limit: number): Buffer | Promise<Buffer> {
  let frames;
  try {
    frames = zstdFrameSizes(compressed);
  } catch {
    return Promise.reject({ code: GRPC_INTERNAL, details: 'Failed to decompress message' });
  }
  for (const { windowBytes, contentBytes } of frames) {
    if (limit !== -1 && contentBytes !== undefined && contentBytes > limit) {
      return Promise.reject({ code: GRPC_RESOURCE_EXHAUSTED, details: `Received message that decompresses to a size larger than ${limit}` });
    }
    if (windowBytes > ZSTD_MAX_WINDOW_BYTES) {
      return Promise.reject({ code: GRPC_RESOURCE_EXHAUSTED, details: `zstd window of ${windowBytes} bytes is larger than ${ZSTD_MAX_WINDOW_BYTES}` });
    }
  }
  const parts: Uint8Array[] = [];
  let total = 0;
  let tooLarge = false;
  const decoder = new ZstdDecoder((chunk) => {
    total += chunk.length;
    if (limit !== -1 && total > limit) {
      tooLarge = true;
      throw new RangeError('message too large');
    }
    parts.push(chunk);
  });
  try {
    decoder.push(compressed, true);
  } catch {
    if (tooLarge) {
      return Promise.reject({
        code: GRPC_RESOURCE_EXHAUSTED,
        details: `Received message that decompresses to a size larger than ${limit}`,
      });
    }
    return Promise.reject({ code: GRPC_INTERNAL, details: 'Failed to decompress message' });
  }
  return Buffer.concat(parts);
}
