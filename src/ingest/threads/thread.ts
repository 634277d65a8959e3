// An ingest thread: runs KvEventSubscribers (the same code the main thread runs with
// limits.ingestThreads 0) for the workers the main thread assigns to it, each owning its sockets,
// decoding and hashing. A hosted subscription's bursts and resets go to its sink on this thread (the
// host's: a pool applied here, ThreadData.host); any other's are handed over the port to the main
// thread. The bursts of every socket in one turn of the thread travel as one hand-off (one copy, one
// postMessage, one count in the shared bounds); anything else posted is preceded by the bursts
// before it (order). Counters are not posted: they live in memory the main thread reads (StatsBoard).
// A hosted subscription whose sink lives on a sibling thread hands its bursts to that thread over
// their peer port, coalesced per turn and sibling, counted in the subscription's flow (the same
// bounds and policy as a hand-off to the main thread); this thread in turn applies what its
// siblings hand to the sinks of its own host.
import { setTimeout as delay } from 'timers/promises';
import { parentPort, workerData, type MessagePort } from 'worker_threads';
import { INGEST_HANDOFF_COALESCE_MS, INGEST_HANDOFF_RING_PER_BYTES_BOUND, INGEST_THREAD_EXIT_SETTLE_MS, INGEST_THREAD_NAME } from '../../config/defaults';
import { META_STRIDE, packedBlockCount, setThreadName } from '../../native';
import { KvEventSubscriber } from '../subscriber';
import { MESSAGE_INFO_STRIDE, type IngestLogger, type IngestSink, type PackedEngineEvents, type ResetReason, type SourceKey } from '../types';
import { burstBytes, FlowCounter, handedOffSize, HandoffBuilder, HandoffRing, postHandoff, readHandoff, unpackBurst, type HandoffSize } from './handoff';
import type { FromThread, HostedSink, HostThread, PeerMessage, ThreadData, ThreadHost, ToThread } from './protocol';

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
  /** The host's sink of a subscription hosted here (undefined: its bursts go elsewhere). */
  hosted: IngestSink | undefined;
  /** The sink on a sibling thread of a subscription hosted there (neither: bursts go to the main thread). */
  remote: HostedSink | undefined;
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
      for (const [id, route] of routes) if (route.workerId === source.workerId) peerSend(route.from, { type: 'overflowed', id, source, batches });
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
  else if (m.type === 'peer') connectPeer(m.thread, m.port);
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
    const remote = m.hosted !== undefined && m.hosted.thread !== data.index ? m.hosted : undefined;
    if (m.hosted !== undefined && !remote) {
      hosted = host?.sink(m.hosted.sink);
      if (!hosted) throw new Error(`the thread hosts no sink ${m.hosted.sink}`);
    }
    const subscriber = new KvEventSubscriber(m.config, sinkOf(id), { ...m.options, stats: m.stats, logger });
    subscribers.set(id, subscriber);
    flows.set(id, { counter: new FlowCounter(m.flow), held: [], heldSince: 0, hosted, remote });
    if (remote) peerSend(remote.thread, { type: 'route', id, sink: remote.sink, workerId: m.config.workerId, flow: m.flow });
    await subscriber.start();
    post({ type: 'opened', id, endpoints: subscriber.endpoints() });
  } catch (err) {
    subscribers.delete(id);
    forgetRemote(id);
    flows.delete(id);
    post({ type: 'failed', id, message: (err as Error).message });
  }
}

async function close(id: number): Promise<void> {
  const subscriber = subscribers.get(id);
  subscribers.delete(id);
  await subscriber?.close();
  // After the close: what its sockets still delivered went ahead of the forget.
  forgetRemote(id);
  flows.delete(id);
  post({ type: 'closed', id });
}

