// A simulated vLLM worker for tests, benches and the demo: per data-parallel rank a KV-event
// publisher (XPUB, so tests can await subscribers) plus a ROUTER replay buffer, in vLLM's wire
// format (engine-inputs.md §1), an HTTP server for /health and /metrics, and a workload generator.
import { Router, XPublisher, type Socket } from 'zeromq';
import { END_SEQ, encodeSequence } from '../ingest/frames';
import { rankEndpoint } from '../ingest/endpoints';
import { encodeBatch, type EventEncoding, type HashEncoding, type SimEvent } from './encode';
import { EngineHttpServer, type RankGauges } from './http';
import { Workload, type Prompt, type WorkloadOptions } from './workload';

export interface SimulatedEngineOptions {
  dpSize?: number;
  dpStartRank?: number;
  host?: string;
  /** bind: the engine binds its PUB (the relay connects); connect: it dials the relay's bound SUB. */
  mode?: 'bind' | 'connect';
  /** Base PUB port in bind mode (rank r on port + r − dpStartRank); 0 = find free contiguous ports. */
  port?: number;
  /** In connect mode: the relay's SUB endpoint, as a base (ports offset per rank) or one per rank. */
  connectTo?: string | string[];
  /** Serve replay requests on a ROUTER (default true). */
  replay?: boolean;
  replayPort?: number;
  /** topic: [topic, seq, payload] replies (vLLM PR #45177); legacy: [seq, payload] (older vLLM, SGLang). */
  replayLayout?: 'topic' | 'legacy';
  /** Replay buffer depth in batches (vLLM buffer_steps). */
  bufferSteps?: number;
  events?: EventEncoding;
  envelope?: 'array' | 'map';
  hashes?: HashEncoding;
  topic?: string;
  /** Serve /health and /metrics (default true, on an OS-chosen port unless httpPort is set). */
  http?: boolean;
  httpPort?: number;
  modelName?: string;
  workload?: WorkloadOptions;
}

export interface PublishOptions {
  rank?: number;
  /** Keep the batch in the replay buffer but do not send it live (a PUB-side drop: a gap). */
  dropLive?: boolean;
  /** Engine timestamp in seconds (default: now). */
  ts?: number;
}

const DEFAULT_BUFFER_STEPS = 10_000;
const PORT_ATTEMPTS = 20;
const REBIND_RETRY_MS = 50;

class RankPublisher {
  seq = 0n;
  readonly buffer: { seq: bigint; payload: Buffer }[] = [];
  subscriptions = 0;
  private sending: Promise<void> = Promise.resolve();
  private readonly subscribers: (() => void)[] = [];

  constructor(
    readonly rank: number,
    readonly pub: XPublisher,
    readonly router: Router | null,
  ) {}

  /** Sends are chained: a zeromq socket accepts one send at a time, and order must hold. */
  send(frames: Buffer[]): Promise<void> {
    this.sending = this.sending.then(() => this.pub.send(frames)).catch(() => undefined);
    return this.sending;
  }

  remember(seq: bigint, payload: Buffer, depth: number): void {
    this.buffer.push({ seq, payload });
    if (this.buffer.length > depth) this.buffer.shift();
  }

  onSubscribed(): void {
    this.subscriptions += 1;
    for (const wake of this.subscribers.splice(0)) wake();
  }

  waitSubscribed(count: number): Promise<void> {
    return new Promise((resolve) => {
      const check = (): void => (this.subscriptions >= count ? resolve() : void this.subscribers.push(check));
      check();
    });
  }
}

export class SimulatedEngine {
  readonly dpSize: number;
  readonly dpStartRank: number;
  readonly topic: string;
  /** Rank dpStartRank's PUB endpoint (bind mode) — the `kvEvents.endpoint` a relay config uses. */
  pubEndpoint = '';
  /** Rank dpStartRank's replay ROUTER, or undefined without replay. */
  replayEndpoint: string | undefined;
  httpUrl: string | undefined;
  readonly workload: Workload;
  private readonly ranks = new Map<number, RankPublisher>();
  private readonly overrides = new Map<number, Partial<RankGauges>>();
  private readonly http: EngineHttpServer | null;
  private workloadTimer: NodeJS.Timeout | null = null;
  private loops: Promise<void>[] = [];
  private started = false;

  constructor(private readonly options: SimulatedEngineOptions = {}) {
    this.dpSize = options.dpSize ?? 1;
    this.dpStartRank = options.dpStartRank ?? 0;
    this.topic = options.topic ?? '';
    const ranks = Array.from({ length: this.dpSize }, (_, i) => this.dpStartRank + i);
    this.workload = new Workload(ranks, options.workload);
    this.http = options.http === false ? null : new EngineHttpServer(() => this.gauges(), options.modelName ?? 'sim-model');
  }

