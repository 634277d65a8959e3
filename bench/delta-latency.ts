// Event→delta latency at half the relay's ingest rate (#8: p99 <= 5 ms). A `kv-dc-relay serve`
// process dials 1 and 8 ZMQ publishers sending realistic vLLM batches (16 events × 32 blocks, bs 16,
// 20 % removals). First its max rate is measured as in ingest-scale on fresh chains (a firehose of
// messages new to the pool, no subscriber; the blocks its pool applied); then a fresh relay process gets fresh messages paced at half that rate while a gRPC subscriber
// of the pool times each message from its send to the first delta whose bucket images show the
// message's marker block. The same again on a pool at equilibrium (ingest-scale's third workload: a
// pre-fill, then every store evicts as many of the source's oldest blocks), whose tables do not grow. Baseline, same run, same publishers and pace: the two bare hops the relay
// sits in (zeromq.js SUB → grpc-js stream in a process of its own, one frame per message carrying
// the relay's delta bytes per message), timed the same way.
//
// The bench's subscriber shares the 2 cores with the relay, so it is kept as light as the bare hop's:
// both read raw response bytes and decode the FilterUpdate envelope alike; the relay's subscriber
// then only scans each delta's bucket indices (CBI1 §3.4, 12-byte images) against a bitmap of the
// markers' candidate buckets and tests a fingerprint on a hit. It validates nothing (no checksum,
// no snapshot assembly: the relay's tests do that); decoding every image into arrays in JavaScript
// made the subscriber the slowest hop at half rate, its queue filled, and pacing turned that into
// a standing ~0.5-1.4 s delay of its own making.
import { execFileSync, spawn, type ChildProcess } from 'child_process';
import * as os from 'os';
import * as grpc from '@grpc/grpc-js';
import * as path from 'path';
import type { Publisher } from 'zeromq';
import { bucketContains, CBI1, ckfPrepare, snapshotChunkCount } from '../src/native';
import { encodeSequence } from '../src/ingest/frames';
import { DEFAULT_CLIENT_FLOW_CONTROL_WINDOW_BYTES, DEFAULT_TIMING } from '../src/config/defaults';
import { RELAY_CONTRACT_MARKER } from '../src/wire/constants';
import { decodeMessage } from '../src/wire/codec';
import { FilterUpdateKind } from '../src/wire/enums';
import type { KvEventRelayClient } from '../src/wire/service';
import { testProducer } from '../test/support/test-source';
import type { BenchResult } from './support/result';
import { rawClients } from './support/bare-grpc';
import { BARE_HOP_ID_BYTES } from './support/bare-hop';
import { equilibriumIngestRate, equilibriumMix, FIREHOSE_MESSAGES, freshIngestRate, prefillBatches, publishers, relayConfig, relayIngestRate, sendPrefill, TOPIC, type Prefill } from './support/firehose';
import { catalogProducers, killWithThisProcess, metricSum, scrape, startRelayProcess, waitForLine } from './support/relay-process';
import { round } from './support/timing';
import { BLOCKS_PER_EVENT, BLOCKS_PER_MESSAGE, REMOVALS, vllmBatches, type VllmBatches } from './support/vllm-batches';

const SOURCES = [1, 8];
const MAX_RATE_WINDOW = { warmupMs: 1_000, measureMs: 2_000 };
/** Fresh messages are built before the run (~1 ms each): a shorter window. */
const FRESH_MAX_RATE_WINDOW = { warmupMs: 500, measureMs: 2_000 };
/** Blocks the pool holds in the equilibrium runs (as ingest-scale's). */
const EQUILIBRIUM_POOL_BLOCKS = Number(process.env.DELTA_LATENCY_POOL_BLOCKS ?? 4_194_304);
/** The paced run: messages before this are not timed (the relay's first turns, JIT). */
const PACED_WARMUP_MS = 1_000;
const PACED_MEASURE_MS = Number(process.env.DELTA_LATENCY_MS ?? 2_000);
/**
 * Blocks/s to pace at instead of half the measured max (A/B runs on a shared machine, where the
 * max measured by each run moves with the other load and so would the paced rate).
 */
