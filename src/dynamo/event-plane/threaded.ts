// The Dynamo event plane on a thread of its own (thread.ts), as the producer's KV-event source: the
// NATS client, the ZMQ sockets, decoding and ordering run off the main event loop, as the ZMQ path's
// ingest threads do; the main thread only hands each turn's bursts to the pools (which copy them) and
// frees their room in the hand-off once the pools applied them.
import * as path from 'path';
import type { Worker } from 'worker_threads';
import {
  INGEST_HANDOFF_MAX_BLOCKS,
  INGEST_HANDOFF_MAX_BYTES,
  INGEST_HANDOFF_MAX_MESSAGES,
  INGEST_HANDOFF_RING_PER_BYTES_BOUND,
  INGEST_HANDOFF_WAIT_MS,
  INGEST_THREAD_CLOSE_TIMEOUT_MS,
  INGEST_THREAD_STATS_MS,
} from '../../config/defaults';
import { spawnModuleThread } from '../../ingest/threads/spawn';
import { HandoffCounter, HandoffRing, readHandoff, unpackBurst as unpack } from '../../ingest/threads/handoff';
import type { IngestSink, SourceKey, SourceStats } from '../../ingest/types';
import type { Logger } from '../../log';
import type { EventPlaneChannels, WorkerRanks } from '../discovery/project';
import type { DynamoPlaneMetrics, EventPlane } from './plane';
import type { AdvertisedSources } from './source-gate';
import type { FromPlane, PlaneThreadData, ToPlane } from './thread-protocol';

export interface ThreadedEventPlaneOptions {
  natsServers?: string[];
  sink: IngestSink;
  logger: Logger;
}

const EMPTY_METRICS: DynamoPlaneMetrics = { messages: 0, malformed: 0, otherTopic: 0, unknownWorker: 0, duplicates: 0, gaps: 0, loadFaults: 0, natsConnected: false, natsReconnects: 0, subjects: 0, streams: 0, zmqPublishers: 0 };

export class ThreadedEventPlane implements EventPlane {
  private readonly worker: Worker;
  private readonly counter = new HandoffCounter();
  private readonly ring: HandoffRing;
  private readonly logger: Logger;
  private sources: SourceStats[] = [];
  private latest: DynamoPlaneMetrics = EMPTY_METRICS;
  private reported: ReadonlyMap<bigint, ReadonlyMap<number, number>> = new Map();
  private readonly updates: (() => void)[] = [];
  private readonly exited: Promise<void>;
  private closed = false;

  constructor(private readonly options: ThreadedEventPlaneOptions) {
    this.logger = options.logger.child({ component: 'dynamo-events' });
    const bounds = { maxMessages: INGEST_HANDOFF_MAX_MESSAGES, maxBlocks: INGEST_HANDOFF_MAX_BLOCKS, maxBytes: INGEST_HANDOFF_MAX_BYTES, waitMs: INGEST_HANDOFF_WAIT_MS };
    this.ring = new HandoffRing(8 * Math.ceil((INGEST_HANDOFF_RING_PER_BYTES_BOUND * bounds.maxBytes) / 8));
    const data: PlaneThreadData = {
      natsServers: options.natsServers,
      handoff: this.counter.shared,
      ring: { data: this.ring.data, control: this.ring.control },
      bounds,
      statsIntervalMs: INGEST_THREAD_STATS_MS,
    };
    this.worker = spawnModuleThread(path.join(__dirname, 'thread'), data);
    this.worker.on('message', (m: FromPlane) => this.received(m));
    this.worker.on('error', (err) => this.logger.error({ err: err.message }, 'Dynamo event-plane thread failed'));
    this.exited = new Promise((resolve) => this.worker.once('exit', () => resolve()));
    void this.exited.then(() => {
      if (!this.closed) this.logger.error({}, 'Dynamo event-plane thread exited; KV events are no longer read');
    });
  }

  /** The channels, workers and advertised event sources discovery found; resolves once the thread applied them. */
  update(channels: EventPlaneChannels, workers: ReadonlyMap<bigint, WorkerRanks>, sources?: AdvertisedSources): Promise<void> {
    if (this.closed) return Promise.resolve();
    return new Promise((resolve) => {
      this.updates.push(resolve);
      this.post({ type: 'update', channels, workers: [...workers], sources });
    });
  }

  overflowed(source: SourceKey, batches: number): void {
    this.post({ type: 'overflowed', source, batches });
  }

  stats(): SourceStats[] {
    return this.sources;
  }

  reportedBlocks(): ReadonlyMap<bigint, ReadonlyMap<number, number>> {
    return this.reported;
  }

  metrics(): DynamoPlaneMetrics {
    return this.latest;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.post({ type: 'close' });
    // A close that hangs (a NATS close waiting on a dead server) must not hold the relay's shutdown.
    const deadline = setTimeout(() => void this.worker.terminate(), INGEST_THREAD_CLOSE_TIMEOUT_MS);
    await this.exited;
    clearTimeout(deadline);
    for (const resolve of this.updates.splice(0)) resolve();
  }

  private post(m: ToPlane): void {
    this.worker.postMessage(m);
  }

  private received(m: FromPlane): void {
    switch (m.type) {
      case 'events':
        return this.take(m);
      case 'reset':
        try {
          this.options.sink.reset(m.source, m.reason);
        } catch (err) {
          this.logger.warn({ err: String(err) }, 'KV-event sink failed to reset a source');
        }
        return;
      case 'stats':
        this.sources = m.sources;
        this.latest = m.metrics;
        this.reported = new Map(m.reported.map(([id, ranks]) => [id, new Map(ranks)]));
        return;
      case 'log':
        this.logger[m.level](m.obj, m.msg);
        return;
      case 'updated':
        this.updates.shift()?.();
        return;
      case 'closed':
        return;
    }
  }

  /** The hand-off's room is free once the pools applied all of its bursts (back-pressure). */
  private take(m: Extract<FromPlane, { type: 'events' }>): void {
    const h = readHandoff(m.buffer ?? this.ring.data, m.base, m.length);
    const size = { messages: h.messages, blocks: h.blocks, bytes: h.length };
    const applied: Promise<void>[] = [];
    try {
      for (const burst of h.bursts) {
        try {
          const p = this.options.sink.events(unpack(h.buffer, burst));
          if (p) applied.push(p);
        } catch (err) {
          this.logger.warn({ err: String(err) }, 'KV-event sink rejected a batch');
        }
      }
    } finally {
      // Every burst's sink copied what it keeps: the region may be written again.
      if (!m.buffer) this.ring.read(m.base + m.length);
      void Promise.allSettled(applied).then(() => this.counter.taken(size));
    }
  }
}