  async start(): Promise<this> {
    if (this.started) throw new Error('already started');
    this.started = true;
    const o = this.options;
    const host = o.host ?? '127.0.0.1';
    // The replay ROUTERs first: a relay dials them as soon as it sees a publisher, and one that
    // bindContiguous() opens and closes again (a rank's port still held, e.g. by a predecessor's
    // closing socket) would take that relay's request with it (its replay then stays silent).
    const routers = o.replay === false ? null : await bindContiguous(() => new Router({ linger: 0 }), host, o.replayPort ?? 0, this.dpSize);
    let pubs: XPublisher[];
    try {
      pubs = o.mode === 'connect' ? this.connectPublishers() : await bindContiguous(() => newPublisher(), host, o.port ?? 0, this.dpSize);
    } catch (err) {
      for (const router of routers ?? []) router.close();
      throw err;
    }
    pubs.forEach((pub, i) => {
      const r = new RankPublisher(this.dpStartRank + i, pub, routers?.[i] ?? null);
      this.ranks.set(r.rank, r);
      this.loops.push(this.watchSubscriptions(r));
      if (r.router) this.loops.push(this.serveReplay(r));
    });
    if (o.mode !== 'connect') this.pubEndpoint = pubs[0].lastEndpoint!;
    this.replayEndpoint = routers?.[0].lastEndpoint ?? undefined;
    if (this.http) this.httpUrl = await this.http.listen(host, o.httpPort ?? 0);
    return this;
  }

  /** Resolves once every rank's publisher has seen `count` subscriptions since start. */
  async waitForSubscribers(count = 1): Promise<void> {
    await Promise.all([...this.ranks.values()].map((r) => r.waitSubscribed(count)));
  }

  /** Publishes one batch of explicit events; returns its sequence number. */
  async publish(events: SimEvent[], opts: PublishOptions = {}): Promise<bigint> {
    const r = this.rank(opts.rank);
    const seq = r.seq;
    r.seq += 1n;
    const ts = opts.ts ?? Date.now() / 1000;
    const payload = encodeBatch(ts, events, r.rank, {
      events: this.options.events ?? 'array',
      envelope: this.options.envelope,
      hashes: this.options.hashes,
    });
    r.remember(seq, payload, this.options.bufferSteps ?? DEFAULT_BUFFER_STEPS);
    if (!opts.dropLive) await r.send([Buffer.from(this.topic), encodeSequence(seq), payload]);
    return seq;
  }

  /** Sends arbitrary frames (malformed input); no sequence is consumed. */
  async publishRaw(frames: Buffer[], rank?: number): Promise<void> {
    await this.rank(rank).send(frames);
  }

  /** Sends a well-framed message with an arbitrary payload under the next sequence number. */
  async publishPayload(payload: Buffer, rank?: number): Promise<bigint> {
    const r = this.rank(rank);
    const seq = r.seq;
    r.seq += 1n;
    r.remember(seq, payload, this.options.bufferSteps ?? DEFAULT_BUFFER_STEPS);
    await r.send([Buffer.from(this.topic), encodeSequence(seq), payload]);
    return seq;
  }

  /** Jumps the sequence forward without buffering: a gap replay cannot cover. */
  skip(count: number, rank?: number): void {
    this.rank(rank).seq += BigInt(count);
  }

  /** The engine process restarted behind the same sockets: sequence 0, empty buffer and cache. */
  restart(rank?: number): void {
    const r = this.rank(rank);
    r.seq = 0n;
    r.buffer.length = 0;
    this.workload.clear(r.rank);
  }

  nextSequence(rank?: number): bigint {
    return this.rank(rank).seq;
  }

  /** Runs `count` workload requests, publishing what they change; returns the batches sent. */
  async step(count = 1): Promise<number> {
    let batches = 0;
    const sends: Promise<bigint>[] = [];
    for (let i = 0; i < count; i++) {
      const { rank, events } = this.workload.step();
      if (events.length === 0) continue;
      sends.push(this.publish(events.map((e) => this.decorate(e)), { rank }));
      batches += 1;
    }
    await Promise.all(sends);
    return batches;
  }

  /**
   * Serves one routed request's prompt on a rank (a multi-DC simulation drives engines this way
   * instead of the built-in workload); publishes what it changes and returns the reused blocks.
   */
  async serve(rank: number, prompt: Prompt): Promise<number> {
    const { cachedBlocks, events } = this.workload.serve(rank, prompt);
    if (events.length > 0) await this.publish(events.map((e) => this.decorate(e)), { rank });
    return cachedBlocks;
  }

  /** Runs the workload on a timer (the demo and benches). */
  startWorkload(intervalMs: number, stepsPerTick = 1): void {
    this.stopWorkload();
    this.workloadTimer = setInterval(() => void this.step(stepsPerTick), intervalMs);
  }

