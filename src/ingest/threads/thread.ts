// An ingest thread: runs KvEventSubscribers (the same code the main thread runs with
// limits.ingestThreads 0) for the workers the main thread assigns to it, each owning its sockets,
// decoding and hashing. A hosted subscription's bursts and resets go to its sink on this thread (the
// host's: a pool applied here, ThreadData.host); any other's are handed over the port to the main
// thread. The bursts of every socket in one turn of the thread travel as one hand-off (one copy, one
// postMessage, one count in the shared bounds); anything else posted is preceded by the bursts
// before it (order). Counters are not posted: they live in memory the main thread reads (StatsBoard).
import { setTimeout as delay } from 'timers/promises';
import { parentPort, workerData } from 'worker_threads';
import { INGEST_HANDOFF_COALESCE_MS, INGEST_HANDOFF_RING_PER_BYTES_BOUND, INGEST_THREAD_EXIT_SETTLE_MS, INGEST_THREAD_NAME } from '../../config/defaults';
import { META_STRIDE, packedBlockCount, setThreadName } from '../../native';
import { KvEventSubscriber } from '../subscriber';
import { MESSAGE_INFO_STRIDE, type IngestLogger, type IngestSink, type PackedEngineEvents, type ResetReason, type SourceKey } from '../types';
import { burstBytes, FlowCounter, HandoffBuilder, HandoffRing, postHandoff, type HandoffSize } from './handoff';
import type { FromThread, HostThread, ThreadData, ThreadHost, ToThread } from './protocol';

if (!parentPort) throw new Error('the ingest thread runs as a worker thread');
const port = parentPort;
const data = workerData as ThreadData;
const ring = new HandoffRing(data.ring);
const subscribers = new Map<number, KvEventSubscriber>();
setThreadName(INGEST_THREAD_NAME);

/** What a subscription decoded while it waited for room, in order (a reset keeps its place behind its bursts). */
type Held = { kind: 'burst'; b: PackedEngineEvents; size: HandoffSize } | { kind: 'reset'; source: SourceKey; reason: ResetReason };

/**
 * A subscription's share of the hand-off: what it has in flight (counted here, taken on the main
 * thread once its pool applied it) and what waits for room. While anything waits its sockets are
 * paused, so only its own engine's queue (ZMQ, then the engine) fills: an offender hurts itself only.
 */
interface Flow {
  counter: FlowCounter;
  held: Held[];
  /** When the first held burst was held (performance.now()). */
  heldSince: number;
  /** The host's sink of a subscription hosted here (undefined: its bursts go to the main thread). */
  hosted: IngestSink | undefined;
}
const flows = new Map<number, Flow>();
/** Polls held flows for room (a notify per taken hand-off would cost the main thread more). */
let pollTimer: NodeJS.Timeout | undefined;
/** How often a held flow checks for room. */
const HELD_POLL_MS = 1;
let ending = false;
/** This turn's bursts, handed off once the turn's sockets were read (or before anything else is posted). */
const pending = new HandoffBuilder();
let handoffQueued = false;
/** When the last hand-off was posted (performance.now()). */
let lastHandoffAt = -Infinity;
/** A burst pending was cut at the per-turn bound: its socket's next burst comes next turn. */
let pendingCut = false;

const post = (message: FromThread, transfer?: readonly ArrayBuffer[]): void => {
  flushHost();
  handOff();
  port.postMessage(message, transfer);
};

/** The host's messages of this turn, posted together at its end (or before anything else the thread posts: order). */
let hostOutbox: unknown[] = [];
let hostTransfer: ArrayBuffer[] = [];

function postHost(message: unknown, transfer: readonly ArrayBuffer[] = []): void {
  if (hostOutbox.length === 0) setImmediate(flushHost);
  hostOutbox.push(message);
  hostTransfer.push(...transfer);
}

