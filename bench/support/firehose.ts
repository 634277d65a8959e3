// ZMQ publishers standing in for engines, a firehose that sends their messages as fast as the sockets
// take them, and the rate a relay process it feeds takes them (#8's ingest-scale and small-message
// measures), against a bare zeromq.js SUB process reading the same publishers.
// PUB drops what a slow subscriber cannot take, so each side is measured by what it received.
import { spawn } from 'child_process';
import { setImmediate as nextTurn } from 'timers/promises';
import { Publisher } from 'zeromq';
import { encodeSequence } from '../../src/ingest/frames';
import { freshBatches } from './fresh-batches';
import { BLOCK_SIZE, type Mix } from './vllm-batches';
import { threadCpuDelta, threadCpuMs, threadWakeups, totalCpuMs, type ThreadCpuMs } from './process';
import { waitFor } from '../../test/support/waitFor';
import { metricSum, scrape, startRelayProcess, waitForLine } from './relay-process';
import { subscribePool, type PoolSubscribers } from './pool-subscribers';
import type { ProcessLaunch } from './alloc-window';
import type { RelayProcess } from './relay-process';

/** The model name of relayIngestRate's one pool. */
const BENCH_POOL = 'bench';

/**
 * As vLLM's publisher (engine-inputs.md): a fresh run's supply is sent at once, faster than the relay
 * takes it, and what does not fit the PUB's queue is dropped without a gap the relay could see.
 */
const SEND_HWM = 100_000;
const SETTLE_POLL_MS = 50;
const SETTLE_TIMEOUT_MS = 60_000;
/** After the relay's SUBs connected: time for the publishers to apply their subscriptions. */
const SUBSCRIPTION_SETTLE_MS = 200;
/** Sends between two yields of a firehose loop to the event loop. */
const YIELD_EVERY = 64n;
/** Distinct messages per source a firehose sends round-robin (hashes repeat; the relay's lineage absorbs it). */
export const FIREHOSE_MESSAGES = 256;
export const TOPIC = Buffer.from('kv');

/** A firehose message's frames: source `s`'s message `seq` with `payload`. */
export type FrameShape = (s: number, seq: bigint, payload: Buffer) => Buffer[];

/** vLLM's [topic, sequence, payload]. */
const vllmFrames: FrameShape = (_s, seq, payload) => [TOPIC, encodeSequence(seq), payload];

export async function publishers(n: number): Promise<Publisher[]> {
  return Promise.all(
    Array.from({ length: n }, async () => {
      const p = new Publisher({ sendHighWaterMark: SEND_HWM, linger: 0 });
      await p.bind('tcp://127.0.0.1:*');
      return p;
    }),
  );
}

/**
 * Publishers sending their sources' messages as fast as the sockets take them, until stopped: round
 * robin, or each message once (`repeat` false: fresh messages, see fresh-batches.ts).
 */
export class Firehose {
  private running = true;
  private readonly loops: Promise<void>[] = [];

  constructor(
    private readonly sockets: Publisher[],
    private readonly payloads: Buffer[][],
    private readonly repeat = true,
    /** Sequence of each source's first message (a firehose that continues another one). */
    private readonly firstSequence = 0n,
    private readonly frames: FrameShape = vllmFrames,
  ) {}

  start(): void {
    this.sockets.forEach((socket, s) => this.loops.push(this.loop(socket, s, this.payloads[s])));
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.sent();
  }

  /** Settles once each message was sent (never for a repeating firehose, until stopped). */
  async sent(): Promise<void> {
    await Promise.all(this.loops);
  }

  private async loop(socket: Publisher, s: number, payloads: Buffer[]): Promise<void> {
    for (let seq = 0n; this.running; seq++) {
      if (!this.repeat && seq === BigInt(payloads.length)) return;
      await socket.send(this.frames(s, this.firstSequence + seq, payloads[Number(seq % BigInt(payloads.length))]));
      // A send the socket takes at once resolves as a microtask: while a relay fast enough to keep
      // the PUB queue short reads, the bench's timers and scrapes would not run (20 s windows seen).
      if (seq % YIELD_EVERY === 0n) await nextTurn();
    }
  }
}

export interface PoolSpec {
  /** Model name, which identifies the pool in the catalog. */
  model: string;
  /** The KV event publishers of its workers, one worker each. */
  endpoints: string[];
}

