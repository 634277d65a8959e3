// Fan-out at scale (#30 item 4): 1 000 subscribers over 100 pools, each on a connection of its own,
// against a bare grpc-js server writing the same FilterUpdate bytes to the same streams, same run.
// The server side runs in a process of its own (support/fanout-host.ts), so its CPU time (all
// threads) and memory are the server's alone; this process holds the subscribers, reading the
// streams as cheaply as it can (support/raw-subscribers.ts). A closed loop per pool: at most WINDOW
// deltas of a pool not yet received by all its subscribers.
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
const WARMUP_MS = 1000;
const MEASURE_MS = 2500;
/** Rounds of a bare run then a relay run (the host is shared). */
const ROUNDS = 5;
/** Subscriptions opened at once while connecting. */
const CONNECT_BATCH = 100;

type Mode = 'relay' | 'bare';

interface Memory {
  rss: number;
  heapUsed: number;
  external: number;
}

interface Measurement {
  framesPerSecond: number;
  deltasPerSecond: number;
  /** Server process CPU (user + system, all threads) per 1 000 frames delivered. */
  serverCpuMsPerKFrames: number;
  /** Server CPU over the measurement, as a share of one core. */
  serverCpuShare: number;
  /** This process's (the subscribers') CPU over the measurement, as a share of one core. */
  clientCpuShare: number;
  /** Memory growth from one subscriber per pool to all of them, per added subscriber. */
  perSubscriber: Memory;
  /** Memory growth from no subscriber to one per pool (hubs, snapshots), per pool. */
  perPool: Memory;
}

class Host {
  private readonly child: ChildProcess;
  private readonly waiting = new Map<string, (value: unknown) => void>();
  private readonly exited: Promise<void>;

