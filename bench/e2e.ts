// End to end: simulated vLLM engines publish KV events over ZMQ; the relay (started as `serve`
// starts it) decodes them, hashes the tokens, updates the pool's filter and publishes deltas to a
// gRPC subscriber of the pool stream. Measures events/s with 1 and 8 sources (block size 16) and the
// event→delta latency: each event is stamped when sent and matched to the first delta whose bucket
// images carry its fingerprint in one of its two candidate buckets. Baseline, same run and same
// frames from the same publishers: a bare ZMQ SUB per source (no relay), matched by sequence.
//
// Throughput comes from a closed loop (at most WINDOW events in flight), latency also from a paced
// run at a fixed rate. Everything runs in this one process, relay included, so the numbers are for
// one event loop shared with the publishers and the consumer.
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { performance } from 'perf_hooks';
import { Subscriber } from 'zeromq';
import { startRelay } from '../src/cli/serve';
import { INGEST_RECEIVE_HWM } from '../src/config/defaults';
import { silentLogger } from '../src/log';
import { bucketContains, ckfPrepare, decodeFrame, saltSeed, sequenceHashes, snapshotChunkCount, type DecodedDelta } from '../src/native';
import { encodeBatch, SimulatedEngine } from '../src/sim';
import { RELAY_CONTRACT_MARKER } from '../src/wire/constants';
import { FilterUpdateKind } from '../src/wire/enums';
import { makeClient } from '../src/wire/service';
import type { FilterUpdate } from '../src/wire/types';
import type { BenchResult } from './support/result';
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

interface Measurement {
  eventsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
}

/** The frames every run sends: per source, one encoded batch per event, and its last block's hash. */
interface Workload {
  payloads: Buffer[][];
  lastHashes: bigint[][];
}

function buildWorkload(sources: number): Workload {
  const perSource = EVENTS / sources;
  const tokensPerEvent = BLOCKS_PER_EVENT * BLOCK_SIZE;
  const payloads: Buffer[][] = [];
  const lastHashes: bigint[][] = [];
  const seed = saltSeed(null, null);
  for (let s = 0; s < sources; s++) {
    payloads.push([]);
    lastHashes.push([]);
    for (let i = 0; i < perSource; i++) {
      // Distinct tokens per (source, event): every block is new to the pool.
      const first = 1 + (s * perSource + i) * tokensPerEvent;
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

async function throughRelay(workload: Workload, admission: Admission, perSource: number): Promise<Measurement> {
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
  const relay = await startRelay({ configFile, logger: silentLogger });
  const client = makeClient(relay.address, { channelOptions: { 'grpc.max_receive_message_length': 8 << 20 } });
  try {
    await Promise.all(engines.map((e) => e.waitForSubscribers()));
    const producer = relay.producer.catalog().snapshot.pools[0].producer!;
    const format = { seed: producer.ckfFormat!.seed, bucketCount: Number(producer.ckfFormat!.bucketCount) };

    // Events waiting for a delta, by candidate bucket: [source, index, fingerprint] triples.
    const pending = new Map<number, number[]>();
    const loop = new LoadLoop(sources, perSource, admission, (s, i) => {
      const p = ckfPrepare(workload.lastHashes[s][i], format.bucketCount, format.seed);
      for (const bucket of p.bucketA === p.bucketB ? [p.bucketA] : [p.bucketA, p.bucketB]) {
        const list = pending.get(bucket);
        if (list) list.push(s, i, p.fingerprint);
        else pending.set(bucket, [s, i, p.fingerprint]);
      }
      void engines[s].publishPayload(workload.payloads[s][i]);
    });

    /** Completes every pending event whose fingerprint a delta image shows in a candidate bucket. */
    const absorb = (delta: DecodedDelta): void => {
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
        loop.fail(err);
      });
      call.on('data', (update: FilterUpdate) => {
        if (update.kind === FilterUpdateKind.SNAPSHOT_CHUNK && ++received === chunks) resolve();
        if (update.kind === FilterUpdateKind.DELTA) absorb(decodeFrame(format, update.payload) as DecodedDelta);
      });
    });
    await snapshotDone;
    const result = await loop.run();
    call.cancel();
    return result;
  } finally {
    client.close();
    await relay.shutdown();
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
    const loop = new LoadLoop(sources, perSource, admission, (s, i) => void engines[s].publishPayload(workload.payloads[s][i]));
    const receivers = subs.map(async (sub, s) => {
      try {
        for await (const [, seq] of sub) loop.complete(s, Number(seq.readBigUInt64BE(0)));
      } catch {
        // closed
      }
    });
    const result = await loop.run();
    for (const sub of subs) sub.close();
    await Promise.all(receivers);
    return result;
  } finally {
    for (const sub of subs) if (!sub.closed) sub.close();
    await Promise.all(engines.map((e) => e.stop()));
  }
}

