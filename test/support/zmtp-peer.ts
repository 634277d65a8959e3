// A ZMTP 3.0 peer written without libzmq (RFC 23, NULL mechanism): greeting, READY, then frames
// exactly as the test writes them, including messages never finished (every frame with MORE), which a
// libzmq sender never flushes. What a hostile engine can send a relay's SUB socket.
import * as net from 'net';

const GREETING_BYTES = 64;
const FLAG_MORE = 0x01;
const FLAG_LONG = 0x02;
const FLAG_COMMAND = 0x04;

function greeting(): Buffer {
  const g = Buffer.alloc(GREETING_BYTES);
  g[0] = 0xff;
  g[9] = 0x7f;
  g[10] = 3; // version 3.0
  g[11] = 0;
  g.write('NULL', 12, 'ascii');
  return g; // as-server 0, filler zero
}

/** One frame's bytes: flags, a 1- or 8-byte size, the body. */
export function zmtpFrame(body: Buffer, flags: number): Buffer {
  if (body.length <= 255) return Buffer.concat([Buffer.from([flags, body.length]), body]);
  const head = Buffer.alloc(9);
  head[0] = flags | FLAG_LONG;
  head.writeBigUInt64BE(BigInt(body.length), 1);
  return Buffer.concat([head, body]);
}

function ready(socketType: string): Buffer {
  const name = Buffer.from('Socket-Type', 'ascii');
  const value = Buffer.from(socketType, 'ascii');
  const size = Buffer.alloc(4);
  size.writeUInt32BE(value.length);
  const body = Buffer.concat([Buffer.from([5]), Buffer.from('READY', 'ascii'), Buffer.from([name.length]), name, size, value]);
  return zmtpFrame(body, FLAG_COMMAND);
}

export class ZmtpPeer {
  /** Settles when the other side closed or reset the connection. */
  readonly closed: Promise<void>;
  private ended = false;

  /** Settles once the other side's READY came (its handshake done: messages may follow) or it closed. */
  readonly handshaken: Promise<void>;
  private received = Buffer.alloc(0);
  private peerReady = false;

  private constructor(private readonly socket: net.Socket) {
    this.closed = new Promise((resolve) => socket.once('close', () => resolve()));
    socket.on('close', () => (this.ended = true));
    socket.on('error', () => undefined); // a reset shows as close
    this.handshaken = new Promise((resolve) => {
      socket.once('close', () => resolve());
      // The other side's greeting, then its commands up to READY; later bytes (subscriptions) are ignored.
      socket.on('data', (chunk: Buffer) => {
        if (this.peerReady) return;
        this.received = Buffer.concat([this.received, chunk]);
        if (this.readyReceived()) {
          this.peerReady = true;
          resolve();
        }
      });
    });
  }

  private readyReceived(): boolean {
    let at = GREETING_BYTES;
    while (at + 2 <= this.received.length) {
      const flags = this.received[at];
      const long = (flags & FLAG_LONG) !== 0;
      const head = long ? 9 : 2;
      if (at + head > this.received.length) return false;
      const size = long ? Number(this.received.readBigUInt64BE(at + 1)) : this.received[at + 1];
      if (at + head + size > this.received.length) return false;
      const body = this.received.subarray(at + head, at + head + size);
      if ((flags & FLAG_COMMAND) !== 0 && body.subarray(1, 1 + body[0]).toString('ascii') === 'READY') return true;
      at += head + size;
    }
    return false;
  }

  /**
   * Connects to `port` (from `localAddress` when given: any 127/8 address works on loopback) as a
   * `socketType` peer, and completes the handshake as a libzmq peer would (messages sent before the
   * other side's READY are a protocol error there).
   */
  static async connect(port: number, o: { host?: string; localAddress?: string; socketType?: string } = {}): Promise<ZmtpPeer> {
    const peer = await new Promise<ZmtpPeer>((resolve, reject) => {
      const socket = net.connect({ port, host: o.host ?? '127.0.0.1', ...(o.localAddress ? { localAddress: o.localAddress } : {}) }, () => {
        socket.write(greeting());
        socket.write(ready(o.socketType ?? 'PUB'));
        resolve(new ZmtpPeer(socket));
      });
      socket.once('error', reject);
    });
    await peer.handshaken;
    return peer;
  }

  get isClosed(): boolean {
    return this.ended;
  }

  /** Writes one frame; resolves once the socket took it (or the connection ended). */
  send(body: Buffer, more: boolean): Promise<void> {
    if (this.ended) return Promise.resolve();
    return new Promise((resolve) => {
      if (this.socket.write(zmtpFrame(body, more ? FLAG_MORE : 0))) return resolve();
      const done = (): void => {
        this.socket.off('drain', done);
        this.socket.off('close', done);
        resolve();
      };
      this.socket.on('drain', done);
      this.socket.on('close', done);
    });
  }

  /** A whole message: every frame but the last with MORE. */
  async sendMessage(frames: Buffer[]): Promise<void> {
    for (const [i, f] of frames.entries()) await this.send(f, i < frames.length - 1);
  }

  close(): void {
    this.socket.destroy();
  }
}