  constructor(mode: Mode) {
    this.child = fork(path.join(__dirname, 'support', 'fanout-host.js'), [mode, String(POOLS), String(BUCKETS), String(SUBSCRIBERS)], {
      execArgv: ['--expose-gc', ...RELAY_NODE_ARGS],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    killWithThisProcess(this.child);
    this.exited = new Promise((resolve) => this.child.once('exit', () => resolve()));
    this.child.on('message', (message: Record<string, unknown>) => {
      for (const [key, value] of Object.entries(message)) {
        this.waiting.get(key)?.(value);
        this.waiting.delete(key);
      }
    });
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** The next message carrying `key`. */
  reply<T>(key: string): Promise<T> {
    return new Promise((resolve, reject) => {
      this.waiting.set(key, resolve as (value: unknown) => void);
      this.child.once('exit', (code) => reject(new Error(`fanout host exited (${code}) waiting for ${key}`)));
    });
  }

  send(message: object): void {
    this.child.send(message);
  }

  async memory(): Promise<Memory> {
    const reply = this.reply<Memory>('memory');
    this.send({ cmd: 'memory' });
    return reply;
  }

  async stop(): Promise<void> {
    this.child.kill('SIGTERM');
    await this.exited;
  }
}

function memoryGrowth(before: Memory, after: Memory, count: number): Memory {
  return {
    rss: (after.rss - before.rss) / count,
    heapUsed: (after.heapUsed - before.heapUsed) / count,
    external: (after.external - before.external) / count,
  };
}

async function runOnce(mode: Mode): Promise<Measurement> {
  const host = new Host(mode);
  const address = await host.reply<string>('address');
  const subscribers: RawSubscriber[][] = Array.from({ length: POOLS }, () => []);
  const acked = new Array<number>(POOLS).fill(0);
  const dirty = new Set<number>();
  let frames = 0;
  let flushing = false;
  // Acks leave once per turn of this loop: every pool whose deltas all its subscribers now hold.
  const flush = (): void => {
    flushing = false;
    const acks: number[] = [];
    for (const p of dirty) acks.push(p, acked[p]);
    dirty.clear();
    if (acks.length > 0) host.send({ acks });
  };
  const onMessages = (pool: number) => (n: number): void => {
    frames += n;
    let delivered = Infinity;
    for (const s of subscribers[pool]) delivered = Math.min(delivered, s.received - 1); // the snapshot first
    if (subscribers[pool].length < SUBSCRIBERS_PER_POOL || delivered <= acked[pool]) return;
    acked[pool] = delivered;
    dirty.add(pool);
    if (!flushing) {
      flushing = true;
      setImmediate(flush);
    }
  };
  const open = async (pools: number[]): Promise<void> => {
    for (let i = 0; i < pools.length; i += CONNECT_BATCH) {
      const batch = pools.slice(i, i + CONNECT_BATCH);
      const opened = await Promise.all(
        batch.map((p) => subscribeRaw(address, `bench-${p}-${subscribers[p].length}`, fanoutProducer(p, BUCKETS), onMessages(p))),
      );
      opened.forEach((s, j) => subscribers[batch[j]].push(s));
    }
  };
  try {
    const pools = Array.from({ length: POOLS }, (_, p) => p);
    const empty = await host.memory();
    await open(pools);
    const onePerPool = await host.memory();
    await open(Array.from({ length: SUBSCRIBERS - POOLS }, (_, i) => i % POOLS));
    const all = await host.memory();

    host.send({ cmd: 'start', window: WINDOW });
    await new Promise((resolve) => setTimeout(resolve, WARMUP_MS));
    const framesBefore = frames;
    const deltasBefore = acked.reduce((a, b) => a + b, 0);
    const serverBefore = processCpuMs(host.pid)!;
    const clientBefore = process.cpuUsage();
    const start = performance.now();
    await new Promise((resolve) => setTimeout(resolve, MEASURE_MS));
    const elapsedMs = performance.now() - start;
    const serverMs = processCpuMs(host.pid)! - serverBefore;
    const client = process.cpuUsage(clientBefore);
    const delivered = frames - framesBefore;
    const deltas = acked.reduce((a, b) => a + b, 0) - deltasBefore;
    const stopped = host.reply<number>('stopped');
    host.send({ cmd: 'stop' });
    await stopped;
    const ended = subscribers.flat().find((s) => s.ended !== undefined);
    if (ended) throw new Error(`${mode}: a subscriber's stream ended during the run: ${ended.ended}`);
    return {
      framesPerSecond: (delivered * 1000) / elapsedMs,
      deltasPerSecond: (deltas * 1000) / elapsedMs,
      serverCpuMsPerKFrames: serverMs / (delivered / 1000),
      serverCpuShare: serverMs / elapsedMs,
      clientCpuShare: (client.user + client.system) / 1000 / elapsedMs,
      perSubscriber: memoryGrowth(onePerPool, all, SUBSCRIBERS - POOLS),
      perPool: memoryGrowth(empty, onePerPool, POOLS),
    };
  } finally {
    for (const s of subscribers.flat()) s.close();
    await host.stop();
  }
}

const kib = (bytes: number): number => round(bytes / 1024, 2);

export async function run(): Promise<BenchResult[]> {
  const runs: Record<Mode, Measurement[]> = { relay: [], bare: [] };
  for (let r = 0; r < ROUNDS; r += 1) {
    for (const mode of ['bare', 'relay'] as const) runs[mode].push(await runOnce(mode));
  }
  const med = (mode: Mode, pick: (m: Measurement) => number): number => median(runs[mode].map(pick));
  // Ratios are taken within each round (a relay run and the bare run just before it), then their
  // median: a slow spell of the shared machine then moves both sides of one ratio.
  const pairedRatio = (pick: (m: Measurement) => number): number => median(runs.relay.map((m, i) => pick(m) / pick(runs.bare[i])));
  const shares = (mode: Mode): string =>
    `${mode}: server ${round(med(mode, (m) => m.serverCpuShare) * 100, 0)} % of a core, subscribers ${round(med(mode, (m) => m.clientCpuShare) * 100, 0)} %`;
  const note = `${POOLS} pools × ${SUBSCRIBERS_PER_POOL} subscribers, a connection each, ${WINDOW} deltas of ${FANOUT_IMAGES} images in flight per pool; medians of ${ROUNDS} rounds, ratio = median of the rounds' ratios; ${shares('relay')}; ${shares('bare')}`;
  const heap = (mode: Mode): number => kib(med(mode, (m) => m.perSubscriber.heapUsed));
  return [
    {
      name: `fan-out to ${SUBSCRIBERS} subscribers over ${POOLS} pools: frames/s delivered`,
      value: round(med('relay', (m) => m.framesPerSecond), 0),
      unit: 'frames/s',
      baseline: { name: 'bare grpc-js server, same bytes, same streams', value: round(med('bare', (m) => m.framesPerSecond), 0) },
      ratio: round(pairedRatio((m) => m.framesPerSecond), 3),
      note: `${note}; deltas/s to all their subscribers: relay ${round(med('relay', (m) => m.deltasPerSecond), 0)}, bare ${round(med('bare', (m) => m.deltasPerSecond), 0)}; target ratio >= 0.9 (#30)`,
    },
    {
      name: `fan-out to ${SUBSCRIBERS} subscribers: server process CPU per 1 000 frames delivered`,
      value: round(med('relay', (m) => m.serverCpuMsPerKFrames), 3),
      unit: 'ms',
      baseline: { name: 'bare grpc-js server', value: round(med('bare', (m) => m.serverCpuMsPerKFrames), 3) },
      ratio: round(pairedRatio((m) => m.serverCpuMsPerKFrames), 3),
      note: `user + system, all threads (/proc); per round: ${runs.relay.map((m, i) => round(m.serverCpuMsPerKFrames / runs.bare[i].serverCpuMsPerKFrames, 3)).join(', ')}`,
    },
    {
      name: `fan-out to ${SUBSCRIBERS} subscribers: server memory per subscriber (RSS, idle)`,
      value: kib(med('relay', (m) => m.perSubscriber.rss)),
      unit: 'KiB',
      baseline: { name: 'bare grpc-js server', value: kib(med('bare', (m) => m.perSubscriber.rss)) },
      ratio: round(pairedRatio((m) => m.perSubscriber.rss), 3),
      note:
        `growth from 1 to ${SUBSCRIBERS_PER_POOL} subscribers per pool, after full GCs; of it V8 heap: relay ${heap('relay')} KiB, bare ${heap('bare')} KiB; ` +
        `per pool (hub, ${BUCKETS}-bucket snapshot): relay ${kib(med('relay', (m) => m.perPool.rss))} KiB RSS, bare ${kib(med('bare', (m) => m.perPool.rss))} KiB`,
    },
  ];
}