/** A relay config with one pool per spec, each worker dialing its publisher. */
export function relayConfig(pools: PoolSpec[], extra: object = {}): object {
  let nextWorker = 1;
  return {
    dcId: 'dc-bench',
    bind: '127.0.0.1:0',
    metricsBind: '127.0.0.1:0',
    expectedUniqueBlocks: 1 << 22,
    ...extra,
    endpoints: pools.map((pool) => ({
      namespace: 'bench',
      component: pool.model,
      endpoint: 'generate',
      model: { name: pool.model, kvBlockSize: BLOCK_SIZE },
      workers: pool.endpoints.map((endpoint) => ({ id: nextWorker++, kvEvents: { endpoint } })),
    })),
  };
}

export interface FirehoseWindow {
  warmupMs: number;
  measureMs: number;
}

export interface IngestRate {
  /** Blocks the relay's ingest took (kv_dc_relay_ingest_blocks_total). */
  blocksPerSecond: number;
  /** Events it took (kv_dc_relay_ingest_events_total). */
  eventsPerSecond: number;
  /**
   * Blocks its pool applied: events applied × `blocksPerEvent` (every event of a firehose's batches
   * has as many). Below blocksPerSecond when batches were dropped on a full pool mailbox (their
   * sources reset).
   */
  appliedBlocksPerSecond: number;
  appliedEventsPerSecond: number;
  mailboxOverflows: number;
  /** Sequence gaps the relay saw: messages PUB dropped because the relay did not take them in time. */
  gaps: number;
  /** Blocks the pool held at the window's end (kv_dc_relay_pool_tracked_blocks). */
  trackedBlocks: number;
  /** Blocks ingest took from the relay's start to the window's end (a pre-fill's included). */
  ingestedBlocks: number;
  /** Mean payload bytes of the messages sent (first source). */
  bytesPerMessage: number;
  /** Relay CPU time (user + system) in the window; undefined without /proc. */
  cpuMs: number | undefined;
  /** The length of that window, s: the measured window up to the closing scrape, which is not in it. */
  cpuSeconds: number;
  /** The same by thread kind. */
  threadCpuMs: ThreadCpuMs | undefined;
  /** Its wake-ups in the window by thread kind (process.ts threadWakeups). */
  threadWakeups: ThreadCpuMs | undefined;
  cpuMsPerMBlocks: number | undefined;
  /** Deltas the `subscribers` received in the window, all together (0 without any). */
  subscriberDeltas: number;
}

export interface RelayIngestOptions {
  /** Extra top-level config of the relay (e.g. `limits`). */
  extra?: object;
  /** Blocks per event of the payloads (every event of a firehose's messages has as many). */
  blocksPerEvent: number;
  /** Send each message once (fresh messages) instead of round robin; default true. */
  repeat?: boolean;
  /** Messages per source sent first, all of them applied before the firehose starts (its sequences follow them). */
  prefill?: Prefill;
  /** What sends instead of a firehose (e.g. a PacedSender). */
  sender?: Sender;
  /** SubscribeKvPool subscribers on the pool, each with its snapshot before the sends start (default 0). */
  subscribers?: number;
  /**
   * Milliseconds between the opening scrape and the start of the CPU window (default 0): the relay
   * collects the scrape's garbage then, not inside the window. The rates still count from the scrape.
   */
  settleMs?: number;
  /** How the relay process is started (e.g. with a probe preloaded: alloc-window.ts). */
  launch?: ProcessLaunch;
  /** Called at the measured window's edges (after the settle, before the CPU is read at its end), and before the sends start. */
  window?: WindowHooks;
}

/** What a bench does in a measured process at the window's edges (e.g. counting its allocations). */
export interface WindowHooks {
  beforeSends?(pid: number | undefined): Promise<void>;
  opened(pid: number | undefined): Promise<void>;
  closing(pid: number | undefined): Promise<void>;
}

/** Sends the publishers' messages from start() until stop(). */
export interface Sender {
  start(): void;
  stop(): Promise<void>;
}

