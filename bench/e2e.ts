// End to end: simulated vLLM engines publish KV events over ZMQ; the relay (started as `serve`
// starts it) decodes them, hashes the tokens, updates the pool's filter and publishes deltas to a
// gRPC subscriber of the pool stream. Measures events/s with 1 and 8 sources (block size 16) and the
// event→delta latency: each event is stamped when sent and matched to the first delta whose bucket
// images carry its fingerprint in one of its two candidate buckets. Baseline, same run and same
// frames from the same publishers: a bare ZMQ SUB per source (no relay), matched by sequence.
//
// Throughput comes from a closed loop (at most WINDOW events in flight), latency also from a paced
// run at a fixed rate. Publishers and consumer run in this process; the relay runs either here too
// (one event loop for everything) or as a `kv-dc-relay serve` process of its own.
import { spawn } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { performance } from 'perf_hooks';
import { Subscriber } from 'zeromq';
import { startRelay } from '../src/server';
import { INGEST_RECEIVE_HWM } from '../src/config/defaults';
import { silentLogger } from '../src/log';
import { bucketContains, ckfPrepare, decodeFrame, saltSeed, sequenceHashes, snapshotChunkCount, type DecodedDelta } from '../src/native';
import { encodeBatch, SimulatedEngine } from '../src/sim';
import { RELAY_CONTRACT_MARKER } from '../src/wire/constants';
import { FilterUpdateKind } from '../src/wire/enums';
import { makeClient, type KvEventRelayClient } from '../src/wire/service';
import type { FilterUpdate, KvPoolCatalogUpdate, ProducerIdentity } from '../src/wire/types';
import type { BenchResult } from './support/result';
import { processCpuMs } from './support/process';
import { median, round } from './support/timing';

const SOURCES = [1, 8];
const BLOCK_SIZE = 16;
/** Each event stores a fresh chain of this many blocks (one BlockStored per engine batch). */
const BLOCKS_PER_EVENT = 4;
/** Events per measurement, split evenly over the sources. */
const EVENTS = 16_000;
/**
 * Events sent and not yet seen by the receiver. At most WINDOW / 16 deltas are then in flight (16
 * events per delta at the default publication threshold), below the subscriber queue's 16 frames:
 * a larger window measures how fast the relay lags its subscriber, not its throughput.
 */
const WINDOW = 128;
/** Relay and bare runs alternate this many times per size; medians are reported (the host is shared). */
const ROUNDS = 3;
/** A measurement that completes nothing for this long has lost events: it fails. */
const STALL_MS = 5_000;
/** The paced latency run: events per second over all sources, for this long. */
const PACED_RATE = 2_000;
const PACED_MS = 1_000;
const PACE_TICK_MS = 2;
const EXPECTED_UNIQUE_BLOCKS = 1 << 20;
const ENGINE_BUFFER_STEPS = 1024;
/** Events through each relay and bare setup before measuring (a relay process starts cold). */
const WARMUP_EVENTS = 4_000;

interface Measurement {
  eventsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  /**
   * CPU time of the relay process per measured event (relay process mode on Linux): unlike events/s
   * and latency it hardly moves when other work shares the host's cores.
   */
  relayCpuUsPerEvent?: number;
}

/** The frames every run sends: per source, one encoded batch per event, and its last block's hash. */
interface Workload {
  payloads: Buffer[][];
  lastHashes: bigint[][];
}

/** `events` events over `sources` sources, with tokens from `firstToken` on. */
function buildWorkload(sources: number, events: number, firstToken: number): Workload {
  const perSource = events / sources;
  const tokensPerEvent = BLOCKS_PER_EVENT * BLOCK_SIZE;
  const payloads: Buffer[][] = [];
  const lastHashes: bigint[][] = [];
  const seed = saltSeed(null, null);
  for (let s = 0; s < sources; s++) {
    payloads.push([]);
    lastHashes.push([]);
    for (let i = 0; i < perSource; i++) {
      // Distinct tokens per (source, event): every block is new to the pool.
      const first = firstToken + (s * perSource + i) * tokensPerEvent;
      const tokens = Uint32Array.from({ length: tokensPerEvent }, (_, t) => first + t);
      const blockHashes = Array.from({ length: BLOCKS_PER_EVENT }, (_, b) => BigInt(first + b));
      payloads[s].push(
        encodeBatch(1.0, [{ type: 'BlockStored', blockHashes, parentBlockHash: null, tokenIds: tokens, blockSize: BLOCK_SIZE }], 0, { events: 'array' }),
      );
      const seq = sequenceHashes(tokens, BLOCK_SIZE, false, seed);
      lastHashes[s].push(seq[seq.length - 1]);
    }
  }
  return { payloads, lastHashes };
}

