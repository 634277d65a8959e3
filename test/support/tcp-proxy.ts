// A loopback TCP proxy a test can break: stands in for a network fault between one process and a
// server (a relay shard and etcd, a relay and an engine's publisher) while everything else still
// reaches the server. Faults: partition (drop every connection, refuse new ones), reset (drop the
// current connections with a TCP RST, accept new ones), blackhole (connections stay open and nothing
// passes either way; as with lost packets, TCP delivers the held bytes once restored — a stream never
// loses bytes in its middle) and delay (every chunk is forwarded after a fixed delay, in order).
import * as net from 'net';

export class TcpProxy {
  private readonly server = net.createServer((client) => this.accept(client));
  private readonly sockets = new Set<net.Socket>();
  private cut = false;
  private holding = false;
  private delayMs = 0;
  port = 0;
  /** Connections accepted since start. */
  accepted = 0;

  constructor(private readonly target: { host: string; port: number }) {}

  /** A proxy in front of a `tcp://host:port` endpoint. */
  static forEndpoint(endpoint: string): TcpProxy {
    const m = /^(?:tcp:\/\/)?([^:]+):(\d+)$/.exec(endpoint);
    if (!m) throw new Error(`not a host:port endpoint: ${endpoint}`);
    return new TcpProxy({ host: m[1], port: Number(m[2]) });
  }

  get endpoint(): string {
    return `127.0.0.1:${this.port}`;
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as net.AddressInfo).port;
    return this;
  }

  /** Drops every connection and refuses new ones until restore(). */
  partition(): void {
    this.cut = true;
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
  }

  /** Resets the current connections (RST, as a middlebox or a peer's crash would); new ones are served. */
  reset(): void {
    for (const s of this.sockets) s.resetAndDestroy();
    this.sockets.clear();
  }

  /** Keeps the connections open but lets nothing through until restore(). */
  blackhole(): void {
    this.holding = true;
    for (const s of this.sockets) s.pause();
  }

  /** Forwards every later chunk `ms` after it arrived (0 = at once). */
  delay(ms: number): void {
    this.delayMs = ms;
  }

  /** Ends partition and blackhole (not the delay). */
  restore(): void {
    this.cut = false;
    this.holding = false;
    for (const s of this.sockets) s.resume();
  }

  async close(): Promise<void> {
    this.partition();
    await new Promise((resolve) => this.server.close(resolve));
  }

  private accept(client: net.Socket): void {
    if (this.cut) {
      client.destroy();
      return;
    }
    this.accepted += 1;
    const upstream = net.connect(this.target.port, this.target.host);
    for (const s of [client, upstream]) {
      this.sockets.add(s);
      s.on('error', () => undefined);
      s.on('close', () => {
        this.sockets.delete(s);
        client.destroy();
        upstream.destroy();
      });
    }
    this.forward(client, upstream);
    this.forward(upstream, client);
  }

  /** Chunks keep their order: a delayed chunk is queued behind earlier ones. */
  private forward(from: net.Socket, to: net.Socket): void {
    let tail = Promise.resolve();
    if (this.holding) from.pause();
    from.on('data', (chunk: Buffer) => {
      const ms = this.delayMs;
      if (ms === 0) {
        tail = tail.then(() => void (to.destroyed || to.write(chunk)));
        return;
      }
      const due = Date.now() + ms;
      tail = tail.then(() => new Promise<void>((resolve) => setTimeout(() => {
        if (!to.destroyed) to.write(chunk);
        resolve();
      }, Math.max(0, due - Date.now()))));
    });
  }
}