/** What a relay process takes from the publishers sending `payloads` as fast as they can. */
export async function relayIngestRate(pubs: Publisher[], payloads: Buffer[][], window: FirehoseWindow, options: RelayIngestOptions): Promise<IngestRate> {
  const relay: RelayProcess = await startRelayProcess(relayConfig([{ model: BENCH_POOL, endpoints: pubs.map((p) => p.lastEndpoint!) }], options.extra), options.launch);
  const firehose = options.sender ?? new Firehose(pubs, payloads, options.repeat ?? true, BigInt(options.prefill?.payloads[0].length ?? 0));
  const totals = async (): Promise<{ blocks: number; events: number; gaps: number; applied: number; overflows: number; tracked: number }> => {
    const text = await scrape(relay.metricsAddress).catch((err: Error) => {
      throw new Error(`scraping the relay failed (${err.message})\n${relay.lastLog()}`);
    });
    return {
      blocks: metricSum(text, 'kv_dc_relay_ingest_blocks_total'),
      events: metricSum(text, 'kv_dc_relay_ingest_events_total'),
      gaps: metricSum(text, 'kv_dc_relay_ingest_gaps_total'),
      applied: metricSum(text, 'kv_dc_relay_pool_events_applied_total'),
      overflows: metricSum(text, 'kv_dc_relay_pool_mailbox_overflows_total'),
      tracked: metricSum(text, 'kv_dc_relay_pool_tracked_blocks'),
    };
  };
  let subscribers: PoolSubscribers | undefined;
  try {
    if (options.subscribers) subscribers = await subscribePool(relay.address, BENCH_POOL, options.subscribers);
    if (options.prefill) await sendPrefill(pubs, options.prefill, relay.metricsAddress);
    await options.window?.beforeSends?.(relay.pid);
    firehose.start();
    await new Promise((r) => setTimeout(r, window.warmupMs));
    const before = await totals();
    const counted = performance.now();
    if (options.settleMs) await new Promise((r) => setTimeout(r, options.settleMs));
    await options.window?.opened(relay.pid);
    const cpu0 = relay.cpuMs();
    const threads0 = relay.threadCpuMs();
    const wakes0 = relay.threadWakeups();
    const deltas0 = subscribers?.deltas() ?? 0;
    const t0 = performance.now();
    await new Promise((r) => setTimeout(r, window.measureMs));
    await options.window?.closing(relay.pid);
    // The relay's CPU is read before the closing scrape: rendering /metrics is the bench's request,
    // not the work measured (30-80 ms of CPU at 512 sources, a tenth of a 4 s window at 100 msg/s).
    const cpu1 = relay.cpuMs();
    const threads1 = relay.threadCpuMs();
    const wakes1 = relay.threadWakeups();
    const deltas1 = subscribers?.deltas() ?? 0;
    const cpuSeconds = (performance.now() - t0) / 1000;
    const after = await totals();
    // The counters' interval: from the opening scrape's end (before any settle) to the closing scrape's.
    const seconds = (performance.now() - counted) / 1000;
    const blocks = after.blocks - before.blocks;
    const cpuMs = cpu0 === undefined || cpu1 === undefined ? undefined : cpu1 - cpu0;
    const applied = after.applied - before.applied;
    const lost = subscribers?.failed();
    if (lost !== undefined) throw new Error(`a subscriber's stream failed in the window (${lost})\n${relay.lastLog()}`);
    return {
      cpuSeconds,
      blocksPerSecond: blocks / seconds,
      eventsPerSecond: (after.events - before.events) / seconds,
      appliedBlocksPerSecond: (applied * options.blocksPerEvent) / seconds,
      appliedEventsPerSecond: applied / seconds,
      mailboxOverflows: after.overflows - before.overflows,
      gaps: after.gaps - before.gaps,
      trackedBlocks: after.tracked,
      ingestedBlocks: after.blocks,
      bytesPerMessage: payloads[0].reduce((sum, p) => sum + p.length, 0) / payloads[0].length,
      cpuMs,
      threadCpuMs: threads0 && threads1 && threadCpuDelta(threads0, threads1),
      threadWakeups: wakes0 && wakes1 && threadCpuDelta(wakes0, wakes1),
      cpuMsPerMBlocks: cpuMs === undefined || blocks === 0 ? undefined : (cpuMs / ((blocks / seconds) * cpuSeconds)) * 1e6,
      subscriberDeltas: deltas1 - deltas0,
    };
  } finally {
    subscribers?.close();
    await firehose.stop();
    await relay.stop();
  }
}

/**
 * Whether the relay took (nearly) all of a supply of `supplied` blocks by the window's end: the ingest
 * counter trails the sends by what is in flight, so a supply that ran dry just before the end reads a
 * little short of it.
 */
function nearlyAll(taken: number, supplied: number): boolean {
  return taken >= 0.97 * supplied;
}

/** A rate on messages sent once: how many per source, and whether the relay took them all by the window's end. */
export interface FreshRate extends IngestRate {
  messagesPerSource: number;
  /** The supply ran out before the window ended: the rate is a lower bound. */
  exhausted: boolean;
}