/**
 * How events are admitted: a closed loop keeps at most `window` in flight (throughput, and latency at
 * saturation); a paced loop sends at a fixed rate whatever the receiver does (latency under load).
 */
type Admission = { window: number } | { ratePerSecond: number };

/** Sends events round-robin over the sources as `admission` allows; complete() records each arrival. */
class LoadLoop {
  private readonly sentAt: Float64Array[];
  private readonly done: Uint8Array[];
  private readonly latencies: number[] = [];
  private next = 0;
  private completed = 0;
  private outstanding = 0;
  private pumpScheduled = false;
  private lastProgress = 0;
  private start = 0;
  private finish: (() => void) | undefined;
  private failure: Error | undefined;

  constructor(
    private readonly sources: number,
    private readonly perSource: number,
    private readonly admission: Admission,
    private readonly send: (source: number, index: number) => void,
  ) {
    this.sentAt = Array.from({ length: sources }, () => new Float64Array(perSource));
    this.done = Array.from({ length: sources }, () => new Uint8Array(perSource));
  }

  async run(): Promise<Measurement> {
    const total = this.sources * this.perSource;
    const finished = new Promise<void>((resolve) => (this.finish = resolve));
    this.start = performance.now();
    this.lastProgress = this.start;
    let stalled = false;
    const watchdog = setInterval(() => {
      if (performance.now() - this.lastProgress > STALL_MS) {
        stalled = true;
        this.finish?.();
      }
    }, 250);
    const pacer = 'ratePerSecond' in this.admission ? setInterval(() => this.pump(), PACE_TICK_MS) : undefined;
    this.pump();
    await finished;
    clearInterval(watchdog);
    clearInterval(pacer);
    if (this.failure) throw this.failure;
    if (stalled) throw new Error(`load loop stalled: ${this.completed} of ${total} events completed`);
    const elapsed = performance.now() - this.start;
    const sorted = Float64Array.from(this.latencies).sort();
    const at = (p: number): number => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
    return { eventsPerSecond: (total * 1000) / elapsed, p50Ms: at(0.5), p99Ms: at(0.99) };
  }

  /** The receiver broke: the run ends with this error. */
  fail(error: Error): void {
    this.failure ??= error;
    this.finish?.();
  }

  isPending(source: number, index: number): boolean {
    return index < this.perSource && this.sentAt[source][index] > 0 && this.done[source][index] === 0;
  }

  complete(source: number, index: number): void {
    if (!this.isPending(source, index)) return;
    const now = performance.now();
    this.done[source][index] = 1;
    this.latencies.push(now - this.sentAt[source][index]);
    this.lastProgress = now;
    this.completed += 1;
    this.outstanding -= 1;
    if (this.completed === this.sources * this.perSource) {
      this.finish?.();
    } else if ('window' in this.admission && !this.pumpScheduled) {
      // One refill per turn, after every completion the turn delivered.
      this.pumpScheduled = true;
      setImmediate(() => {
        this.pumpScheduled = false;
        this.pump();
      });
    }
  }

  private pump(): void {
    const total = this.sources * this.perSource;
    const a = this.admission;
    const limit = 'window' in a ? Infinity : Math.floor(((performance.now() - this.start) * a.ratePerSecond) / 1000) + 1;
    while (this.next < Math.min(total, limit) && ('window' in a ? this.outstanding < a.window : true)) {
      const source = this.next % this.sources;
      const index = Math.floor(this.next / this.sources);
      this.next += 1;
      this.outstanding += 1;
      this.sentAt[source][index] = performance.now();
      this.send(source, index);
    }
  }
}