function flushHost(): void {
  if (hostOutbox.length === 0) return;
  const messages = hostOutbox;
  const transfer = hostTransfer;
  hostOutbox = [];
  hostTransfer = [];
  port.postMessage({ type: 'host', messages } satisfies FromThread, transfer);
}

const host: ThreadHost | undefined = data.host === undefined ? undefined : loadHost(data.host);

function loadHost(path: string): ThreadHost {
  const thread: HostThread = {
    post: postHost,
    overflowed(source, batches) {
      for (const subscriber of subscribers.values()) if (subscriber.config.workerId === source.workerId) subscriber.overflowed(source, batches);
    },
  };
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return (require(path) as { createHost(thread: HostThread): ThreadHost }).createHost(thread);
}

const logger: IngestLogger = {
  warn(obj, msg) {
    try {
      post({ type: 'warn', obj, msg });
    } catch {
      post({ type: 'warn', obj: {}, msg }); // a field that cannot cross threads; the message still does
    }
  },
};

port.on('message', (m: ToThread) => {
  if (ending) return;
  if (m.type === 'open') void open(m.id, m);
  else if (m.type === 'close') void close(m.id);
  else if (m.type === 'overflowed') subscribers.get(m.id)?.overflowed(m.source, m.batches);
  else if (m.type === 'host') for (const message of m.messages) host?.receive(message);
  else if (m.type === 'exit') void end(0);
  else
    setImmediate(() => {
      throw new Error('ingest thread crash requested (test hook)');
    });
});

// A bug's uncaught error ends the thread (the main thread resets its sources and starts it again),
// but only through end(): see there.
const fatal = (err: unknown): void => {
  post({ type: 'fatal', message: err instanceof Error ? (err.stack ?? err.message) : String(err) });
  void end(1);
};
process.on('uncaughtException', fatal);
process.on('unhandledRejection', fatal);

/**
 * zeromq.js aborts the whole process when a thread ends while a socket has a receive pending
 * (zeromq.js #411, an abrupt Worker.terminate() included): the thread ends only after its
 * subscribers closed their sockets and their receive loops settled.
 */
async function end(code: number): Promise<void> {
  if (ending) return;
  ending = true;
  const closing = Promise.allSettled([...subscribers.values()].map((s) => s.close()));
  subscribers.clear();
  await Promise.race([closing, delay(data.closeTimeoutMs)]);
  // Replay and ZAP sockets closed with them settle their receives a turn or two later.
  await delay(INGEST_THREAD_EXIT_SETTLE_MS);
  process.exit(code);
}

async function open(id: number, m: Extract<ToThread, { type: 'open' }>): Promise<void> {
  try {
    let hosted: IngestSink | undefined;
    if (m.hosted !== undefined) {
      // IngestThreads.subscribe runs a hosted subscription on its sink's thread.
      if (m.hosted.thread !== data.index) throw new Error(`a subscription hosted on thread ${m.hosted.thread} opened on thread ${data.index}`);
      hosted = host?.sink(m.hosted.sink);
      if (!hosted) throw new Error(`the thread hosts no sink ${m.hosted.sink}`);
    }
    const subscriber = new KvEventSubscriber(m.config, sinkOf(id), { ...m.options, stats: m.stats, logger });
    subscribers.set(id, subscriber);
    flows.set(id, { counter: new FlowCounter(m.flow), held: [], heldSince: 0, hosted });
    await subscriber.start();
    post({ type: 'opened', id, endpoints: subscriber.endpoints() });
  } catch (err) {
    subscribers.delete(id);
    flows.delete(id);
    post({ type: 'failed', id, message: (err as Error).message });
  }
}

async function close(id: number): Promise<void> {
  const subscriber = subscribers.get(id);
  subscribers.delete(id);
  await subscriber?.close();
  flows.delete(id);
  post({ type: 'closed', id });
}