/**
 * relayIngestRate on fresh messages (every chain new to the pool; fresh-batches.ts): as many as the
 * window takes at `boundBlocksPerSecond` (a rate the relay does not reach on them, e.g. its rate
 * on a repeating firehose), so the supply outlasts the window.
 */
export async function freshIngestRate(
  pubs: Publisher[],
  boundBlocksPerSecond: number,
  window: FirehoseWindow,
  options: RelayIngestOptions & { blocksPerMessage: number; seed: number },
): Promise<FreshRate> {
  const perSource = messagesFor(boundBlocksPerSecond, window, options.blocksPerMessage, pubs.length);
  const payloads = await freshBatches(pubs.map((_, s) => options.seed + s), perSource);
  const rate = await relayIngestRate(pubs, payloads, window, { ...options, repeat: false });
  return { ...rate, messagesPerSource: perSource, exhausted: nearlyAll(rate.ingestedBlocks, perSource * pubs.length * options.blocksPerMessage) };
}

/** A pre-fill: per source its messages, the blocks each source then holds, and the events in all. */
export interface Prefill {
  payloads: Buffer[][];
  heldPerSource: number;
  events: number;
}

/** Messages that make `sources` sources store `poolBlocks` blocks between them, in whole messages (vllm-batches.ts Mix prefill). */
export async function prefillBatches(sources: number, poolBlocks: number, blocksPerMessage: number, blocksPerEvent: number, seed: number): Promise<Prefill> {
  const perSource = Math.ceil(poolBlocks / sources / blocksPerMessage);
  const payloads = await freshBatches(
    Array.from({ length: sources }, (_, s) => seed + s),
    perSource,
    (source, at) => ({ kind: 'prefill', source, firstStored: at * blocksPerMessage }),
  );
  return { payloads, heldPerSource: perSource * blocksPerMessage, events: (perSource * blocksPerMessage * sources) / blocksPerEvent };
}

/** Sends a pre-fill through the publishers and waits until the relay's pools applied all of it. */
export async function sendPrefill(pubs: Publisher[], prefill: Prefill, metricsAddress: string): Promise<void> {
  // Sent once, so sent only to a subscribed relay: the relay listens (and startRelayProcess returns)
  // before its ingest has dialled the publishers, and a PUB drops what no subscriber takes.
  const connected = async (): Promise<boolean> => metricSum(await scrape(metricsAddress), 'kv_dc_relay_ingest_connections') >= pubs.length;
  await waitFor(connected, `the relay's connections to the ${pubs.length} publishers`, SETTLE_TIMEOUT_MS, SETTLE_POLL_MS);
  // A SUB sends its subscription right after the handshake the connection count reports; no socket
  // event tells when the PUB has applied it, so give it a moment (microseconds on loopback).
  await new Promise((r) => setTimeout(r, SUBSCRIPTION_SETTLE_MS));
  const filling = new Firehose(pubs, prefill.payloads, false);
  filling.start();
  await filling.sent();
  const deadline = performance.now() + SETTLE_TIMEOUT_MS;
  for (;;) {
    const text = await scrape(metricsAddress);
    if (metricSum(text, 'kv_dc_relay_pool_events_applied_total') >= prefill.events) return;
    if (performance.now() > deadline) {
      const counts = ['pool_events_applied', 'ingest_events', 'ingest_gaps', 'ingest_overflows', 'pool_mailbox_overflows', 'ingest_resets', 'ingest_malformed', 'ingest_ignored']
        .map((name) => `${name} ${metricSum(text, `kv_dc_relay_${name}_total`)}`)
        .join(', ');
      throw new Error(`the relay did not apply the ${prefill.events} pre-fill events within ${SETTLE_TIMEOUT_MS} ms (${counts})`);
    }
    await new Promise((r) => setTimeout(r, SETTLE_POLL_MS));
  }
}

/**
 * relayIngestRate on a pool at equilibrium (vllm-batches.ts Mix): the sources first store `prefill`
 * (applied before the warm-up), then send fresh messages whose stores are new chains and whose
 * removals evict each source's oldest blocks as many as it stores, so the pool keeps the pre-fill's size.
 */
export async function equilibriumIngestRate(
  pubs: Publisher[],
  boundBlocksPerSecond: number,
  window: FirehoseWindow,
  options: RelayIngestOptions & { blocksPerMessage: number; seed: number; prefill: Prefill },
): Promise<FreshRate & { poolBlocks: number }> {
  const { prefill } = options;
  const perSource = messagesFor(boundBlocksPerSecond, window, options.blocksPerMessage, pubs.length);
  const steady = await freshBatches(
    pubs.map((_, s) => options.seed + s),
    perSource,
    (source, at) => equilibriumMix(source, prefill.heldPerSource, at * options.blocksPerMessage),
  );
  const rate = await relayIngestRate(pubs, steady, window, { ...options, repeat: false });
  const poolBlocks = prefill.heldPerSource * pubs.length;
  return { ...rate, messagesPerSource: perSource, poolBlocks, exhausted: nearlyAll(rate.ingestedBlocks - poolBlocks, perSource * pubs.length * options.blocksPerMessage) };
}