const FIXED_BLOCKS_PER_S = process.env.DELTA_LATENCY_BLOCKS_PER_S ? Number(process.env.DELTA_LATENCY_BLOCKS_PER_S) : undefined;
const PACE_TICK_MS = 1;
/** Once sending stops, a timed message not arrived within this is lost (a batch the relay dropped). */
const DRAIN_MS = 5_000;
const PROBE_MS = 50;
/** How often the paced run samples the pool's publication slice (is pacing what delays the deltas?). */
const SLICE_SAMPLE_MS = 100;
/** Print each paced run's slice samples (ms since the timed window began, slice ms) to stderr. */
const TRACE_SLICE = process.env.DELTA_LATENCY_TRACE === '1';

/**
 * Where the processes run, one paced pair per entry: `shared` (every core for everyone, the
 * scheduler's choice), or `R/B`: the relay (and the bare hop in its place) on cpu R, this process
 * (the publishers and the subscriber) on cpu B. The bench's subscriber shares the machine with the
 * relay; pinned apart, a late subscriber is late for its own reasons, not the relay's threads'.
 * The max rate is measured shared, so every pinning is paced alike.
 */
const PINNINGS = (process.env.DELTA_LATENCY_PINNING ?? 'shared,0/1').split(',');
/**
 * The subscriber's HTTP/2 stream window in bytes (grpc-js's `grpc-node.flow_control_window`; unset:
 * the project's client's default, 4 MiB). The relay may not send more of a stream than this before the client acknowledges
 * it, so with a window smaller than a few deltas each delta waits for the subscriber's event loop
 * to turn (grpcio and tonic grow their windows by BDP probing; grpc-js does not).
 */
// The project's client's window by default (RelayClientOptions.flowControlWindowBytes); 65535 gives node's.
const CLIENT_WINDOW = process.env.DELTA_LATENCY_CLIENT_WINDOW ? Number(process.env.DELTA_LATENCY_CLIENT_WINDOW) : DEFAULT_CLIENT_FLOW_CONTROL_WINDOW_BYTES;
const CLIENT_OPTIONS = { 'grpc-node.flow_control_window': CLIENT_WINDOW };
const ALL_CPUS = `0-${os.availableParallelism() - 1}`;

interface Pinning {
  name: string;
  relayCpus: string;
  benchCpus: string;
}

function pinning(spec: string): Pinning {
  if (spec === 'shared') return { name: 'shared cores', relayCpus: ALL_CPUS, benchCpus: ALL_CPUS };
  const [relayCpus, benchCpus] = spec.split('/');
  if (!relayCpus || !benchCpus) throw new Error(`DELTA_LATENCY_PINNING: expected shared or RELAY/BENCH cpu lists, got ${spec}`);
  return { name: `relay on cpu ${relayCpus}, publishers and subscriber on cpu ${benchCpus}`, relayCpus, benchCpus };
}

/** Every thread of `pid` (threads it starts later inherit it) onto `cpus`. */
function pin(pid: number | undefined, cpus: string): void {
  if (pid !== undefined) execFileSync('taskset', ['-a', '-p', '-c', cpus, String(pid)], { stdio: 'ignore' });
}

/** The pool's publication slice over the timed window: its largest value and the share of samples above the configured delay. */
interface SliceSeen {
  maxMs: number;
  stretchedShare: number;
  samples: Array<[number, number]>;
}

function sliceSeen(samples: Array<[number, number]>): SliceSeen {
  const timed = samples.filter(([t]) => t >= 0);
  const stretched = timed.filter(([, ms]) => ms > DEFAULT_TIMING.publicationDelayMs).length;
  return { maxMs: Math.max(0, ...timed.map(([, ms]) => ms)), stretchedShare: timed.length === 0 ? 0 : stretched / timed.length, samples };
}

interface Latencies {
  /** Over the timed messages that arrived. */
  p50Ms: number;
  p99Ms: number;
  /** Timed messages that never arrived. */
  lost: number;
  maxMs: number;
  timed: number;
}

function percentiles(samples: number[]): Omit<Latencies, 'lost'> {
  const sorted = Float64Array.from(samples).sort();
  const at = (p: number): number => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
  return { p50Ms: at(0.5), p99Ms: at(0.99), maxMs: sorted[sorted.length - 1], timed: sorted.length };
}

