// A gRPC call over a bare node:http2 client, for clients that stop reading: a paused HTTP/2 stream
// stops consuming, so its flow-control window closes and the server's writes back up (grpc-js
// clients keep buffering messages on their own, which hides that).
import * as http2 from 'http2';
import { ERROR_REASON_TRAILER } from '../../src/wire/constants';
import { encodeMessage, decodeMessage } from '../../src/wire/codec';
import type { WireMessageName, WireMessages } from '../../src/wire/types';

export interface RawEnd {
  code: number;
  reason: string | undefined;
  details: string | undefined;
}

export class RawCall<Res extends WireMessageName> {
  /** Bytes read and not decoded yet (a message split across chunks waits for its tail). */
  private chunks: Buffer[] = [];
  /** Decoded once: tests poll messages() while megabytes stream in. */
  private readonly decoded: Array<WireMessages[Res]> = [];
  /** Each decoded message's bytes as the server sent them. */
  private readonly raw: Buffer[] = [];
  private endPromise: Promise<RawEnd>;
  /** Resolves when response headers arrive (the server wrote its first message, read or not). */
  readonly headers: Promise<void>;
  readonly stream: http2.ClientHttp2Stream;

  constructor(
    readonly session: http2.ClientHttp2Session,
    path: string,
    request: Buffer,
    private readonly responseType: Res,
  ) {
    this.stream = session.request({
      ':method': 'POST',
      ':path': path,
      'content-type': 'application/grpc',
      te: 'trailers',
    });
    const framed = Buffer.alloc(5 + request.length);
    framed.writeUInt32BE(request.length, 1);
    request.copy(framed, 5);
    this.stream.end(framed);
    this.stream.pause();
    this.headers = new Promise((resolve) => this.stream.once('response', () => resolve()));
    this.endPromise = new Promise((resolve) => {
      const fromHeaders = (h: http2.IncomingHttpHeaders): RawEnd | undefined => {
        if (h['grpc-status'] === undefined) return undefined;
        return {
          code: Number(h['grpc-status']),
          reason: h[ERROR_REASON_TRAILER] as string | undefined,
          details: h['grpc-message'] ? decodeURIComponent(String(h['grpc-message'])) : undefined,
        };
      };
      this.stream.on('response', (h) => {
        const end = fromHeaders(h);
        if (end) resolve(end);
      });
      this.stream.on('trailers', (h) => resolve(fromHeaders(h) ?? { code: -1, reason: undefined, details: undefined }));
      this.stream.on('error', (err) => resolve({ code: -3, reason: undefined, details: err.message }));
      this.stream.on('close', () => resolve({ code: -2, reason: undefined, details: 'stream closed without status' }));
    });
  }

  /** Starts reading again: buffered and future messages are collected. */
  resume(): void {
    this.stream.on('data', (c: Buffer) => this.chunks.push(c));
    this.stream.resume();
  }

  end(): Promise<RawEnd> {
    return this.endPromise;
  }

  /** The messages read so far (after resume). */
  messages(): Array<WireMessages[Res]> {
    const all = Buffer.concat(this.chunks);
    let at = 0;
    while (at + 5 <= all.length) {
      const len = all.readUInt32BE(at + 1);
      if (at + 5 + len > all.length) break;
      const bytes = Buffer.from(all.subarray(at + 5, at + 5 + len));
      this.decoded.push(decodeMessage(this.responseType, bytes));
      this.raw.push(bytes);
      at += 5 + len;
    }
    this.chunks = at < all.length ? [all.subarray(at)] : [];
    return [...this.decoded];
  }

  /** The bytes of the messages read so far, as sent (one per messages() entry). */
  rawMessages(): Buffer[] {
    this.messages();
    return [...this.raw];
  }
}

export function rawSession(address: string): http2.ClientHttp2Session {
  const session = http2.connect(`http://${address}`);
  session.on('error', () => undefined);
  return session;
}

export function rawCall<Req extends WireMessageName, Res extends WireMessageName>(
  session: http2.ClientHttp2Session,
  method: string,
  requestType: Req,
  request: WireMessages[Req],
  responseType: Res,
): RawCall<Res> {
  return new RawCall(session, `/dynamo.kvrelay.v1.KvEventRelay/${method}`, encodeMessage(requestType, request), responseType);
}

/** Raw sessions a test opens, destroyed together when it ends. */
export class RawSessions {
  private readonly open: http2.ClientHttp2Session[] = [];

  connect(address: string): http2.ClientHttp2Session {
    const session = rawSession(address);
    this.open.push(session);
    return session;
  }

  destroyAll(): void {
    for (const session of this.open.splice(0)) session.destroy();
  }
}
