// Fan-out at scale (#30 item 4): 1 000 subscribers over 100 pools, each on a connection of its own,
// against a bare grpc-js server writing the same FilterUpdate bytes to the same streams, same run.
// Each server runs in a process of its own (support/fanout-host.ts), so its CPU time (all threads)
// and memory are its own; this process holds both servers' subscribers, reading the streams as
// cheaply as it can (support/raw-subscribers.ts). A closed loop per pool: at most WINDOW deltas of a
// pool not yet received by all its subscribers.
// Both servers are up with all their subscribers for the whole run and take turns: one publishes
// for a window while the other is idle, WINDOWS times each. On a shared machine whose load moves
// by the second, short alternating windows put both sides of the ratio under the same load;
// separate runs of a few seconds each gave per-run CPU ratios anywhere from 0.86 to 1.63.
// Reported: frames delivered per second (sum over subscribers), server CPU per 1 000 frames, and
// server memory per subscriber (RSS growth from one subscriber per pool to all of them, idle).
import { fork, type ChildProcess } from 'child_process';
import * as path from 'path';
import { FANOUT_IMAGES, fanoutProducer } from './support/fanout-host';
import { processCpuMs } from './support/process';
import { subscribeRaw, type RawSubscriber } from './support/raw-subscribers';
import { killWithThisProcess, RELAY_NODE_ARGS } from './support/relay-process';
import type { BenchResult } from './support/result';
import { median, round } from './support/timing';

const POOLS = 100;
const SUBSCRIBERS_PER_POOL = 10;
const SUBSCRIBERS = POOLS * SUBSCRIBERS_PER_POOL;
const BUCKETS = 4096;
/** Deltas of one pool in flight (published, not yet received by all its subscribers). */
const WINDOW = 8;
/** Turns of each server, and how long each turn is measured after its warm-up. */
const WINDOWS = 10;
const WARMUP_MS = 300;
const MEASURE_MS = 1500;
/** A pause whose deltas are not all delivered within this is a failure, not a wait. */
const DRAIN_LIMIT_MS = 30_000;
/** Subscriptions opened at once while connecting. */
const CONNECT_BATCH = 100;

type Mode = 'relay' | 'bare';

interface Memory {
  rss: number;
  heapUsed: number;
  external: number;
}

/** One server process and its subscribers in this process. */
class Side {
  private readonly child: ChildProcess;
  private readonly waiting = new Map<string, { resolve: (value: unknown) => void; reject: (err: Error) => void }>();
  /** Replies that came before anyone waited for them (the address, while the other side set up). */
  private readonly arrived = new Map<string, unknown>();
  private readonly exited: Promise<void>;
  private readonly subscribers: RawSubscriber[][] = Array.from({ length: POOLS }, () => []);
  /** Deltas every subscriber of the pool received. */
  private readonly acked = new Array<number>(POOLS).fill(0);
  private readonly dirty = new Set<number>();
  private flushing = false;
  address = '';
  /** Messages received by every subscriber so far. */
  frames = 0;
  /** Totals over this side's measured windows. */
  measuredMs = 0;
  measuredFrames = 0;
  measuredDeltas = 0;
  measuredCpuMs = 0;
  measuredClientCpuMs = 0;
  /** Each window's frames per second and CPU ms per 1 000 frames. */
  readonly windows: Array<{ rate: number; cpu: number }> = [];
  perSubscriber: Memory | undefined;
  perPool: Memory | undefined;