/**
 * Sends the sources' messages 1.. round-robin at `ratePerSecond` over all publishers (message 0 of
 * each source is its probe, sent until `arrived` says so, before timing starts). Resolves with the
 * send→arrival time of each message sent after the warm-up, once all of them arrived.
 */
class PacedRun {
  private readonly sentAt: Float64Array[];
  private readonly arrivedAt: Float64Array[];
  /** Per publisher, its last send. */
  private readonly queues: Promise<unknown>[];
  private timedPending = 0;
  /** Sends so far, probes included. */
  messagesSent = 0;
  private sending = false;
  private drained: () => void = () => undefined;

  constructor(
    private readonly pubs: Publisher[],
    private readonly sources: VllmBatches[],
    private readonly ratePerSecond: number,
    /** Sequence of each source's message 0 (after a pre-fill's messages). */
    private readonly firstSequence = 0n,
    /** Called once, as the first timed message is sent (the warm-up ended). */
    private readonly onTimed: () => void = () => undefined,
  ) {
    this.sentAt = sources.map((s) => new Float64Array(s.payloads.length));
    this.arrivedAt = sources.map((s) => new Float64Array(s.payloads.length));
    this.queues = pubs.map(() => Promise.resolve());
  }

  /** A receiver saw message `index` of `source` (the first sight after its send counts). */
  arrived(source: number, index: number): void {
    // Not sent yet: a fingerprint collision in a bucket, not this message.
    if (this.sentAt[source][index] === 0 || this.arrivedAt[source][index] > 0) return;
    this.arrivedAt[source][index] = performance.now();
    if (this.sentAt[source][index] < 0 && --this.timedPending === 0 && !this.sending) this.drained();
  }

  async run(): Promise<Latencies> {
    await this.probe();
    const n = this.pubs.length;
    const total = this.sources[0].payloads.length - 1;
    const messages = Math.min(total * n, Math.floor((this.ratePerSecond * (PACED_WARMUP_MS + PACED_MEASURE_MS)) / 1000));
    const start = performance.now();
    let next = 0;
    let warmedUp = false;
    this.sending = true;
    await new Promise<void>((resolve) => {
      const timer = setInterval(() => {
        const due = Math.min(messages, Math.floor(((performance.now() - start) * this.ratePerSecond) / 1000) + 1);
        for (; next < due; next++) {
          const source = next % n;
          const index = 1 + Math.floor(next / n);
          const timed = performance.now() - start >= PACED_WARMUP_MS;
          if (timed && !warmedUp) {
            warmedUp = true;
            this.onTimed();
          }
          if (timed) this.timedPending++;
          this.send(source, index, timed);
        }
        if (next === messages) {
          clearInterval(timer);
          resolve();
        }
      }, PACE_TICK_MS);
    });
    this.sending = false;
    await Promise.all(this.queues);
    if (this.timedPending > 0) {
      await new Promise<void>((resolve, reject) => {
        const timeout = setTimeout(resolve, DRAIN_MS);
        this.drained = () => {
          clearTimeout(timeout);
          resolve();
        };
      });
    }
    const samples: number[] = [];
    this.sentAt.forEach((sent, s) => sent.forEach((t, i) => t < 0 && this.arrivedAt[s][i] > 0 && samples.push(this.arrivedAt[s][i] + t)));
    return { ...percentiles(samples), lost: this.timedPending };
  }

  /**
   * Sends when the socket's previous send completed (zeromq.js takes one at a time); the stamp is
   * taken then, so only the way through the receiver is timed. A negative stamp marks a timed
   * message (sent after the warm-up).
   */
  private send(source: number, index: number, timed: boolean): void {
    this.queues[source] = this.queues[source].then(() => {
      const now = performance.now();
      this.sentAt[source][index] = timed ? -now : now;
      this.messagesSent++;
      return this.pubs[source].send([TOPIC, encodeSequence(this.firstSequence + BigInt(index)), this.sources[source].payloads[index]]);
    });
  }

  /** Each source's message 0, repeated until it arrived: the receiver's SUB is connected. */
  private async probe(): Promise<void> {
    const waiting = (): number[] => this.pubs.flatMap((_, s) => (this.arrivedAt[s][0] > 0 ? [] : [s]));
    for (let left = waiting(); left.length > 0; left = waiting()) {
      for (const s of left) this.send(s, 0, false);
      await new Promise((r) => setTimeout(r, PROBE_MS));
    }
  }
}