function sinkOf(id: number): IngestSink {
  return {
    events(b) {
      const flow = flows.get(id);
      if (!flow) return;
      // A hosted subscription with nothing held or in flight fits whatever it passes (FlowCounter.fits):
      // its burst goes to its sink, and its size is worked out only if the sink keeps it in flight,
      // which at low rates it nearly never does (one fewer walk of the burst per message).
      if (flow.hosted && flow.held.length === 0 && flow.counter.messages <= 0) return passHosted(id, flow, flow.hosted, b);
      const size = burstSize(b);
      if (flow.held.length > 0 || !flow.counter.fits(size, data.bounds, activeFlows)) hold(id, flow, { kind: 'burst', b: copyBurst(b), size });
      else pass(id, flow, b, size);
    },
    reset(source, reason) {
      const flow = flows.get(id);
      if (flow && flow.held.length > 0) flow.held.push({ kind: 'reset', source, reason });
      else if (flow) resetSource(id, flow, source, reason);
    },
  };
}

/** What a burst counts against its subscription's share of the bounds. */
function burstSize(b: PackedEngineEvents): HandoffSize {
  let blocks = 0;
  for (let at = 0; at < b.meta.length; at += META_STRIDE) blocks += packedBlockCount(b.meta, at);
  return { messages: b.messages, blocks, bytes: burstBytes(b) };
}

/** Subscriptions of this thread with bursts in flight or held: the shares the bounds split into. */
function activeFlows(): number {
  let n = 0;
  for (const f of flows.values()) if (f.counter.messages > 0 || f.held.length > 0) n++;
  return n;
}

/** A reset in order with the subscription's bursts: to its hosted sink, or to the main thread. */
function resetSource(id: number, flow: Flow, source: SourceKey, reason: ResetReason): void {
  if (!flow.hosted) return post({ type: 'reset', id, source, reason });
  try {
    flow.hosted.reset(source, reason);
  } catch (err) {
    subscribers.get(id)?.warn({ dpRank: source.dpRank, reason, err: String(err) }, 'KV-event sink failed to reset a source');
  }
}

/**
 * Subscription `id`'s burst, counted in flight until its sink applied it: applied here by a hosted
 * sink, or added to this turn's hand-off.
 */
function pass(id: number, flow: Flow, b: PackedEngineEvents, size: HandoffSize): void {
  if (flow.hosted) return passHosted(id, flow, flow.hosted, b, size);
  // A hand-off never holds more than the bounds allow in flight (unless one burst alone does).
  const { bounds } = data;
  if (pending.messages + b.messages > bounds.maxMessages || pending.blocks + size.blocks > bounds.maxBlocks || pending.bytes + size.bytes > bounds.maxBytes) handOff();
  pending.add(id, b, size.blocks);
  flow.counter.add(size);
  pendingCut ||= b.cut === true;
  if (!handoffQueued) {
    handoffQueued = true;
    // After this turn's socket reads: their bursts go together. Within INGEST_HANDOFF_COALESCE_MS of
    // the last hand-off, at its end: what more sockets deliver meanwhile joins it.
    const wait = lastHandoffAt + INGEST_HANDOFF_COALESCE_MS - performance.now();
    if (wait > 0) setTimeout(turnEnded, wait);
    else setImmediate(turnEnded);
  }
}

/**
 * A hosted subscription's burst to its sink, in flight (in its flow's count) until the sink applied
 * it. A sink that applied it in the call (a pool with nothing queued: PoolActor.received)
 * returns no promise, and the burst never counts: room is not taken, so there is none to free.
 * `known`: its size, when the caller measured it; else it is measured only if the sink returns a
 * promise (the burst's arrays are unchanged until the subscriber's delivery returns).
 */
function passHosted(id: number, flow: Flow, sink: IngestSink, b: PackedEngineEvents, known?: HandoffSize): void {
  let applied: void | Promise<void> = undefined;
  try {
    applied = sink.events(b);
  } catch (err) {
    subscribers.get(id)?.warn({ err: String(err) }, 'KV-event sink rejected a batch');
  }
  if (!applied) return;
  const { counter } = flow;
  const size = known ?? burstSize(b);
  counter.add(size);
  void applied.finally(() => counter.taken(size));
}