  constructor(readonly mode: Mode) {
    this.child = fork(path.join(__dirname, 'support', 'fanout-host.js'), [mode, String(POOLS), String(BUCKETS), String(SUBSCRIBERS)], {
      execArgv: ['--expose-gc', ...RELAY_NODE_ARGS],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    killWithThisProcess(this.child);
    this.exited = new Promise((resolve) =>
      this.child.once('exit', (code) => {
        for (const [key, waiter] of this.waiting) waiter.reject(new Error(`${mode} fanout host exited (${code}) waiting for ${key}`));
        this.waiting.clear();
        resolve();
      }),
    );
    this.child.on('message', (message: Record<string, unknown>) => {
      for (const [key, value] of Object.entries(message)) {
        const waiter = this.waiting.get(key);
        this.waiting.delete(key);
        if (waiter) waiter.resolve(value);
        else this.arrived.set(key, value);
      }
    });
  }

  get deltas(): number {
    return this.acked.reduce((a, b) => a + b, 0);
  }

  /** The next message from the host carrying `key`. */
  private reply<T>(key: string): Promise<T> {
    if (this.arrived.has(key)) {
      const value = this.arrived.get(key) as T;
      this.arrived.delete(key);
      return Promise.resolve(value);
    }
    return new Promise((resolve, reject) => this.waiting.set(key, { resolve: resolve as (value: unknown) => void, reject }));
  }

  private async memory(): Promise<Memory> {
    const reply = this.reply<Memory>('memory');
    this.child.send({ cmd: 'memory' });
    return reply;
  }

  /** Listening, subscribers connected and live, memory measured on the way. */
  async setUp(): Promise<void> {
    this.address = await this.reply<string>('address');
    const empty = await this.memory();
    await this.open(Array.from({ length: POOLS }, (_, p) => p));
    const onePerPool = await this.memory();
    await this.open(Array.from({ length: SUBSCRIBERS - POOLS }, (_, i) => i % POOLS));
    const all = await this.memory();
    this.perSubscriber = growth(onePerPool, all, SUBSCRIBERS - POOLS);
    this.perPool = growth(empty, onePerPool, POOLS);
  }

  /** One turn: publish, measure after the warm-up, then pause and wait until every delta arrived. */
  async turn(): Promise<void> {
    this.child.send({ cmd: 'start', window: WINDOW });
    await sleep(WARMUP_MS);
    const frames = this.frames;
    const deltas = this.deltas;
    const cpu = processCpuMs(this.child.pid)!;
    const client = process.cpuUsage();
    const start = performance.now();
    await sleep(MEASURE_MS);
    const ms = performance.now() - start;
    const cpuMs = processCpuMs(this.child.pid)! - cpu;
    const used = process.cpuUsage(client);
    const measuredFrames = this.frames - frames;
    this.measuredMs += ms;
    this.measuredFrames += measuredFrames;
    this.measuredDeltas += this.deltas - deltas;
    this.measuredCpuMs += cpuMs;
    this.measuredClientCpuMs += (used.user + used.system) / 1000;
    this.windows.push({ rate: (measuredFrames * 1000) / ms, cpu: cpuMs / (measuredFrames / 1000) });
    const paused = this.reply<number[]>('paused');
    this.child.send({ cmd: 'pause' });
    const published = await paused;
    const deadline = performance.now() + DRAIN_LIMIT_MS;
    while (this.acked.some((a, p) => a < published[p])) {
      if (performance.now() > deadline) throw new Error(`${this.mode}: deltas still undelivered ${DRAIN_LIMIT_MS} ms after the pause`);
      await sleep(10);
    }
    const ended = this.subscribers.flat().find((s) => s.ended !== undefined);
    if (ended) throw new Error(`${this.mode}: a subscriber's stream ended during the run: ${ended.ended}`);
  }

  async close(): Promise<void> {
    for (const s of this.subscribers.flat()) s.close();
    this.child.kill('SIGTERM');
    await this.exited;
  }

  private async open(pools: number[]): Promise<void> {
    for (let i = 0; i < pools.length; i += CONNECT_BATCH) {
      const batch = pools.slice(i, i + CONNECT_BATCH);
      const opened = await Promise.all(
        batch.map((p) => subscribeRaw(this.address, `bench-${p}-${this.subscribers[p].length}`, fanoutProducer(p, BUCKETS), (n) => this.received(p, n))),
      );
      opened.forEach((s, j) => this.subscribers[batch[j]].push(s));
    }
  }

  // Acks leave once per turn of this loop: every pool whose deltas all its subscribers now hold.
  private received(pool: number, n: number): void {
    this.frames += n;
    const subscribers = this.subscribers[pool];
    if (subscribers.length < SUBSCRIBERS_PER_POOL) return;
    let delivered = Infinity;
    for (const s of subscribers) delivered = Math.min(delivered, s.received - 1); // the snapshot first
    if (delivered <= this.acked[pool]) return;
    this.acked[pool] = delivered;
    this.dirty.add(pool);
    if (this.flushing) return;
    this.flushing = true;
    setImmediate(() => {
      this.flushing = false;
      const acks: number[] = [];
      for (const p of this.dirty) acks.push(p, this.acked[p]);
      this.dirty.clear();
      this.child.send({ acks });
    });
  }
}

function growth(before: Memory, after: Memory, count: number): Memory {
  return {
    rss: (after.rss - before.rss) / count,
    heapUsed: (after.heapUsed - before.heapUsed) / count,
    external: (after.external - before.external) / count,
  };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

const kib = (bytes: number): number => round(bytes / 1024, 2);

export async function run(): Promise<BenchResult[]> {
  const bare = new Side('bare');
  const relay = new Side('relay');
  try {
    await bare.setUp();
    await relay.setUp();
    for (let w = 0; w < WINDOWS; w += 1) {
      for (const side of w % 2 === 0 ? [bare, relay] : [relay, bare]) await side.turn();
    }
  } finally {
    await Promise.all([bare.close(), relay.close()]);
  }
  const rate = (s: Side): number => (s.measuredFrames * 1000) / s.measuredMs;
  const cpu = (s: Side): number => s.measuredCpuMs / (s.measuredFrames / 1000);
  const share = (s: Side): string =>
    `${s.mode}: server ${round((s.measuredCpuMs / s.measuredMs) * 100, 0)} % of a core, subscribers ${round((s.measuredClientCpuMs / s.measuredMs) * 100, 0)} %`;
  const spread = (pick: (w: { rate: number; cpu: number }) => number): string => {
    const ratios = relay.windows.map((w, i) => pick(w) / pick(bare.windows[i]));
    return `windows' ratios: median ${round(median(ratios), 3)}, ${round(Math.min(...ratios), 3)}–${round(Math.max(...ratios), 3)}`;
  };
  const note =
    `${POOLS} pools × ${SUBSCRIBERS_PER_POOL} subscribers, a connection each, ${WINDOW} deltas of ${FANOUT_IMAGES} images in flight per pool; ` +
    `${WINDOWS} alternating ${MEASURE_MS} ms windows per server; ${share(relay)}; ${share(bare)}`;
  const perSubscriber = (s: Side): Memory => s.perSubscriber!;
  return [
    {
      name: `fan-out to ${SUBSCRIBERS} subscribers over ${POOLS} pools: frames/s delivered`,
      value: round(rate(relay), 0),
      unit: 'frames/s',
      baseline: { name: 'bare grpc-js server, same bytes, same streams', value: round(rate(bare), 0) },
      ratio: round(rate(relay) / rate(bare), 3),
      note: `${note}; ${spread((w) => w.rate)}; deltas/s to all their subscribers: relay ${round((relay.measuredDeltas * 1000) / relay.measuredMs, 0)}, bare ${round((bare.measuredDeltas * 1000) / bare.measuredMs, 0)}; target ratio >= 0.9 (#30)`,
    },
    {
      name: `fan-out to ${SUBSCRIBERS} subscribers: server process CPU per 1 000 frames delivered`,
      value: round(cpu(relay), 3),
      unit: 'ms',
      baseline: { name: 'bare grpc-js server', value: round(cpu(bare), 3) },
      ratio: round(cpu(relay) / cpu(bare), 3),
      note: `user + system, all threads (/proc); ${spread((w) => w.cpu)}`,
    },
    {
      name: `fan-out to ${SUBSCRIBERS} subscribers: server memory per subscriber (RSS, idle)`,
      value: kib(perSubscriber(relay).rss),
      unit: 'KiB',
      baseline: { name: 'bare grpc-js server', value: kib(perSubscriber(bare).rss) },
      ratio: round(perSubscriber(relay).rss / perSubscriber(bare).rss, 3),
      note:
        `growth from 1 to ${SUBSCRIBERS_PER_POOL} subscribers per pool, after full GCs; of it V8 heap: relay ${kib(perSubscriber(relay).heapUsed)} KiB, bare ${kib(perSubscriber(bare).heapUsed)} KiB; ` +
        `per pool (hub, ${BUCKETS}-bucket snapshot): relay ${kib(relay.perPool!.rss)} KiB RSS, bare ${kib(bare.perPool!.rss)} KiB`,
    },
  ];
}
