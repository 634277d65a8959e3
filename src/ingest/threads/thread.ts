// An ingest thread: runs KvEventSubscribers (the same code the main thread runs with
// limits.ingestThreads 0) for the workers the main thread assigns to it, each owning its sockets,
// decoding and hashing, and hands their bursts, resets, counters and warnings over its port.
import { setTimeout as delay } from 'timers/promises';
import { parentPort, workerData } from 'worker_threads';
import { INGEST_THREAD_EXIT_SETTLE_MS } from '../../config/defaults';
import { KvEventSubscriber } from '../subscriber';
import { MESSAGE_INFO_STRIDE, type IngestLogger, type IngestSink, type PackedEngineEvents, type SourceKey } from '../types';
import { burstBytes, HandoffCounter, packBurst } from './handoff';
import type { FromThread, ThreadData, ToThread } from './protocol';

if (!parentPort) throw new Error('the ingest thread runs as a worker thread');
const port = parentPort;
const data = workerData as ThreadData;
const handoff = new HandoffCounter(data.handoff);
const subscribers = new Map<number, KvEventSubscriber>();
/** Subscriptions whose counters changed since they were last posted. */
const changed = new Set<number>();
let statsQueued = false;
let ending = false;

const post = (message: FromThread, transfer?: ArrayBuffer[]): void => port.postMessage(message, transfer);

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
      if (!handoff.add(burstBytes(b), data.bounds)) return overflow(id, b);
      const burst = packBurst(b);
      post({ type: 'events', id, burst }, [burst.buffer]);
      statsChanged(id);
    },
    reset(source, reason) {
      post({ type: 'reset', id, source, reason });
      statsChanged(id);
    },
  };
}

/** The main thread took nothing for the hand-off's wait: the burst goes and its sources are reset. */
function overflow(id: number, b: PackedEngineEvents): void {
  const subscriber = subscribers.get(id);
  if (!subscriber) return;
  const ranks = new Set<number>();
  for (let i = 0; i < b.messages; i++) ranks.add(b.messageInfo[i * MESSAGE_INFO_STRIDE]);
  for (const dpRank of ranks) {
    const source: SourceKey = { workerId: b.workerId, dpRank };
    subscriber.counter(source).overflows += 1;
    subscriber.warn({ dpRank, messages: b.messages, waitMs: data.bounds.waitMs }, 'ingest hand-off to the main thread full and not taken: burst dropped, source reset');
    subscriber.reset(source, 'overflow');
  }
}

function statsChanged(id: number): void {
  changed.add(id);
  if (statsQueued) return;
  statsQueued = true;
  // After the hand-offs of this turn: a burst's counters follow it on the port.
  setImmediate(() => {
    statsQueued = false;
    for (const changedId of changed) postStats(changedId);
    changed.clear();
  });
}

function postStats(id: number): void {
  const subscriber = subscribers.get(id);
  if (subscriber) post({ type: 'stats', id, stats: subscriber.stats() });
}