/**
 * The subscription has no room: what it decodes waits (its sockets and replays paused meanwhile)
 * until its pool applied enough, for at most bounds.waitMs.
 */
function hold(id: number, flow: Flow, item: Held): void {
  if (flow.held.length === 0) {
    flow.heldSince = performance.now();
    subscribers.get(id)?.pause();
    pollTimer ??= setTimeout(pollHeld, HELD_POLL_MS);
  }
  // Bounded by the pause: each rank delivers at most the burst it was reading, a replay the message
  // it was handling (replay.ts waits for the resume).
  flow.held.push(item);
}

function pollHeld(): void {
  pollTimer = undefined;
  const now = performance.now();
  let waiting = false;
  for (const [id, flow] of flows) {
    while (flow.held.length > 0) {
      const item = flow.held[0];
      if (item.kind === 'burst' && !flow.counter.fits(item.size, data.bounds, activeFlows)) break;
      flow.held.shift();
      if (item.kind === 'reset') {
        resetSource(id, flow, item.source, item.reason);
        continue;
      }
      pass(id, flow, item.b, item.size);
    }
    if (flow.held.length > 0 && now - flow.heldSince >= data.bounds.waitMs) dropHeld(id, flow);
    if (flow.held.length > 0) waiting = true;
    else subscribers.get(id)?.resume();
  }
  if (waiting) pollTimer = setTimeout(pollHeld, HELD_POLL_MS);
}

/**
 * The subscription's pool applied nothing for the wait: its held bursts go,
 * and each of their sources is reset and replayed from the engine's start (its history was lost
 * here, not by the engine). Resets held behind them still go, in order.
 */
function dropHeld(id: number, flow: Flow): void {
  const subscriber = subscribers.get(id);
  const held = flow.held;
  flow.held = [];
  const dropped = new Map<string, SourceKey>();
  for (const item of held) {
    if (item.kind === 'reset') {
      resetSource(id, flow, item.source, item.reason);
      continue;
    }
    for (let i = 0; i < item.b.messages; i++) {
      const dpRank = item.b.messageInfo[i * MESSAGE_INFO_STRIDE];
      dropped.set(`${dpRank}`, { workerId: item.b.workerId, dpRank });
    }
  }
  for (const source of dropped.values()) {
    subscriber?.warn({ dpRank: source.dpRank, waitMs: data.bounds.waitMs }, 'ingest hand-off to the main thread full and not taken: burst dropped, source reset and replayed');
    subscriber?.handoffOverflowed(source);
  }
  subscriber?.resume();
}

/** A copy of a burst whose arrays the subscriber reuses once the sink returns. */
function copyBurst(b: PackedEngineEvents): PackedEngineEvents {
  return { ...b, meta: b.meta.slice(), words: b.words.slice(), sequences: b.sequences.slice(), messageInfo: b.messageInfo.slice() };
}

/**
 * The turn's sockets were read: their bursts are handed off, unless a socket's burst was cut at the
 * per-turn bound and the hand-off is still small (under half of each bound): then its next burst,
 * one turn later, joins it. A saturated socket so costs one hand-off (a postMessage and a port
 * message on the main thread, ~10 µs of CPU each way) per two turns rather than per turn; an idle
 * one's burst leaves at the end of its turn as before.
 */
function turnEnded(): void {
  const { bounds } = data;
  if (pendingCut && 2 * pending.messages < bounds.maxMessages && 2 * pending.blocks < bounds.maxBlocks && 2 * pending.bytes < bounds.maxBytes) {
    pendingCut = false;
    setImmediate(turnEnded);
    return;
  }
  handOff();
}

/** Posts the pending bursts (each counted in its subscription's flow when it was added). */
function handOff(): void {
  handoffQueued = false;
  pendingCut = false;
  if (pending.isEmpty) return;
  lastHandoffAt = performance.now();
  postHandoff(port, pending.take(ring), ring);
}
