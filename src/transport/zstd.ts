// zstd-compressed requests (wire-contract.md §1.3: tonic clients may send them). grpc-js only
// decompresses gzip/deflate, so its server call's decompression step is extended here with a
// pure-JS zstd decoder. Responses stay uncompressed, which every gRPC client accepts. This is the
// one place that reaches into grpc-js internals; it fails loudly at load if they change.
import { Decompress as ZstdDecoder } from 'fzstd';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const internals = require('@grpc/grpc-js/build/src/server-interceptors') as {
  BaseServerInterceptingCall?: { prototype: { decompressMessage?: Decompress; maxReceiveMessageSize?: number } };
};

type Decompress = (this: { maxReceiveMessageSize: number }, message: Buffer, encoding: string) => Buffer | Promise<Buffer>;

const GRPC_RESOURCE_EXHAUSTED = 8;
const GRPC_INTERNAL = 13;

let installed = false;

/** Teaches the grpc-js server to read zstd-compressed request messages (idempotent). */
export function acceptZstdRequests(): void {
  if (installed) return;
  const prototype = internals.BaseServerInterceptingCall?.prototype;
  const original = prototype?.decompressMessage;
  if (!prototype || typeof original !== 'function') {
    throw new Error('grpc-js internals changed: BaseServerInterceptingCall.decompressMessage not found');
  }
  prototype.decompressMessage = function (this: { maxReceiveMessageSize: number }, message: Buffer, encoding: string) {
    if (encoding !== 'zstd') return original.call(this, message, encoding);
    const limit = this.maxReceiveMessageSize;
    const parts: Uint8Array[] = [];
    let total = 0;
    let tooLarge = false;
    // Streaming, so a small request that would inflate past the limit is stopped early.
    const decoder = new ZstdDecoder((chunk) => {
      total += chunk.length;
      if (limit !== -1 && total > limit) {
        tooLarge = true;
        throw new RangeError('message too large');
      }
      parts.push(chunk);
    });
    try {
      decoder.push(message.subarray(5), true);
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
  };
  installed = true;
}
