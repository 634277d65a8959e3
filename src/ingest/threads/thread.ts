// An ingest thread: runs KvEventSubscribers (the same code the main thread runs with
// limits.ingestThreads 0) for the workers the main thread assigns to it, each owning its sockets,
// decoding and hashing, and hands their bursts, resets, counters and warnings over its port. The
// bursts of every socket in one turn of the thread travel as one hand-off (one copy, one postMessage,
// one count in the shared bounds); anything else posted is preceded by the bursts before it (order).
import { setTimeout as delay } from 'timers/promises';
import { parentPort, workerData } from 'worker_threads';
import { INGEST_THREAD_EXIT_SETTLE_MS, INGEST_THREAD_STATS_DELAY_MS } from '../../config/defaults';
import { META_STRIDE, packedBlockCount } from '../../native';
import { KvEventSubscriber } from '../subscriber';
import { MESSAGE_INFO_STRIDE, type IngestLogger, type IngestSink, type SourceKey, type SourceStats } from '../types';
import { burstBytes, HandoffBuilder, postHandoff, HandoffCounter, HandoffRing, unpackBurst, type ChangedStats, type Handoff } from './handoff';
import type { FromThread, ThreadData, ToThread } from './protocol';

if (!parentPort) throw new Error('the ingest thread runs as a worker thread');
const port = parentPort;
const data = workerData as ThreadData;
const handoff = new HandoffCounter(data.handoff);
const ring = new HandoffRing(data.ring);
const subscribers = new Map<number, KvEventSubscriber>();
/** Subscriptions whose counters changed since they were last posted. */
const changed = new Set<number>();
let statsTimer: NodeJS.Timeout | undefined;
let ending = false;
/** This turn's bursts, handed off once the turn's sockets were read (or before anything else is posted). */
const pending = new HandoffBuilder();
let handoffQueued = false;
/** A burst pending was cut at the per-turn bound: its socket's next burst comes next turn. */
let pendingCut = false;

const post = (message: FromThread): void => {
  handOff();
  port.postMessage(message);
};

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
  else if (m.type === 'exit') void end(0);
  else
    setImmediate(() => {
      throw new Error('ingest thread crash requested (test hook)');
    });
});

// A bug's uncaught error ends the thread (the main thread resets its sources and starts it again),
// but only through end(): see there.
const fatal = (err: unknown): void => {
  // The main thread keeps a dead thread's last counters: these, not a throttled post's.
  for (const id of subscribers.keys()) postStats(id);
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

// Counters also change without a hand-off (a malformed message, a connection): posted periodically.
setInterval(() => {
  for (const id of subscribers.keys()) postStats(id);
}, data.statsIntervalMs).unref();

async function open(id: number, m: Extract<ToThread, { type: 'open' }>): Promise<void> {
  try {
    const subscriber = new KvEventSubscriber(m.config, sinkOf(id), { ...m.options, logger });
    subscribers.set(id, subscriber);
    await subscriber.start();
    post({ type: 'opened', id, endpoints: subscriber.endpoints() });
    postStats(id);
  } catch (err) {
    subscribers.delete(id);
    post({ type: 'failed', id, message: (err as Error).message });
  }
}

async function close(id: number): Promise<void> {
  const subscriber = subscribers.get(id);
  subscribers.delete(id);
  changed.delete(id);
  await subscriber?.close();
  post({ type: 'closed', id });
}

function sinkOf(id: number): IngestSink {
  return {
    events(b) {
      let blocks = 0;
      for (let at = 0; at < b.meta.length; at += META_STRIDE) blocks += packedBlockCount(b.meta, at);
      // A hand-off never holds more than the bounds allow in flight (unless one burst alone does).
      const { bounds } = data;
      if (pending.messages + b.messages > bounds.maxMessages || pending.blocks + blocks > bounds.maxBlocks || pending.bytes + burstBytes(b) > bounds.maxBytes) handOff();
      pending.add(id, b, blocks);
      pendingCut ||= b.cut === true;
      if (!handoffQueued) {
        handoffQueued = true;
        // After this turn's socket reads: their bursts go together.
        setImmediate(turnEnded);
      }
      statsChanged(id);
    },
    reset(source, reason) {
      post({ type: 'reset', id, source, reason });
      statsChanged(id);
    },
  };
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

/** Posts the pending bursts once the main thread's pools have room for them (back-pressure). */
function handOff(): void {
  handoffQueued = false;
  pendingCut = false;
  if (pending.isEmpty) return;
  const h = pending.take(changedStats(), ring);
  if (!handoff.add({ messages: h.messages, blocks: h.blocks, bytes: h.length }, data.bounds)) return overflow(h);
  postHandoff(port, h, ring);
}

/**
 * The counters changed since they were last posted, taken now: they travel with a hand-off, so a
 * scrape that sees a burst's effect (a delta) also sees every count before it (e.g. the malformed
 * messages the same socket delivered earlier), not 20 ms later.
 */
function changedStats(): ChangedStats[] {
  const stats: ChangedStats[] = [];
  for (const id of changed) {
    const subscriber = subscribers.get(id);
    if (subscriber) stats.push({ id, stats: subscriber.stats() });
  }
  changed.clear();
  return stats;
}

/**
 * The main thread applied nothing for the hand-off's wait: its bursts go, and each of their sources
 * is reset and replayed from the engine's start (its history was lost here, not by the engine).
 */
function overflow(h: Handoff): void {
  // Its counters go with the next post instead.
  for (const { id } of h.stats) if (subscribers.has(id)) statsChanged(id);
  for (const burst of h.bursts) {
    const subscriber = subscribers.get(burst.id);
    if (!subscriber) continue;
    const ranks = new Set<number>();
    const { messageInfo } = unpackBurst(h.buffer, burst);
    for (let i = 0; i < burst.messages; i++) ranks.add(messageInfo[i * MESSAGE_INFO_STRIDE]);
    for (const dpRank of ranks) {
      const source: SourceKey = { workerId: burst.workerId, dpRank };
      subscriber.warn({ dpRank, messages: burst.messages, waitMs: data.bounds.waitMs }, 'ingest hand-off to the main thread full and not taken: burst dropped, source reset and replayed');
      subscriber.handoffOverflowed(source);
    }
  }
}

function statsChanged(id: number): void {
  changed.add(id);
  // Throttled, and always after the bursts that changed them: a burst's counters follow it on the port.
  statsTimer ??= setTimeout(() => {
    statsTimer = undefined;
    for (const changedId of changed) postStats(changedId);
    changed.clear();
  }, INGEST_THREAD_STATS_DELAY_MS);
}

function postStats(id: number): void {
  const subscriber = subscribers.get(id);
  if (subscriber) post({ type: 'stats', id, stats: subscriber.stats() });
}