const RELAY_SHARE = 'kv_dc_relay_pool_delta_latency_seconds';
const RELAY_STAGES = 'kv_dc_relay_pool_delta_stage_seconds';
const STAGES = ['handoff', 'pool'];
const GOAL_MS = 5;

/** Cumulative count per upper bound (seconds; Infinity for +Inf) of a histogram's series. */
type Buckets = Map<number, number>;

/** The relay's delta-latency histograms: the whole, then each stage. */
function shareBuckets(text: string): Buckets[] {
  const series = (name: string, labels: string): Buckets => {
    const buckets: Buckets = new Map();
    for (const m of text.matchAll(new RegExp(`^${name}_bucket\\{(.*)\\} (\\S+)$`, 'gm'))) {
      const le = /le="([^"]+)"/.exec(m[1])![1];
      if (m[1].replace(/,?le="[^"]+"/, '').replace(/^,/, '') !== labels) continue;
      buckets.set(le === '+Inf' ? Infinity : Number(le), Number(m[2]));
    }
    return buckets;
  };
  return [series(RELAY_SHARE, ''), ...STAGES.map((stage) => series(RELAY_STAGES, `stage="${stage}"`))];
}

/**
 * The relay's own share of event→delta (ingest receive → delta published) between two scrapes: the
 * bucket bound its p99 falls under, and the deltas within the goal. It leaves out the engine's
 * socket queue, the relay's SUB queue and the subscriber's side.
 */
function relayShare(before: Buckets[], after: Buckets[]): string {
  const p99 = (i: number): { bound: string; count: (le: number) => number; total: number } => {
    const count = (le: number): number => (after[i].get(le) ?? 0) - (before[i].get(le) ?? 0);
    const total = count(Infinity);
    const le = [...after[i].keys()].sort((a, b) => a - b).find((b) => count(b) >= 0.99 * total)!;
    return { bound: le === Infinity ? 'inf' : String(round(le * 1000)), count, total };
  };
  const whole = p99(0);
  if (whole.total === 0) return 'no delta observed';
  const withinGoal = whole.count(GOAL_MS / 1000) / whole.total;
  const stages = STAGES.map((stage, i) => `${stage} p99 <= ${p99(i + 1).bound} ms`).join(', ');
  return `p99 <= ${whole.bound} ms (${stages}), ${round(100 * withinGoal, 1)} % of ${whole.total} deltas within ${GOAL_MS} ms`;
}

/** CBI1 delta body (hashing-ckf-cbi1.md §3.4): base_epoch u64, image_count u32, then images of bucket u32 + word u64. */
const DELTA_COUNT_AT = CBI1.headerLen + 8;
const DELTA_IMAGES_AT = CBI1.headerLen + 12;
const DELTA_IMAGE_BYTES = 12;

/** Finds messages' markers in delta images: pending markers by candidate bucket. */
class MarkerMatcher {
  /** bucket → [source, index, fingerprint]* */
  private readonly pending = new Map<number, number[]>();
  /** 1 for a bucket some marker may sit in: most images are skipped on one byte. */
  private readonly marked: Uint8Array;

  constructor(
    format: { seed: bigint; bucketCount: number },
    sources: VllmBatches[],
    private readonly found: (source: number, index: number) => void,
  ) {
    this.marked = new Uint8Array(format.bucketCount);
    sources.forEach((s, source) =>
      s.markers.forEach((marker, index) => {
        const p = ckfPrepare(marker, format.bucketCount, format.seed);
        for (const bucket of p.bucketA === p.bucketB ? [p.bucketA] : [p.bucketA, p.bucketB]) {
          this.marked[bucket] = 1;
          const list = this.pending.get(bucket);
          if (list) list.push(source, index, p.fingerprint);
          else this.pending.set(bucket, [source, index, p.fingerprint]);
        }
      }),
    );
  }

  /** A CBI1 delta frame's images (unvalidated: the relay's tests check frames). */
  absorb(delta: Buffer): void {
    const end = DELTA_IMAGES_AT + delta.readUInt32LE(DELTA_COUNT_AT) * DELTA_IMAGE_BYTES;
    for (let at = DELTA_IMAGES_AT; at < end; at += DELTA_IMAGE_BYTES) {
      const bucket = delta.readUInt32LE(at);
      if (this.marked[bucket] === 0) continue;
      const list = this.pending.get(bucket)!;
      const word = delta.readBigUInt64LE(at + 4);
      for (let j = 0; j < list.length; j += 3) if (bucketContains(word, list[j + 2])) this.found(list[j], list[j + 1]);
    }
  }
}