function medianOf(runs: Measurement[]): Measurement {
  return {
    eventsPerSecond: median(runs.map((m) => m.eventsPerSecond)),
    p50Ms: median(runs.map((m) => m.p50Ms)),
    p99Ms: median(runs.map((m) => m.p99Ms)),
  };
}

export async function run(): Promise<BenchResult[]> {
  const results: BenchResult[] = [];
  for (const sources of SOURCES) {
    const workload = buildWorkload(sources);
    const closed: Admission = { window: WINDOW };
    const paced: Admission = { ratePerSecond: PACED_RATE };
    const pacedPerSource = (PACED_RATE * PACED_MS) / 1000 / sources;
    const runs = { relay: [] as Measurement[], bare: [] as Measurement[], relayPaced: [] as Measurement[], barePaced: [] as Measurement[] };
    for (let r = 0; r < ROUNDS; r++) {
      runs.relay.push(await throughRelay(workload, closed, EVENTS / sources));
      runs.bare.push(await throughBareZmq(workload, closed, EVENTS / sources));
      runs.relayPaced.push(await throughRelay(workload, paced, pacedPerSource));
      runs.barePaced.push(await throughBareZmq(workload, paced, pacedPerSource));
    }
    const relay = medianOf(runs.relay);
    const bare = medianOf(runs.bare);
    const relayPaced = medianOf(runs.relayPaced);
    const barePaced = medianOf(runs.barePaced);
    const label = `${sources} source${sources === 1 ? '' : 's'}`;
    results.push({
      name: `events/s, ${label}, block size ${BLOCK_SIZE}`,
      value: round(relay.eventsPerSecond, 0),
      unit: 'events/s',
      baseline: { name: 'bare ZMQ PUB→SUB, same frames', value: round(bare.eventsPerSecond, 0) },
      ratio: round(relay.eventsPerSecond / bare.eventsPerSecond),
      note: `${BLOCKS_PER_EVENT} new blocks per event (${round((relay.eventsPerSecond * BLOCKS_PER_EVENT) / 1000, 1)}k blocks/s); closed loop, window ${WINDOW}; median of ${ROUNDS}`,
    });
    results.push({
      name: `p99 event→delta latency at saturation, ${label}`,
      value: round(relay.p99Ms),
      unit: 'ms',
      baseline: { name: 'bare ZMQ p99 send→receive', value: round(bare.p99Ms) },
      ratio: round(relay.p99Ms / bare.p99Ms),
      note: `p50 ${round(relay.p50Ms)} ms (bare ${round(bare.p50Ms)} ms); closed loop, window ${WINDOW} (includes queueing)`,
    });
    results.push({
      name: `p99 event→delta latency at ${PACED_RATE} events/s, ${label}`,
      value: round(relayPaced.p99Ms),
      unit: 'ms',
      baseline: { name: 'bare ZMQ p99 send→receive', value: round(barePaced.p99Ms) },
      ratio: round(relayPaced.p99Ms / barePaced.p99Ms),
      note: `p50 ${round(relayPaced.p50Ms)} ms (bare ${round(barePaced.p50Ms)} ms); paced, ${PACED_MS / 1000} s; publication threshold 16, delay 1 ms`,
    });
  }
  return results;
}
