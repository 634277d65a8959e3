// An in-process TCP proxy that adds a fixed one-way delay in each direction: a WAN between the
// router and a relay on loopback, without root or tc. Order and bytes are preserved; each direction
// holds at most `maxQueuedBytes` before it stops reading (TCP backpressure does the rest). A
// partition holds every byte (nothing is lost, as TCP retransmits) until it heals; the target can
// be moved to a restarted relay.
import { createConnection, createServer, type AddressInfo, type Server, type Socket } from 'net';

export interface DelayProxyOptions {
  /** The relay, HOST:PORT. */
  target: string;
  /** One-way delay added each way (the round trip gains twice this). */
  delayMs: number;
  /** Default 127.0.0.1:0 (an OS-chosen port). */
  listen?: { host?: string; port?: number };
  maxQueuedBytes?: number;
}

const DEFAULT_MAX_QUEUED_BYTES = 16 * 1024 * 1024;

/** One direction of one connection: chunks leave `delayMs` after they arrived. */
class DelayedPipe {
  private readonly queue: { due: number; chunk: Buffer | null }[] = [];
  private queuedBytes = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly from: Socket,
    private readonly to: Socket,
    private readonly delayMs: () => number,
    private readonly maxQueuedBytes: number,
    private readonly partitioned: () => boolean,
  ) {
    from.on('data', (chunk: Buffer) => this.push(chunk));
    from.on('end', () => this.push(null)); // a FIN travels with the same delay as the data before it
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.queue.length = 0;
  }

  private push(chunk: Buffer | null): void {
    this.queue.push({ due: Date.now() + this.delayMs(), chunk });
    if (chunk) {
      this.queuedBytes += chunk.length;
      if (this.queuedBytes > this.maxQueuedBytes) this.from.pause();
    }
    this.schedule();
  }

  /** Resumes delivery after a partition healed. */
  kick(): void {
    this.schedule();
  }

  private schedule(): void {
    if (this.timer || this.queue.length === 0 || this.partitioned()) return;
    this.timer = setTimeout(() => this.flush(), Math.max(0, this.queue[0].due - Date.now()));
  }

  private flush(): void {
    this.timer = undefined;
    if (this.partitioned()) return;
    const now = Date.now();
    while (this.queue.length > 0 && this.queue[0].due <= now) {
      const { chunk } = this.queue.shift()!;
      if (chunk === null) {
        this.to.end();
        continue;
      }
      this.queuedBytes -= chunk.length;
      this.to.write(chunk);
    }
    if (this.from.isPaused() && this.queuedBytes <= this.maxQueuedBytes / 2) this.from.resume();
    this.schedule();
  }
}

export class DelayProxy {
  private readonly sockets = new Set<Socket>();
  private readonly pipes = new Set<DelayedPipe>();
  private delay: number;
  private isPartitioned = false;
  private target: { host: string; port: number };

  private constructor(
    private readonly server: Server,
    readonly address: string,
    delayMs: number,
    target: { host: string; port: number },
  ) {
    this.delay = delayMs;
    this.target = target;
  }

  static async start(options: DelayProxyOptions): Promise<DelayProxy> {
    checkDelay(options.delayMs);
    const target = parseTarget(options.target);
    const maxQueuedBytes = options.maxQueuedBytes ?? DEFAULT_MAX_QUEUED_BYTES;
    let proxy: DelayProxy | undefined;
    const server = createServer({ noDelay: true }, (client) => proxy!.accept(client, maxQueuedBytes));
    const listenHost = options.listen?.host ?? '127.0.0.1';
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.listen?.port ?? 0, listenHost, () => resolve());
    });
    proxy = new DelayProxy(server, `${listenHost}:${(server.address() as AddressInfo).port}`, options.delayMs, target);
    return proxy;
  }

  get delayMs(): number {
    return this.delay;
  }

  /** Applies to bytes arriving from now on. */
  setDelay(delayMs: number): void {
    this.delay = checkDelay(delayMs);
  }

  /** New connections go to this HOST:PORT (a restarted relay); existing ones are reset. */
  retarget(target: string): void {
    this.target = parseTarget(target);
    this.resetConnections();
  }

  /** While partitioned nothing crosses in either direction; bytes wait and flow on when it heals. */
  setPartitioned(partitioned: boolean): void {
    this.isPartitioned = partitioned;
    if (!partitioned) for (const p of this.pipes) p.kick();
  }

  get partitioned(): boolean {
    return this.isPartitioned;
  }

  /** Connections currently proxied. */
  get connections(): number {
    return this.sockets.size / 2;
  }

  /** Stops accepting and resets every proxied connection. */
  async close(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.resetConnections();
    await closed;
  }

  private resetConnections(): void {
    for (const pipe of this.pipes) pipe.stop();
    for (const s of this.sockets) s.destroy();
  }

  private accept(client: Socket, maxQueuedBytes: number): void {
    const upstream = createConnection({ ...this.target, noDelay: true });
    const held = () => this.isPartitioned;
    const pipes = [new DelayedPipe(client, upstream, () => this.delay, maxQueuedBytes, held), new DelayedPipe(upstream, client, () => this.delay, maxQueuedBytes, held)];
    for (const p of pipes) this.pipes.add(p);
    for (const s of [client, upstream]) this.sockets.add(s);
    // Either side failing or closing resets the other: a dead relay looks dead to the router.
    const teardown = () => {
      for (const p of pipes) {
        p.stop();
        this.pipes.delete(p);
      }
      for (const s of [client, upstream]) {
        s.destroy();
        this.sockets.delete(s);
      }
    };
    for (const s of [client, upstream]) {
      s.on('error', teardown);
      s.on('close', teardown);
    }
  }
}

function parseTarget(text: string): { host: string; port: number } {
  const m = /^(.+):(\d+)$/.exec(text);
  if (!m) throw new TypeError(`target ${JSON.stringify(text)} is not HOST:PORT`);
  return { host: m[1], port: Number(m[2]) };
}

function checkDelay(ms: number): number {
  if (!Number.isFinite(ms) || ms < 0) throw new RangeError('delayMs must be a finite number ≥ 0');
  return ms;
}