/** The payload of a FilterUpdate's raw bytes, as a Buffer over the same memory. */
function payloadOf(update: { payload: Uint8Array }): Buffer {
  return Buffer.from(update.payload.buffer, update.payload.byteOffset, update.payload.length);
}

/**
 * Paced messages through a relay process to one SubscribeKvPool stream (after `prefill`, applied before
 * the subscriber joins); also its delta bytes per message.
 */
async function throughRelay(
  pubs: Publisher[],
  sources: VllmBatches[],
  ratePerSecond: number,
  where: Pinning,
  prefill?: Prefill,
): Promise<{ latency: Latencies; drops: string; deltaBytesPerMessage: number; slice: SliceSeen; share: string; loopMaxMs: number }> {
  const relay = await startRelayProcess(relayConfig([{ model: 'bench', endpoints: pubs.map((p) => p.lastEndpoint!) }]));
  pin(relay.pid, where.relayCpus);
  const client = rawClients(relay.address, 1, CLIENT_OPTIONS)[0];
  try {
    if (prefill) await sendPrefill(pubs, prefill, relay.metricsAddress);
    const producer = (await catalogProducers(relay.address, 1)).get('bench')!;
    const format = { seed: producer.ckfFormat!.seed, bucketCount: Number(producer.ckfFormat!.bucketCount) };
    // The relay's share and loop delay over the timed messages only, as the e2e latency.
    let before: Promise<Buckets[]> | undefined;
    let timedFrom = Infinity;
    const run = new PacedRun(pubs, sources, ratePerSecond, BigInt(prefill?.payloads[0].length ?? 0), () => {
      timedFrom = performance.now();
      before = scrape(relay.metricsAddress).then(shareBuckets);
    });
    const matcher = new MarkerMatcher(format, sources, (s, i) => run.arrived(s, i));
    const call = (client as unknown as KvEventRelayClient).subscribeKvPool({
      subscriberId: 'bench-delta-latency',
      contractMarker: RELAY_CONTRACT_MARKER,
      expectedProducer: producer,
    }) as unknown as grpc.ClientReadableStream<Buffer>;
    const chunks = snapshotChunkCount(format);
    let received = 0;
    let deltaBytes = 0;
    let failed: (err: Error) => void = () => undefined;
    const broken = new Promise<never>((_, reject) => (failed = reject));
    const snapshotDone = new Promise<void>((resolve) => {
      call.on('data', (bytes: Buffer) => {
        const update = decodeMessage('FilterUpdate', bytes);
        if (update.kind === FilterUpdateKind.SNAPSHOT_CHUNK && ++received === chunks) resolve();
        if (update.kind !== FilterUpdateKind.DELTA) return;
        deltaBytes += update.payload.length;
        matcher.absorb(payloadOf(update));
      });
    });
    call.on('error', (err) => failed(err));
    await Promise.race([snapshotDone, broken]);
    // [performance.now(), slice ms] per sample.
    const sliceSamples: Array<[number, number]> = [];
    // Each scrape starts a new event-loop window: the longest delay over those of the timed messages.
    let loopMaxMs = 0;
    const sampler = setInterval(() => {
      scrape(relay.metricsAddress).then((text) => {
        sliceSamples.push([performance.now(), metricSum(text, 'kv_dc_relay_pool_publication_slice_ms')]);
        if (before) loopMaxMs = Math.max(loopMaxMs, 1000 * metricSum(text, 'kv_dc_relay_event_loop_delay_seconds', 'quantile="1"'));
      }, () => undefined);
    }, SLICE_SAMPLE_MS);
    const latency = await Promise.race([run.run(), broken]).finally(() => clearInterval(sampler));
    const text = await scrape(relay.metricsAddress);
    const drops = ['ingest_gaps', 'ingest_overflows', 'pool_mailbox_overflows'].map((c) => `${c} ${metricSum(text, `kv_dc_relay_${c}_total`)}`).join(', ');
    call.on('error', () => undefined); // our own cancel
    call.cancel();
    const share = before ? relayShare(await before, shareBuckets(text)) : 'no timed message';
    return { latency, drops, deltaBytesPerMessage: deltaBytes / run.messagesSent, slice: sliceSeen(sliceSamples.map(([at, ms]) => [round(at - timedFrom, 0), ms])), share, loopMaxMs };
  } finally {
    client.close();
    await relay.stop();
  }
}