/**
 * The equilibrium mix of the part of a source's messages that starts `blocksBefore` blocks into
 * them, after a pre-fill of `held` blocks: half of a message's blocks are stores, half evictions.
 */
export function equilibriumMix(source: number, held: number, blocksBefore: number): Mix {
  return { kind: 'equilibrium', source, firstStored: held + blocksBefore / 2, firstEvicted: blocksBefore / 2 };
}

/**
 * Fresh messages per source that a window takes at 1.5 × `boundBlocksPerSecond` (the supply outlasts
 * it: the relay took equilibrium messages faster than the repeating firehose that gives the bound).
 */
function messagesFor(boundBlocksPerSecond: number, window: FirehoseWindow, blocksPerMessage: number, sources: number): number {
  return Math.ceil((1.5 * boundBlocksPerSecond * (window.warmupMs + window.measureMs)) / 1000 / blocksPerMessage / sources);
}

export interface BareRate {
  messagesPerSecond: number;
  /** CPU time (user + system) of the SUB process per message received; undefined without /proc. */
  cpuUsPerMessage: number | undefined;
  /** Its wake-ups (all threads) per message received; undefined without /proc. */
  wakeupsPerMessage: number | undefined;
}

/** What a bare zeromq.js SUB per publisher, in a process of its own, receives from the firehose. */
export async function bareSubscriberRate(
  pubs: Publisher[],
  payloads: Buffer[][],
  window: FirehoseWindow,
  sender?: Sender,
  measured?: { launch: ProcessLaunch; window: WindowHooks },
): Promise<BareRate> {
  const script = `
    const { Subscriber } = require(${JSON.stringify(require.resolve('zeromq'))});
    let n = 0;
    for (const endpoint of process.argv.slice(1)) {
      const s = new Subscriber({ receiveHighWaterMark: 100000 });
      s.subscribe('');
      s.connect(endpoint);
      (async () => { for (;;) { await s.receive(); n++; } })();
    }
    process.stdin.on('data', () => process.stderr.write(JSON.stringify({ n }) + '\\n'));
    process.stderr.write('{"ready":true}\\n');`;
  const child = spawn(process.execPath, [...(measured?.launch.nodeArgs ?? []), '-e', script, ...pubs.map((p) => p.lastEndpoint!)], {
    stdio: ['pipe', 'ignore', 'pipe'],
    env: measured?.launch.env,
  });
  const firehose = sender ?? new Firehose(pubs, payloads);
  const count = (): Promise<number> => {
    const line = waitForLine(child, (l) => (l.startsWith('{"n"') ? l : undefined));
    child.stdin!.write('\n');
    return line.then((l) => (JSON.parse(l) as { n: number }).n);
  };
  try {
    await waitForLine(child, (l) => (l.includes('ready') ? l : undefined));
    firehose.start();
    await new Promise((r) => setTimeout(r, window.warmupMs));
    child.stderr!.removeAllListeners('data');
    const n0 = await count();
    child.stderr!.removeAllListeners('data');
    const cpu0 = threadCpuMs(child.pid);
    const wakes0 = threadWakeups(child.pid);
    const t0 = performance.now();
    await measured?.window.opened(child.pid);
    await new Promise((r) => setTimeout(r, window.measureMs));
    await measured?.window.closing(child.pid);
    const n1 = await count();
    const cpu1 = threadCpuMs(child.pid);
    const wakes1 = threadWakeups(child.pid);
    return {
      messagesPerSecond: (n1 - n0) / ((performance.now() - t0) / 1000),
      cpuUsPerMessage: cpu0 === undefined || cpu1 === undefined || n1 === n0 ? undefined : ((totalCpuMs(cpu1) - totalCpuMs(cpu0)) * 1000) / (n1 - n0),
      wakeupsPerMessage: wakes0 === undefined || wakes1 === undefined || n1 === n0 ? undefined : (totalCpuMs(wakes1) - totalCpuMs(wakes0)) / (n1 - n0),
    };
  } finally {
    await firehose.stop();
    child.kill('SIGTERM');
  }
}