  stopWorkload(): void {
    if (this.workloadTimer) clearInterval(this.workloadTimer);
    this.workloadTimer = null;
  }

  setHealthStatus(status: number): void {
    if (this.http) this.http.healthStatus = status;
  }

  /** Pins a rank's gauges (otherwise kv-cache usage follows the workload). */
  setGauges(rank: number, gauges: Partial<RankGauges>): void {
    this.overrides.set(rank, { ...this.overrides.get(rank), ...gauges });
  }

  async stop(): Promise<void> {
    this.stopWorkload();
    for (const r of this.ranks.values()) {
      r.pub.close();
      r.router?.close();
    }
    await Promise.all(this.loops);
    await this.http?.close();
  }

  private rank(rank = this.dpStartRank): RankPublisher {
    const r = this.ranks.get(rank);
    if (!r) throw new RangeError(`rank ${rank} is not one of this engine's ranks`);
    return r;
  }

  /** Map-encoded events carry the fields vLLM v0.26 sends (main attention group). */
  private decorate(e: SimEvent): SimEvent {
    if (this.options.events !== 'map') return e;
    if (e.type === 'BlockStored') return { ...e, extraKeys: e.blockHashes.map(() => null), groupIdx: 0, kvCacheSpecKind: 'full_attention' };
    if (e.type === 'BlockRemoved') return { ...e, groupIdx: 0 };
    return e;
  }

  private gauges(): Map<number, RankGauges> {
    const out = new Map<number, RankGauges>();
    for (const rank of this.ranks.keys()) {
      out.set(rank, { kvCacheUsage: this.workload.usage(rank), running: 0, waiting: 0, ...this.overrides.get(rank) });
    }
    return out;
  }

  private connectPublishers(): XPublisher[] {
    const target = this.options.connectTo;
    if (!target) throw new TypeError('connect mode needs connectTo');
    return Array.from({ length: this.dpSize }, (_, i) => {
      const pub = newPublisher();
      const rank = this.dpStartRank + i;
      pub.connect(Array.isArray(target) ? target[i] : rankEndpoint(target, rank, this.dpStartRank));
      return pub;
    });
  }

  private async watchSubscriptions(r: RankPublisher): Promise<void> {
    try {
      for (;;) {
        const [msg] = await r.pub.receive();
        if (msg.length > 0 && msg[0] === 1) r.onSubscribed();
      }
    } catch {
      // closed
    }
  }

  /** vLLM's replay service: [identity, b"", start_seq] → every buffered batch ≥ start, then END_SEQ. */
  private async serveReplay(r: RankPublisher): Promise<void> {
    const router = r.router!;
    const legacy = this.options.replayLayout === 'legacy';
    const topic = Buffer.from(this.topic);
    const empty = Buffer.alloc(0);
    const end = encodeSequence(END_SEQ);
    try {
      for (;;) {
        const [id, ...rest] = await router.receive();
        if (rest.length !== 2 || rest[0].length !== 0 || rest[1].length !== 8) continue; // vLLM ignores these
        const start = rest[1].readBigUInt64BE(0);
        for (const { seq, payload } of r.buffer.filter((b) => b.seq >= start)) {
          const body = [encodeSequence(seq), payload];
          await router.send(legacy ? [id, empty, ...body] : [id, empty, topic, ...body]);
        }
        await router.send(legacy ? [id, empty, end, empty] : [id, empty, empty, end, empty]);
      }
    } catch {
      // closed
    }
  }
}

function newPublisher(): XPublisher {
  // Verbose: every subscription is reported, so waitForSubscribers sees each subscriber.
  return new XPublisher({ linger: 0, verbosity: 'allSubs', sendHighWaterMark: 100_000 });
}

/**
 * Binds one socket per rank on consecutive ports, as vLLM's rank port offsets require. Port 0
 * retries other free ranges; a fixed port is retried briefly, because a restarted engine rebinds
 * its predecessor's ports and ZMQ releases a closed socket's port asynchronously.
 */
async function bindContiguous<S extends Socket>(make: () => S, host: string, base: number, count: number): Promise<S[]> {
  for (let attempt = 0; ; attempt++) {
    const sockets: S[] = [];
    try {
      const first = make();
      sockets.push(first);
      await first.bind(`tcp://${host}:${base === 0 ? '*' : base}`);
      const port = Number(/:(\d+)$/.exec(first.lastEndpoint ?? '')![1]);
      for (let i = 1; i < count; i++) {
        const s = make();
        sockets.push(s);
        await s.bind(`tcp://${host}:${port + i}`);
      }
      return sockets;
    } catch (err) {
      for (const s of sockets) s.close();
      if (attempt + 1 >= PORT_ATTEMPTS) throw err;
      if (base !== 0) await new Promise((resolve) => setTimeout(resolve, REBIND_RETRY_MS));
    }
  }
}
