// SubscribeKvPool streams read as cheaply as node can: one HTTP/2 session per subscriber (as remote
// consumers connect), the request framed by hand, and the response only split into gRPC messages
// and counted, never decoded. The fan-out bench measures the server side; a grpc-js client per
// stream would cost this process about as much per message as the server it measures spends.
import * as http2 from 'http2';
import { RELAY_CONTRACT_MARKER, RELAY_SERVICE_NAME } from '../../src/wire/constants';
import { encodeMessage } from '../../src/wire/codec';
import type { ProducerIdentity } from '../../src/wire/types';

/** gRPC message prefix: a compressed flag and a big-endian u32 length. */
const PREFIX_BYTES = 5;

/** Splits a gRPC response byte stream into messages, counting them. */
class MessageCounter {
  private readonly prefix = Buffer.alloc(PREFIX_BYTES);
  private prefixFill = 0;
  private remaining = -1; // bytes left of the current message; -1 while reading a prefix
  count = 0;

  /** Returns how many messages `chunk` completed. */
  push(chunk: Buffer): number {
    const before = this.count;
    let i = 0;
    while (i < chunk.length) {
      if (this.remaining < 0) {
        const take = Math.min(PREFIX_BYTES - this.prefixFill, chunk.length - i);
        chunk.copy(this.prefix, this.prefixFill, i, i + take);
        this.prefixFill += take;
        i += take;
        if (this.prefixFill < PREFIX_BYTES) break;
        this.prefixFill = 0;
        this.remaining = this.prefix.readUInt32BE(1);
      } else {
        const take = Math.min(this.remaining, chunk.length - i);
        this.remaining -= take;
        i += take;
      }
      if (this.remaining === 0) {
        this.remaining = -1;
        this.count += 1;
      }
    }
    return this.count - before;
  }
}

export interface RawSubscriber {
  /** Messages received so far (the snapshot first). */
  readonly received: number;
  /** Why the stream ended before close(), if it did. */
  readonly ended: string | undefined;
  close(): void;
}

/**
 * Opens one SubscribeKvPool stream on a session of its own; `onMessages(n)` hears every chunk that
 * completed n messages. Resolves once the first message (the snapshot) arrived.
 */
export function subscribeRaw(
  address: string,
  subscriberId: string,
  producer: ProducerIdentity,
  onMessages: (n: number) => void,
): Promise<RawSubscriber> {
  const request = encodeMessage('SubscribeKvPoolRequest', { subscriberId, contractMarker: RELAY_CONTRACT_MARKER, expectedProducer: producer });
  const framed = Buffer.alloc(PREFIX_BYTES + request.length);
  framed.writeUInt32BE(request.length, 1);
  request.copy(framed, PREFIX_BYTES);
  const session = http2.connect(`http://${address}`);
  const stream = session.request({
    ':method': 'POST',
    ':path': `/${RELAY_SERVICE_NAME}/SubscribeKvPool`,
    'content-type': 'application/grpc',
    te: 'trailers',
  });
  stream.end(framed);
  const counter = new MessageCounter();
  let ended: string | undefined;
  let closed = false;
  const subscriber: RawSubscriber = {
    get received() {
      return counter.count;
    },
    get ended() {
      return ended;
    },
    close: () => {
      closed = true;
      session.destroy();
    },
  };
  return new Promise((resolve, reject) => {
    const fail = (why: string): void => {
      if (closed || ended !== undefined) return;
      ended = why;
      session.destroy();
      reject(new Error(why)); // a no-op once live: `ended` tells
    };
    session.on('error', (err) => fail(`session error: ${err.message}`));
    stream.on('error', (err) => fail(`stream error: ${err.message}`));
    stream.once('trailers', (trailers) => fail(`stream ended: grpc-status ${trailers['grpc-status']} ${trailers['grpc-message'] ?? ''}`));
    stream.on('data', (chunk: Buffer) => {
      const n = counter.push(chunk);
      if (n === 0) return;
      if (counter.count === n) resolve(subscriber);
      onMessages(n);
    });
  });
}