/** The same paced messages through the bare hops (bench/support/bare-hop.ts). */
async function throughBareHops(pubs: Publisher[], sources: VllmBatches[], ratePerSecond: number, frameBytes: number, where: Pinning): Promise<Latencies> {
  const child: ChildProcess = spawn(process.execPath, [path.join(__dirname, 'support', 'bare-hop.js'), String(Math.round(frameBytes)), ...pubs.map((p) => p.lastEndpoint!)], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  killWithThisProcess(child);
  pin(child.pid, where.relayCpus);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let client: grpc.Client | undefined;
  try {
    const address = await waitForLine(child, (l) => (l.startsWith('{"address"') ? (JSON.parse(l) as { address: string }).address : undefined));
    client = rawClients(address, 1, CLIENT_OPTIONS)[0];
    const run = new PacedRun(pubs, sources, ratePerSecond);
    const call = (client as unknown as KvEventRelayClient).subscribeKvPool({
      subscriberId: 'bench-bare-hop',
      contractMarker: RELAY_CONTRACT_MARKER,
      expectedProducer: testProducer(),
    }) as unknown as grpc.ClientReadableStream<Buffer>;
    call.on('data', (bytes: Buffer) => {
      const update = decodeMessage('FilterUpdate', bytes);
      if (update.payload.length < BARE_HOP_ID_BYTES) return;
      const payload = payloadOf(update);
      run.arrived(payload.readUInt32BE(0), Number(payload.readBigUInt64BE(4)));
    });
    call.on('error', () => undefined); // our own cancel
    const latency = await run.run();
    call.cancel();
    return latency;
  } finally {
    client?.close();
    child.kill('SIGTERM');
    await exited;
  }
}

interface Workload {
  /** What the rows' names and notes call it. */
  name: string;
  mix: keyof typeof REMOVALS;
  /** What the relay applies first, built once per source count for both relay processes. */
  prefill?(sources: number): Promise<Prefill>;
  /** The max rate the pool applied (blocks/s), measured as ingest-scale does. */
  max(pubs: Publisher[], bound: number, prefill?: Prefill): Promise<number>;
  /** The paced messages of each source. */
  messages(sources: number, perSource: number, prefill?: Prefill): VllmBatches[];
}

const maxOptions = { blocksPerEvent: BLOCKS_PER_EVENT, blocksPerMessage: BLOCKS_PER_MESSAGE };

const WORKLOADS: Workload[] = [
  {
    name: 'fresh chains',
    mix: 'growing',
    max: async (pubs, bound) => (await freshIngestRate(pubs, bound, FRESH_MAX_RATE_WINDOW, { ...maxOptions, seed: 0xf7e5 })).appliedBlocksPerSecond,
    messages: (n, perSource) => Array.from({ length: n }, (_, s) => vllmBatches(0xde17a + s, perSource)),
  },
  {
    name: `fresh chains on a pool at equilibrium (${round(EQUILIBRIUM_POOL_BLOCKS / 1e6, 2)} M blocks)`,
    mix: 'equilibrium',
    prefill: (n) => prefillBatches(n, EQUILIBRIUM_POOL_BLOCKS, BLOCKS_PER_MESSAGE, BLOCKS_PER_EVENT, 0xf111),
    max: async (pubs, bound, prefill) =>
      (await equilibriumIngestRate(pubs, bound, FRESH_MAX_RATE_WINDOW, { ...maxOptions, seed: 0xe9b1, prefill: prefill! })).appliedBlocksPerSecond,
    messages: (n, perSource, prefill) => Array.from({ length: n }, (_, s) => vllmBatches(0xde17a + s, perSource, equilibriumMix(s, prefill!.heldPerSource, 0))),
  },
];

export async function run(): Promise<BenchResult[]> {
  const results: BenchResult[] = [];
  for (const n of SOURCES) {
    const pubs = await publishers(n);
    try {
      const firehose = (): Buffer[][] => Array.from({ length: n }, (_, s) => vllmBatches(0x5eed + s, FIREHOSE_MESSAGES).payloads);
      // A repeating firehose's stores are of blocks already held, so its rate bounds the fresh ones
      // (the supply of fresh messages for their max) but is no rate for fresh messages.
      const bound = FIXED_BLOCKS_PER_S ? 0 : (await relayIngestRate(pubs, firehose(), MAX_RATE_WINDOW, { blocksPerEvent: BLOCKS_PER_EVENT })).appliedBlocksPerSecond;
      for (const workload of WORKLOADS) {
        // What the pool applied, not what ingest took: batches dropped on a full mailbox are no rate.
        const prefill = await workload.prefill?.(n);
        const max = FIXED_BLOCKS_PER_S ? 2 * FIXED_BLOCKS_PER_S : await workload.max(pubs, bound, prefill);
        const ratePerSecond = max / 2 / BLOCKS_PER_MESSAGE;
        // Fresh chains for every paced message (+ one probe per source), so each marker is new to the pool.
        const perSource = 1 + Math.ceil((ratePerSecond * (PACED_WARMUP_MS + PACED_MEASURE_MS)) / 1000 / n);
        const sources = workload.messages(n, perSource, prefill);
        for (const where of PINNINGS.map(pinning)) {
          pin(process.pid, where.benchCpus);
          try {
            const relay = await throughRelay(pubs, sources, ratePerSecond, where, prefill);
            const bare = await throughBareHops(pubs, sources, ratePerSecond, relay.deltaBytesPerMessage, where);
            if (TRACE_SLICE) console.error(`slice samples, ${n} source(s), ${workload.name}, ${where.name}: ${JSON.stringify(relay.slice.samples)}`);
            const note =
              `${FIXED_BLOCKS_PER_S ? 'DELTA_LATENCY_BLOCKS_PER_S: half of a max taken as' : 'half of the max'} ${round(max / 1e6, 2)} M blocks/s the pool applied in this run on ${workload.name} (${round(ratePerSecond, 0)} messages/s of 16 events × 32 blocks, bs 16, ${REMOVALS[workload.mix]}); ` +
              `relay p50 ${round(relay.latency.p50Ms)} ms, max ${round(relay.latency.maxMs)} ms over ${relay.latency.timed} messages, ` +
              `the relay's own share over the timed messages (ingest receive → delta published, ${RELAY_SHARE}) ${relay.share}, ` +
              `its event loop's longest delay ${round(relay.loopMaxMs)} ms, ` +
              `${relay.latency.lost} timed messages lost (relay over the whole run: ${relay.drops}); bare p50 ${round(bare.p50Ms)} ms (${bare.lost} lost), ` +
              `one frame per message of the relay's delta bytes per message (${Math.round(relay.deltaBytesPerMessage)} B); default publication (threshold ${DEFAULT_TIMING.publicationThreshold}, ` +
              `delay ${DEFAULT_TIMING.publicationDelayMs} ms); adaptive slice over the timed window, sampled every ${SLICE_SAMPLE_MS} ms: at most ${relay.slice.maxMs} ms, ` +
              `stretched in ${round(100 * relay.slice.stretchedShare, 0)} % of the samples; subscriber stream window ${CLIENT_WINDOW} B; goal p99 <= 10 ms (#30 item 3)`;
            for (const q of ['p99', 'p50'] as const) {
              const key = `${q}Ms` as const;
              results.push({
                name: `event→delta ${q} at ${FIXED_BLOCKS_PER_S ? `${round(FIXED_BLOCKS_PER_S / 1e6, 2)} M blocks/s` : 'half the max ingest rate'}, ${n} source(s), ${workload.name}, relay process → gRPC subscriber, ${where.name}`,
                value: round(relay.latency[key]),
                unit: 'ms',
                baseline: { name: 'bare zeromq.js SUB → grpc-js stream hop, same messages, pace and cores', value: round(bare[key]) },
                ratio: round(relay.latency[key] / bare[key]),
                ...(q === 'p99' ? { note } : {}),
              });
            }
          } finally {
            pin(process.pid, ALL_CPUS);
          }
        }
      }
    } finally {
      for (const p of pubs) p.close();
    }
  }
  return results;
}
