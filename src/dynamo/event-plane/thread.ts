// The Dynamo event plane's thread: runs the plane (NATS client, ZMQ sockets, native decoding, order)
// off the main event loop and hands each turn's bursts to the main thread through the ingest
// threads' hand-off (one region of shared memory per turn, bounded in flight: the thread waits for
// the pools, and drops and resets what they did not take within the hand-off's wait).
import { setTimeout as delay } from 'timers/promises';
import { parentPort, workerData } from 'worker_threads';
import { INGEST_THREAD_EXIT_SETTLE_MS } from '../../config/defaults';
import { META_STRIDE, packedBlockCount } from '../../native';
import { burstBytes, HandoffBuilder, HandoffCounter, HandoffRing, postHandoff, unpackBurst } from '../../ingest/threads/handoff';
import { MESSAGE_INFO_STRIDE, type IngestSink } from '../../ingest/types';
import { DynamoEventPlane, type PlaneLogger } from './plane';
import type { FromPlane, PlaneThreadData, ToPlane } from './thread-protocol';

if (!parentPort) throw new Error('the event-plane thread runs as a worker thread');
const port = parentPort;
const data = workerData as PlaneThreadData;
const counter = new HandoffCounter(data.handoff);
const ring = new HandoffRing(data.ring);
const pending = new HandoffBuilder();
let queued = false;

const post = (m: FromPlane): void => {
  handOff();
  port.postMessage(m);
};

const log = (level: 'info' | 'warn' | 'error') => (obj: object, msg: string) => post({ type: 'log', level, obj, msg });
const logger = { info: log('info'), warn: log('warn'), error: log('error') } as unknown as PlaneLogger;

const sink: IngestSink = {
  events(b) {
    let blocks = 0;
    for (let at = 0; at < b.meta.length; at += META_STRIDE) blocks += packedBlockCount(b.meta, at);
    const { bounds } = data;
    if (pending.messages + b.messages > bounds.maxMessages || pending.blocks + blocks > bounds.maxBlocks || pending.bytes + burstBytes(b) > bounds.maxBytes) handOff();
    pending.add(0, b, blocks);
    if (!queued) {
      queued = true;
      setImmediate(handOff);
    }
  },
  reset(source, reason) {
    post({ type: 'reset', source, reason });
  },
};

const plane = new DynamoEventPlane({ natsServers: data.natsServers, sink, logger });

/** Posts the turn's bursts once the main thread's pools have room for them (back-pressure). */
function handOff(): void {
  queued = false;
  if (pending.isEmpty) return;
  const h = pending.take(ring);
  if (!counter.add({ messages: h.messages, blocks: h.blocks, bytes: h.length }, data.bounds)) {
    // Not taken within the wait: dropped here, so each source it carried is reset (no replay on this plane).
    for (const burst of h.bursts) {
      const { messageInfo } = unpackBurst(h.buffer, burst);
      const ranks = new Set<number>();
      for (let i = 0; i < burst.messages; i++) ranks.add(messageInfo[i * MESSAGE_INFO_STRIDE]);
      for (const dpRank of ranks) plane.overflowed({ workerId: burst.workerId, dpRank }, 1);
    }
    return;
  }
  postHandoff(port, h, ring);
}

function statsMessage(): FromPlane {
  const reported = [...plane.reportedBlocks()].map(([id, ranks]): [bigint, [number, number][]] => [id, [...ranks]]);
  return { type: 'stats', sources: plane.stats(), metrics: plane.metrics(), reported };
}

setInterval(() => post(statsMessage()), data.statsIntervalMs).unref();

port.on('message', (m: ToPlane) => {
  if (m.type === 'update') {
    void plane.update(m.channels, new Map(m.workers), m.sources).then(() => post({ type: 'updated' }));
  } else if (m.type === 'overflowed') {
    plane.overflowed(m.source, m.batches);
  } else {
    void plane.close().then(async () => {
      post(statsMessage());
      // zeromq.js aborts the process when a thread ends with a receive pending (zeromq.js #411): the
      // closed ZMQ sockets' receive loops settle first, as on the ingest threads.
      await delay(INGEST_THREAD_EXIT_SETTLE_MS);
      post({ type: 'closed' });
      process.exit(0);
    });
  }
});