async function startEngines(n: number, replay: boolean): Promise<SimulatedEngine[]> {
  return Promise.all(Array.from({ length: n }, () => new SimulatedEngine({ http: false, replay, bufferSteps: ENGINE_BUFFER_STEPS }).start()));
}

/** Where the relay runs: in this process, or as `kv-dc-relay serve` on its own (one more core). */
type RelayMode = 'in-process' | 'process';

interface RunningBenchRelay {
  address: string;
  producer: ProducerIdentity;
  /** CPU time (user + system) the relay process used so far; undefined in-process or without /proc. */
  cpuMs(): number | undefined;
  stop(): Promise<void>;
}

async function startBenchRelay(mode: RelayMode, configFile: string): Promise<RunningBenchRelay> {
  if (mode === 'in-process') {
    const relay = await startRelay({ configFile, logger: silentLogger });
    return {
      address: relay.address,
      producer: relay.producer.catalog().snapshot.pools[0].producer!,
      cpuMs: () => undefined,
      stop: () => relay.shutdown(),
    };
  }
  const child = spawn(process.execPath, [path.join(__dirname, '..', 'src', 'cli', 'main.js'), 'serve', '--config', configFile], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async (): Promise<void> => {
    if (child.exitCode === null) child.kill('SIGTERM');
    await exited;
  };
  try {
    const address = await new Promise<string>((resolve, reject) => {
      let stderr = '';
      child.stderr!.on('data', (b: Buffer) => {
        stderr += b.toString();
        const line = stderr.split('\n').find((l) => l.includes('"msg":"listening"'));
        if (line) resolve((JSON.parse(line) as { address: string }).address);
      });
      child.once('exit', (code) => reject(new Error(`relay exited ${code}: ${stderr}`)));
    });
    const client = makeClient(address);
    const catalog = client.watchKvPoolCatalog({ subscriberId: 'bench-e2e/catalog', contractMarker: RELAY_CONTRACT_MARKER });
    const first = await new Promise<KvPoolCatalogUpdate>((resolve, reject) => {
      catalog.once('data', resolve);
      catalog.once('error', reject);
    });
    catalog.on('error', () => undefined); // our own cancel
    catalog.cancel();
    client.close();
    return { address, producer: first.snapshot!.pools[0].producer!, cpuMs: () => processCpuMs(child.pid), stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

async function throughRelay(mode: RelayMode, warmup: Workload, workload: Workload, admission: Admission, perSource: number): Promise<Measurement> {
  const sources = workload.payloads.length;
  const engines = await startEngines(sources, true);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kvrelay-bench-e2e-'));
  const configFile = path.join(dir, 'relay.json');
  fs.writeFileSync(
    configFile,
    JSON.stringify({
      dcId: 'dc-bench',
      bind: '127.0.0.1:0',
      expectedUniqueBlocks: EXPECTED_UNIQUE_BLOCKS,
      endpoints: [
        {
          namespace: 'bench',
          component: 'backend',
          endpoint: 'generate',
          model: { name: 'bench', kvBlockSize: BLOCK_SIZE },
          workers: engines.map((e, i) => ({ id: i + 1, kvEvents: { endpoint: e.pubEndpoint, replayEndpoint: e.replayEndpoint } })),
        },
      ],
    }),
  );
  let relay: RunningBenchRelay | undefined;
  let client: KvEventRelayClient | undefined;
  try {
    relay = await startBenchRelay(mode, configFile);
    client = makeClient(relay.address, { channelOptions: { 'grpc.max_receive_message_length': 8 << 20 } });
    await Promise.all(engines.map((e) => e.waitForSubscribers()));
    const producer = relay.producer;
    const format = { seed: producer.ckfFormat!.seed, bucketCount: Number(producer.ckfFormat!.bucketCount) };

    // Events of the current loop waiting for a delta, by candidate bucket: [source, index, fingerprint].
    const pending = new Map<number, number[]>();
    let loop: LoadLoop | undefined;
    const startLoop = (w: Workload, a: Admission, n: number): LoadLoop => {
      pending.clear();
      loop = new LoadLoop(sources, n, a, (s, i) => {
        const p = ckfPrepare(w.lastHashes[s][i], format.bucketCount, format.seed);
        for (const bucket of p.bucketA === p.bucketB ? [p.bucketA] : [p.bucketA, p.bucketB]) {
          const list = pending.get(bucket);
          if (list) list.push(s, i, p.fingerprint);
          else pending.set(bucket, [s, i, p.fingerprint]);
        }
        void engines[s].publishPayload(w.payloads[s][i]);
      });
      return loop;
    };

    /** Completes every pending event whose fingerprint a delta image shows in a candidate bucket. */
    const absorb = (delta: DecodedDelta): void => {
      if (!loop) return;
      for (let k = 0; k < delta.buckets.length; k++) {
        const list = pending.get(delta.buckets[k]);
        if (!list) continue;
        const word = delta.values[k];
        const left: number[] = [];
        for (let j = 0; j < list.length; j += 3) {
          const [s, i, fp] = [list[j], list[j + 1], list[j + 2]];
          if (!loop.isPending(s, i)) continue; // matched through its other bucket
          if (bucketContains(word, fp)) loop.complete(s, i);
          else left.push(s, i, fp);
        }
        if (left.length > 0) pending.set(delta.buckets[k], left);
        else pending.delete(delta.buckets[k]);
      }
    };

    const call = client.subscribeKvPool({ subscriberId: 'bench-e2e', contractMarker: RELAY_CONTRACT_MARKER, expectedProducer: producer });
    const chunks = snapshotChunkCount(format);
    let received = 0;
    const snapshotDone = new Promise<void>((resolve, reject) => {
      // Any stream error before our own cancel at the end breaks the measurement.
      call.on('error', (err) => {
        reject(err);
        loop?.fail(err);
      });
      call.on('data', (update: FilterUpdate) => {
        if (update.kind === FilterUpdateKind.SNAPSHOT_CHUNK && ++received === chunks) resolve();
        if (update.kind === FilterUpdateKind.DELTA) absorb(decodeFrame(format, update.payload) as DecodedDelta);
      });
    });
    await snapshotDone;
    await startLoop(warmup, { window: WINDOW }, WARMUP_EVENTS / sources).run();
    const cpuBefore = relay.cpuMs();
    const result = await startLoop(workload, admission, perSource).run();
    const cpuAfter = relay.cpuMs();
    if (cpuBefore !== undefined && cpuAfter !== undefined) {
      result.relayCpuUsPerEvent = ((cpuAfter - cpuBefore) * 1000) / (perSource * sources);
    }
    call.cancel();
    return result;
  } finally {
    client?.close();
    await relay?.stop();
    await Promise.all(engines.map((e) => e.stop()));
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function throughBareZmq(workload: Workload, admission: Admission, perSource: number): Promise<Measurement> {
  const sources = workload.payloads.length;
  const engines = await startEngines(sources, false);
  const subs = engines.map((e) => {
    const sub = new Subscriber({ linger: 0, receiveHighWaterMark: INGEST_RECEIVE_HWM });
    sub.subscribe('');
    sub.connect(e.pubEndpoint);
    return sub;
  });
  try {
    await Promise.all(engines.map((e) => e.waitForSubscribers()));
    // Sequences continue across loops: each loop's event i of a source is sequence first + i.
    let first = 0;
    let loop: LoadLoop | undefined;
    const receivers = subs.map(async (sub, s) => {
      try {
        for await (const [, seq] of sub) loop?.complete(s, Number(seq.readBigUInt64BE(0)) - first);
      } catch {
        // closed
      }
    });
    const startLoop = (a: Admission, n: number): LoadLoop => {
      first = Number(engines[0].nextSequence());
      loop = new LoadLoop(sources, n, a, (s, i) => void engines[s].publishPayload(workload.payloads[s][i]));
      return loop;
    };
    await startLoop({ window: WINDOW }, Math.min(WARMUP_EVENTS / sources, workload.payloads[0].length)).run();
    const result = await startLoop(admission, perSource).run();
    for (const sub of subs) sub.close();
    await Promise.all(receivers);
    return result;
  } finally {
    for (const sub of subs) if (!sub.closed) sub.close();
    await Promise.all(engines.map((e) => e.stop()));
  }
}

function medianOf(runs: Measurement[]): Measurement {
  const cpu = runs.flatMap((m) => (m.relayCpuUsPerEvent === undefined ? [] : [m.relayCpuUsPerEvent]));
  return {
    eventsPerSecond: median(runs.map((m) => m.eventsPerSecond)),
    p50Ms: median(runs.map((m) => m.p50Ms)),
    p99Ms: median(runs.map((m) => m.p99Ms)),
    relayCpuUsPerEvent: cpu.length > 0 ? median(cpu) : undefined,
  };
}

export async function run(): Promise<BenchResult[]> {
  const results: BenchResult[] = [];
  const modes: RelayMode[] = ['in-process', 'process'];
  for (const sources of SOURCES) {
    const workload = buildWorkload(sources, EVENTS, 1);
    const warmup = buildWorkload(sources, WARMUP_EVENTS, 1 + EVENTS * BLOCKS_PER_EVENT * BLOCK_SIZE);
    const closed: Admission = { window: WINDOW };
    const paced: Admission = { ratePerSecond: PACED_RATE };
    const closedPerSource = EVENTS / sources;
    const pacedPerSource = (PACED_RATE * PACED_MS) / 1000 / sources;
    const runs = new Map<string, Measurement[]>();
    const record = (key: string, m: Measurement): void => void runs.set(key, [...(runs.get(key) ?? []), m]);
    for (let r = 0; r < ROUNDS; r++) {
      for (const mode of modes) {
        record(`${mode}/closed`, await throughRelay(mode, warmup, workload, closed, closedPerSource));
        record(`${mode}/paced`, await throughRelay(mode, warmup, workload, paced, pacedPerSource));
      }
      record('bare/closed', await throughBareZmq(workload, closed, closedPerSource));
      record('bare/paced', await throughBareZmq(workload, paced, pacedPerSource));
    }
    const m = (key: string): Measurement => medianOf(runs.get(key)!);
    const bare = m('bare/closed');
    const barePaced = m('bare/paced');
    const label = `${sources} source${sources === 1 ? '' : 's'}`;
    for (const mode of modes) {
      const relay = m(`${mode}/closed`);
      const relayPaced = m(`${mode}/paced`);
      results.push({
        name: `events/s, ${label}, block size ${BLOCK_SIZE}, relay ${mode}`,
        value: round(relay.eventsPerSecond, 0),
        unit: 'events/s',
        baseline: { name: 'bare ZMQ PUB→SUB, same frames', value: round(bare.eventsPerSecond, 0) },
        ratio: round(relay.eventsPerSecond / bare.eventsPerSecond),
        note:
          `${BLOCKS_PER_EVENT} new blocks/event (${round((relay.eventsPerSecond * BLOCKS_PER_EVENT) / 1000, 1)}k blocks/s); closed loop, ` +
          `window ${WINDOW}: event→delta p50 ${round(relay.p50Ms)} ms, p99 ${round(relay.p99Ms)} ms (bare ${round(bare.p99Ms)} ms)` +
          (relay.relayCpuUsPerEvent === undefined ? '' : `; relay process CPU ${round(relay.relayCpuUsPerEvent, 1)} µs/event`) +
          `; median of ${ROUNDS}`,
      });
      results.push({
        name: `p99 event→delta latency at ${PACED_RATE} events/s, ${label}, relay ${mode}`,
        value: round(relayPaced.p99Ms),
        unit: 'ms',
        baseline: { name: 'bare ZMQ p99 send→receive', value: round(barePaced.p99Ms) },
        ratio: round(relayPaced.p99Ms / barePaced.p99Ms),
        note: `p50 ${round(relayPaced.p50Ms)} ms (bare ${round(barePaced.p50Ms)} ms); paced for ${PACED_MS / 1000} s; publication threshold 16, delay 1 ms`,
      });
    }
  }
  return results;
}