function sinkOf(id: number): IngestSink {
  return {
    events(b) {
      const flow = flows.get(id);
      if (!flow) return;
      let blocks = 0;
      for (let at = 0; at < b.meta.length; at += META_STRIDE) blocks += packedBlockCount(b.meta, at);
      const size = { messages: b.messages, blocks, bytes: burstBytes(b) };
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

/** Subscriptions of this thread with bursts in flight or held: the shares the bounds split into. */
function activeFlows(): number {
  let n = 0;
  for (const f of flows.values()) if (f.counter.messages > 0 || f.held.length > 0) n++;
  return n;
}

/** A reset in order with the subscription's bursts: to its hosted sink (here or on a sibling), or to the main thread. */
function resetSource(id: number, flow: Flow, source: SourceKey, reason: ResetReason): void {
  if (flow.remote) return peerSend(flow.remote.thread, { type: 'reset', id, source, reason });
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
  if (flow.remote) return passRemote(id, flow, flow.remote.thread, b, size);
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

/** A hosted subscription's burst to its sink, in flight (in its flow's count) until the sink applied it. */
function passHosted(id: number, flow: Flow, sink: IngestSink, b: PackedEngineEvents, size: HandoffSize): void {
  flow.counter.add(size);
  applyCounted(sink, b, flow.counter, size, (obj) => subscribers.get(id)?.warn(obj, 'KV-event sink rejected a batch'));
}

/** A burst to a sink of this thread's host; its room in `counter` is free once the sink applied it. */
function applyCounted(sink: IngestSink, b: PackedEngineEvents, counter: FlowCounter, size: HandoffSize, rejected: (obj: object) => void): void {
  let applied: void | Promise<void> = undefined;
  try {
    applied = sink.events(b);
  } catch (err) {
    rejected({ err: String(err) });
  } finally {
    if (applied) void applied.finally(() => counter.taken(size));
    else counter.taken(size);
  }
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

/** Ports to the sibling threads, by their index. */
const peers = new Map<number, MessagePort>();
/** What waits for a sibling's port (it comes from the main thread when both threads run), in order. */
const peerWaiting = new Map<number, { message: PeerMessage; transfer: ArrayBuffer[] }[]>();
/** Per sibling, this turn's bursts of the subscriptions whose sink it hosts. */
const peerPending = new Map<number, HandoffBuilder>();
/**
 * Per sibling, the ring this thread writes its hand-offs to it into (made at the first, announced to
 * that sibling incarnation before it): as for the main thread's ring, a hand-off then allocates
 * nothing on either side (a transferred buffer per hand-off cost the receiver a GC helper's work).
 */
const outRings = new Map<number, HandoffRing>();
/** Per sibling, the ring it writes its hand-offs to this thread into. */
const inRings = new Map<number, HandoffRing>();
let peerFlushQueued = false;

/** A subscription of a sibling thread whose sink this thread's host holds. */
interface Route {
  from: number;
  sink: number;
  workerId: bigint;
  counter: FlowCounter;
  /** Its sink was missing at a burst: its sources were reset once (not again until the sink is back). */
  missed?: boolean;
}
/** The routes of the siblings' subscriptions, by subscription id (ids are unique across threads). */
const routes = new Map<number, Route>();

function connectPeer(thread: number, peer: MessagePort): void {
  peers.get(thread)?.close();
  peers.set(thread, peer);
  // A new incarnation of the sibling: it knows none of the rings of the old one.
  outRings.delete(thread);
  inRings.delete(thread);
  peer.on('message', (m: PeerMessage) => {
    if (!ending) peerReceived(thread, m);
  });
  // A restarted sibling's routes died with it; its subscriptions open theirs again.
  for (const [id, route] of routes) if (route.from === thread) routes.delete(id);
  const waiting = peerWaiting.get(thread) ?? [];
  peerWaiting.delete(thread);
  for (const w of waiting) peer.postMessage(w.message, w.transfer);
}

/** A message to a sibling, after this turn's bursts for it (order). */
function peerSend(thread: number, message: PeerMessage, transfer: ArrayBuffer[] = []): void {
  if (message.type !== 'events' && message.type !== 'ring') flushPeer(thread);
  const peer = peers.get(thread);
  if (peer) return peer.postMessage(message, transfer);
  const waiting = peerWaiting.get(thread) ?? peerWaiting.set(thread, []).get(thread)!;
  waiting.push({ message, transfer });
}

/**
 * Subscription `id`'s burst for its sink on sibling `thread`: copied into this turn's hand-off to that
 * sibling, in flight (in its flow's count) until the sibling's sink applied it.
 */
function passRemote(id: number, flow: Flow, thread: number, b: PackedEngineEvents, size: HandoffSize): void {
  const pending = peerPending.get(thread) ?? peerPending.set(thread, new HandoffBuilder()).get(thread)!;
  const { bounds } = data;
  if (pending.messages + b.messages > bounds.maxMessages || pending.blocks + size.blocks > bounds.maxBlocks || pending.bytes + size.bytes > bounds.maxBytes) flushPeer(thread);
  pending.add(id, b, size.blocks);
  flow.counter.add(size);
  if (!peerFlushQueued) {
    peerFlushQueued = true;
    // After this turn's socket reads: their bursts for one sibling go together.
    setImmediate(flushPeers);
  }
}

function flushPeers(): void {
  peerFlushQueued = false;
  for (const thread of peerPending.keys()) flushPeer(thread);
}

function flushPeer(thread: number): void {
  const pending = peerPending.get(thread);
  if (!pending || pending.isEmpty) return;
  let ring = outRings.get(thread);
  if (!ring) {
    ring = new HandoffRing(8 * Math.ceil((INGEST_HANDOFF_RING_PER_BYTES_BOUND * data.bounds.maxBytes) / 8));
    outRings.set(thread, ring);
    peerSend(thread, { type: 'ring', data: ring.data, control: ring.control });
  }
  postHandoff({ postMessage: (m, transfer) => peerSend(thread, m, transfer) }, pending.take(ring), ring);
}

function forgetRemote(id: number): void {
  const remote = flows.get(id)?.remote;
  if (remote) peerSend(remote.thread, { type: 'forget', id });
}

/** A sibling's message: bursts and resets for this thread's sinks, or an overflow of a subscription here. */
function peerReceived(from: number, m: PeerMessage): void {
  switch (m.type) {
    case 'route':
      routes.set(m.id, { from, sink: m.sink, workerId: m.workerId, counter: new FlowCounter(m.flow) });
      return;
    case 'forget':
      routes.delete(m.id);
      return;
    case 'overflowed':
      subscribers.get(m.id)?.overflowed(m.source, m.batches);
      return;
    case 'reset': {
      const sink = sinkOfRoute(m.id);
      try {
        sink?.reset(m.source, m.reason);
      } catch (err) {
        logger.warn({ workerId: String(m.source.workerId), dpRank: m.source.dpRank, reason: m.reason, err: String(err) }, 'KV-event sink failed to reset a source');
      }
      return;
    }
    case 'ring':
      inRings.set(from, new HandoffRing({ data: m.data, control: m.control }));
      return;
    case 'events': {
      const ring = inRings.get(from);
      if (m.buffer) return applyPeerHandoff(m.buffer, m.base, m.length);
      if (!ring) return; // cannot happen: a sibling announces its ring before its first hand-off in it
      try {
        return applyPeerHandoff(ring.data, m.base, m.length);
      } finally {
        // Every sink copied what it keeps: the region may be written again.
        ring.read(m.base + m.length);
      }
    }
  }
}

function sinkOfRoute(id: number): IngestSink | undefined {
  const route = routes.get(id);
  return route && host?.sink(route.sink);
}

/**
 * A sibling's hand-off, applied burst by burst to this host's sinks (each copies what it keeps). A
 * burst whose sink is missing (its pool ended and the owner is replacing the subscription, or not
 * opened here yet) is taken unapplied, and the first such burst of a route resets its sources
 * (counted as overflows, replayed from 0), so nothing is lost silently and an ended pool's
 * subscription does not replay in a loop.
 */
function applyPeerHandoff(buffer: ArrayBuffer | SharedArrayBuffer, base: number, length: number): void {
  const h = readHandoff(buffer, base, length);
  for (const burst of h.bursts) {
    const route = routes.get(burst.id);
    if (!route) continue;
    const size = handedOffSize(burst);
    const sink = host?.sink(route.sink);
    if (!sink) {
      route.counter.taken(size);
      if (route.missed) continue;
      route.missed = true;
      const ranks = new Set<number>();
      const b = unpackBurst(buffer, burst);
      for (let i = 0; i < b.messages; i++) ranks.add(b.messageInfo[i * MESSAGE_INFO_STRIDE]);
      for (const dpRank of ranks) peerSend(route.from, { type: 'overflowed', id: burst.id, source: { workerId: route.workerId, dpRank }, batches: 1 });
      continue;
    }
    route.missed = false;
    applyCounted(sink, unpackBurst(buffer, burst), route.counter, size, (obj) => logger.warn({ workerId: String(route.workerId), ...obj }, 'KV-event sink rejected a batch'));
  }
}
