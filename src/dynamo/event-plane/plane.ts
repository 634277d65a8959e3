// A Dynamo deployment's event plane as the producer's KV-event source (dynamo-event-plane-and-discovery.md
// §5): NATS core subjects (the event plane's envelopes, or bare JSON events before it), JetStream
// streams of workers without a local indexer (read from the stream's start by an ordered consumer, so
// a relay that starts late recovers what the stream still holds) and ZMQ event-plane publishers. The
// channel set and the workers come from discovery (update()); each channel's messages are decoded in
// one native call per turn (channel.ts).
//
// Losses: NATS lost and back (the client reconnects by itself): a publisher's next message shows the
// gap and resets its sources; a JetStream ordered consumer that was deleted is recreated by the client
// from where it was; a pool mailbox overflow resets the source (no replay on this plane).
import type { NatsConnection, Subscription } from '@nats-io/nats-core';
import { connect } from '@nats-io/transport-node';
import { DeliverPolicy, jetstream, jetstreamManager, type ConsumerMessages } from '@nats-io/jetstream';
import { Subscriber } from 'zeromq';
import {
  DYNAMO_JETSTREAM_PULL_EXPIRES_MS,
  DYNAMO_MAX_PUBLISHERS_PER_CHANNEL,
  DYNAMO_NATS_RECONNECT_WAIT_MS,
  DYNAMO_STREAM_RETRY_MS,
  INGEST_LOG_MAX_PER_WINDOW,
  INGEST_LOG_WINDOW_MS,
  INGEST_MAX_MESSAGE_BYTES,
} from '../../config/defaults';
import type { IngestSink, SourceKey, SourceStats } from '../../ingest/types';
import { ThrottledLogger } from '../../ingest/throttle';
import type { Logger } from '../../log';
import { RouterEventBatchDecoder } from '../../native';
import type { EventPlaneSources } from '../../producer/producer';
import { KV_EVENT_TOPIC, KV_METRICS_TOPIC, LEGACY_KV_EVENT_TOPIC, type EventPlaneChannels, type WorkerRanks } from '../discovery/project';
import { decodeActiveLoad, decodeZmqActiveLoad, MAX_ACTIVE_LOAD_MESSAGE_BYTES } from './active-load';
import { EventChannel, type ChannelContext, type PlaneCounters } from './channel';
import { LoadFeed, type ReportedLoad } from './load-feed';
import { sourceKey } from './order';
import { NO_ADVERTISED_SOURCES, SourceGate, type AdvertisedSources } from './source-gate';
import { zmqWireError } from './zmq-wire';

/** What the plane logs through (a pino logger, or an ingest thread's port). */
export type PlaneLogger = Pick<Logger, 'info' | 'warn' | 'error'>;

export interface DynamoEventPlaneOptions {
  /** The deployment's NATS servers; without them only ZMQ channels are read. */
  natsServers?: string[];
  sink: IngestSink;
  logger: PlaneLogger;
}

/** What /metrics shows of the plane. */
export interface DynamoPlaneMetrics extends PlaneCounters {
  natsConnected: boolean;
  natsReconnects: number;
  subjects: number;
  streams: number;
  zmqPublishers: number;
}

/** The event plane as discovery and /metrics see it, in this thread (DynamoEventPlane) or on its own (ThreadedEventPlane). */
export interface EventPlane extends EventPlaneSources {
  /** The channels, workers and advertised event sources discovery found: starts what is new, stops what is gone. */
  update(channels: EventPlaneChannels, workers: ReadonlyMap<bigint, WorkerRanks>, sources?: AdvertisedSources): Promise<void>;
  metrics(): DynamoPlaneMetrics;
}

interface Live {
  /** The KV-event channel (none for a load subject). */
  channel?: EventChannel;
  /**
   * False until the channel can receive: a NATS subject once the server confirmed the subscription
   * (core NATS drops what is published to a subject before that; the channels metric counts only
   * confirmed ones, so an operator or a test can tell when a publish will be heard).
   */
  reading: boolean;
  stop(): Promise<void>;
}

export class DynamoEventPlane implements EventPlane {
  private readonly logger: PlaneLogger;
  private readonly ctx: ChannelContext;
  private readonly counters: PlaneCounters = { messages: 0, malformed: 0, otherTopic: 0, unknownWorker: 0, duplicates: 0, gaps: 0, loadFaults: 0 };
  private readonly sourceStats = new Map<string, SourceStats>();
  private readonly live = new Map<string, Live>();
  /** Worker -> rank -> its latest kv_used_blocks (ActiveLoad on kv_metrics; no expiry, as in Dynamo). */
  private readonly reported: ReportedLoad = new Map();
  /** The kv_metrics channels read. */
  private readonly loadFeeds = new Set<LoadFeed>();
  private workers: ReadonlyMap<bigint, WorkerRanks> = new Map();
  private readonly gate = new SourceGate();
  private nats: Promise<NatsConnection> | undefined;
  private natsConnected = false;
  private natsReconnects = 0;
  private closed = false;

  constructor(private readonly options: DynamoEventPlaneOptions) {
    this.logger = options.logger;
    const log = new ThrottledLogger(this.logger, INGEST_LOG_MAX_PER_WINDOW, INGEST_LOG_WINDOW_MS);
    this.ctx = {
      sink: options.sink,
      decoder: new RouterEventBatchDecoder(KV_EVENT_TOPIC, LEGACY_KV_EVENT_TOPIC),
      maxPublishers: DYNAMO_MAX_PUBLISHERS_PER_CHANNEL,
      workers: () => this.workers,
      stats: (source) => this.stats0(source),
      counters: this.counters,
      gate: this.gate,
      warn: (obj, msg) => log.warn(obj, msg),
    };
  }

  /** The channels, workers and advertised event sources discovery found: starts what is new, stops what is gone. */
  async update(channels: EventPlaneChannels, workers: ReadonlyMap<bigint, WorkerRanks>, sources: AdvertisedSources = NO_ADVERTISED_SOURCES): Promise<void> {
    if (this.closed) return;
    this.workers = workers;
    // A rank whose binding changed other than Missing -> Active (became or stopped being Ambiguous, lost
    // its entry, or got another publisher) starts cold: what it held came from a publisher that is not
    // (or no longer) known to be its own.
    for (const source of this.gate.update(sources)) if (workers.has(source.workerId)) this.resetSource(source);
    const wanted = new Map<string, () => Live>();
    if (this.options.natsServers) {
      for (const s of channels.subjects) wanted.set(`nats:${s}`, () => this.subscribe(s));
      for (const s of channels.load) wanted.set(`load:${s}`, () => this.subscribeLoad(s));
      for (const s of channels.streams) wanted.set(`js:${s}`, () => this.consume(s));
    } else if (channels.subjects.length + channels.streams.length > 0 && !this.warnedNoNats) {
      this.warnedNoNats = true;
      this.logger.warn({ subjects: channels.subjects.length, streams: channels.streams.length }, 'the deployment publishes KV events on NATS but no NATS server is configured (discovery.dynamo.nats)');
    }
    for (const e of channels.zmq) wanted.set(`zmq:${e}`, () => this.connectZmq(e));
    for (const e of channels.loadZmq) wanted.set(`load-zmq:${e}`, () => this.connectZmqLoad(e));
    const stopping: Promise<void>[] = [];
    for (const [key, l] of this.live) {
      if (wanted.has(key)) continue;
      this.live.delete(key);
      l.channel?.close();
      stopping.push(l.stop());
    }
    for (const [key, start] of wanted) if (!this.live.has(key)) this.live.set(key, start());
    await Promise.all(stopping);
    // Sources of workers that left are forgotten (their pool reset them), with what each channel held
    // for them, and their load reports.
    for (const l of this.live.values()) l.channel?.forgetWorkers(workers);
    for (const [key, s] of this.sourceStats) if (!workers.has(s.source.workerId)) this.sourceStats.delete(key);
    for (const id of this.reported.keys()) if (!workers.has(id)) this.reported.delete(id);
    for (const feed of this.loadFeeds) feed.forgetWorkers(workers);
  }
  private warnedNoNats = false;

  overflowed(source: SourceKey, batches: number): void {
    this.stats0(source).overflows += batches;
    this.resetSource(source, 'overflow');
  }

  private resetSource(source: SourceKey, reason: 'overflow' | 'restart' = 'restart'): void {
    this.stats0(source).resets += 1;
    for (const l of this.live.values()) l.channel?.forgetSource(source);
    this.options.sink.reset(source, reason);
  }

  reportedBlocks(): ReadonlyMap<bigint, ReadonlyMap<number, number>> {
    return this.reported;
  }

  stats(): SourceStats[] {
    return [...this.sourceStats.values()].map((s) => ({ ...s, source: { ...s.source } }));
  }

  metrics(): DynamoPlaneMetrics {
    let subjects = 0;
    let streams = 0;
    let zmq = 0;
    for (const [key, l] of this.live) {
      if (key.startsWith('load') || !l.reading) continue;
      if (key.startsWith('nats:')) subjects += 1;
      else if (key.startsWith('js:')) streams += 1;
      else zmq += 1;
    }
    return { ...this.counters, natsConnected: this.natsConnected, natsReconnects: this.natsReconnects, subjects, streams, zmqPublishers: zmq };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const live = [...this.live.values()];
    this.live.clear();
    for (const l of live) l.channel?.close();
    await Promise.all(live.map((l) => l.stop()));
    const nc = await this.nats?.catch(() => undefined);
    await nc?.close().catch(() => undefined);
  }

  private stats0(source: SourceKey): SourceStats {
    const key = sourceKey(source);
    let s = this.sourceStats.get(key);
    if (!s) {
      s = { source, events: 0, blocks: 0, malformed: 0, rejectedRanks: 0, overflows: 0, outOfOrder: 0, refusedPeers: 0, gaps: 0, replays: 0, resets: 0, ignored: 0, droppedBlockSize: 0, connections: 0, lastSequence: null, mismatchedBlockSize: 0 };
      this.sourceStats.set(key, s);
    }
    return s;
  }

  /** The one NATS connection (reconnecting forever, as Dynamo's runtime does). */
  private connection(): Promise<NatsConnection> {
    this.nats ??= (async () => {
      for (;;) {
        try {
          const nc = await connect({
            servers: this.options.natsServers!,
            name: 'kv-dc-relay',
            maxReconnectAttempts: -1,
            reconnectTimeWait: DYNAMO_NATS_RECONNECT_WAIT_MS,
            waitOnFirstConnect: true,
          });
          this.natsConnected = true;
          this.logger.info({ servers: this.options.natsServers }, 'connected to NATS');
          void this.watchStatus(nc);
          return nc;
        } catch (err) {
          if (this.closed) throw err;
          this.logger.error({ err: (err as Error).message }, 'cannot connect to NATS; retrying');
          await new Promise((resolve) => setTimeout(resolve, DYNAMO_NATS_RECONNECT_WAIT_MS));
        }
      }
    })();
    return this.nats;
  }

  private async watchStatus(nc: NatsConnection): Promise<void> {
    for await (const s of nc.status()) {
      if (s.type === 'disconnect') {
        this.natsConnected = false;
        // Dynamo's relay clears the observations when its kv_metrics subscription drops: a rank is
        // observed again with its worker's next report (a heartbeat at least every 10 s).
        this.reported.clear();
        this.logger.warn({}, 'NATS connection lost; reconnecting (a publisher that sent meanwhile shows a gap and its sources are reset)');
      } else if (s.type === 'reconnect') {
        this.natsConnected = true;
        this.natsReconnects += 1;
        this.logger.info({}, 'NATS reconnected');
      }
    }
  }

  private subscribe(subject: string): Live {
    const channel = new EventChannel(subject, 'envelope', this.ctx);
    let sub: Subscription | undefined;
    let stopped = false;
    const live: Live = {
      channel,
      reading: false,
      stop: async () => {
        stopped = true;
        sub?.unsubscribe();
      },
    };
    void this.connection().then(
      async (nc) => {
        if (stopped) return;
        sub = nc.subscribe(subject, { callback: (err, msg) => (err ? this.logger.warn({ subject, err: err.message }, 'NATS subscription error') : channel.push(msg.data)) });
        // The server has the subscription once a flush after it returns.
        await nc.flush();
        live.reading = !stopped;
      },
      () => undefined,
    );
    return live;
  }

  /** A serving endpoint's kv_metrics subject: each worker rank's latest kv_used_blocks (load-feed.ts). */
  private subscribeLoad(subject: string): Live {
    const feed = this.loadFeed(subject);
    let sub: Subscription | undefined;
    let stopped = false;
    void this.connection().then(
      (nc) => {
        if (stopped) return;
        sub = nc.subscribe(subject, { callback: (err, msg) => void (err ? undefined : feed.receive(decodeActiveLoad(msg.data))) });
      },
      () => undefined,
    );
    return {
      reading: true,
      stop: async () => {
        stopped = true;
        this.loadFeeds.delete(feed);
        sub?.unsubscribe();
      },
    };
  }

  private loadFeed(channel: string): LoadFeed {
    const feed = new LoadFeed(channel, this.reported, () => this.workers, this.counters, this.ctx.warn);
    this.loadFeeds.add(feed);
    return feed;
  }

  /**
   * A JetStream stream from its start, by an ordered consumer (the client recreates it where it was
   * if the server loses it). The stream's creation time names its publisher, so a recreated stream
   * (sequences from 1 again) is a restart of its sources, not a run of duplicates.
   */
  private consume(stream: string): Live {
    let messages: ConsumerMessages | undefined;
    let stopped = false;
    let channel = new EventChannel(stream, 'json', this.ctx);
    const live: Live = {
      reading: true, // a stream is read from its start: nothing published before is lost
      channel,
      stop: async () => {
        stopped = true;
        await messages?.close();
      },
    };
    void (async () => {
      let nc: NatsConnection;
      try {
        nc = await this.connection();
      } catch {
        return;
      }
      const js = jetstream(nc);
      let created = '';
      while (!stopped && !this.closed) {
        try {
          const info = await (await jetstreamManager(nc)).streams.info(stream);
          if (created !== '' && created !== info.created) {
            // Recreated: a new channel (its own publisher) so the stream's sequences start afresh.
            channel.close();
            channel = new EventChannel(`${stream}@${info.created}`, 'json', this.ctx);
            live.channel = channel;
          }
          created = info.created;
          const consumer = await js.consumers.get(stream, { deliver_policy: DeliverPolicy.All });
          const current = channel;
          // A short pull expiry gives a short heartbeat: a consumer the server lost is noticed and recreated within seconds.
          messages = await consumer.consume({ expires: DYNAMO_JETSTREAM_PULL_EXPIRES_MS, callback: (m) => current.push(m.data, m.info.streamSequence) });
          await messages.closed();
        } catch (err) {
          if (stopped || this.closed) return;
          // Most often the stream does not exist yet (its first worker creates it when it publishes).
          void err;
        }
        if (!stopped) await new Promise((resolve) => setTimeout(resolve, DYNAMO_STREAM_RETRY_MS));
      }
    })();
    return live;
  }

  /**
   * A worker's kv_metrics publisher on the ZMQ plane: its ranks' latest kv_used_blocks, as on NATS. A
   * message whose envelope names another topic, publisher or sequence than its frames (Dynamo's
   * IdentityMismatch) is a fault of the publisher, as is a dropped connection (its SUB's monitor saw
   * ZMQ_EVENT_DISCONNECTED: zmq_transport.rs `monitor_connection`): the load it reported is cleared
   * (load-feed.ts).
   */
  private connectZmqLoad(endpoint: string): Live {
    const feed = this.loadFeed(endpoint);
    const stop = this.readZmq(
      endpoint,
      KV_METRICS_TOPIC,
      MAX_ACTIVE_LOAD_MESSAGE_BYTES,
      (publisher, sequence, frame) => feed.receive(decodeZmqActiveLoad(KV_METRICS_TOPIC, publisher.readBigUInt64BE(0), sequence.readBigUInt64BE(0), frame)),
      () => feed.fault('connection lost'),
    );
    return {
      reading: true,
      stop: async () => {
        this.loadFeeds.delete(feed);
        await stop();
      },
    };
  }

  private connectZmq(endpoint: string): Live {
    const channel = new EventChannel(endpoint, 'framed', this.ctx);
    return { reading: true, channel, stop: this.readZmq(endpoint, KV_EVENT_TOPIC, INGEST_MAX_MESSAGE_BYTES, (publisher, sequence, frame) => channel.push(frame, -1, publisher, sequence)) };
  }

  /**
   * A SUB on one ZMQ event-plane publisher's `topic`, handing each message's id frames and 4th frame to
   * `onMessage` (a message of another shape is counted malformed: zmq-wire.ts) and telling
   * `onDisconnect` when the connection to the publisher drops (the SUB reconnects by itself); returns
   * what stops it.
   */
  private readZmq(
    endpoint: string,
    topic: string,
    maxMessageSize: number,
    onMessage: (publisher: Buffer, sequence: Buffer, frame: Buffer) => void,
    onDisconnect?: () => void,
  ): () => Promise<void> {
    const socket = new Subscriber({ maxMessageSize });
    if (onDisconnect) void watchDisconnects(socket, onDisconnect);
    socket.connect(endpoint);
    // As Dynamo's SUB: the publisher filters by the topic's prefix; the exact topic is checked below.
    socket.subscribe(topic);
    const topicFrame = Buffer.from(topic);
    void (async () => {
      try {
        // receive() itself, not `for await`: the socket's async iterator adds a promise and an object
        // per message to receive()'s own (what a bare zeromq.js subscriber pays).
        for (;;) {
          const frames = await socket.receive();
          const wrong = zmqWireError(frames, topicFrame);
          if (wrong !== undefined) {
            this.counters.malformed += 1;
            this.ctx.warn({ channel: endpoint, err: wrong }, 'malformed Dynamo ZMQ event-plane message');
            continue;
          }
          onMessage(frames[1], frames[2], frames[3]);
        }
      } catch {
        // closed
      }
    })();
    return async () => {
      socket.close();
    };
  }
}

/**
 * Calls `onDisconnect` at each ZMQ_EVENT_DISCONNECTED of the socket (its monitor, read until the socket
 * closes). The observer is read by receive(), not events.on(): zeromq.js defines its emitter getter
 * once per process on the native Observer's prototype, with the require() of the first module
 * instance that loaded it (a later instance, as in a jest worker's next test file, gets none).
 */
async function watchDisconnects(socket: Subscriber, onDisconnect: () => void): Promise<void> {
  try {
    for (;;) {
      const event = await socket.events.receive();
      if (event.type === 'end') return;
      if (event.type === 'disconnect') onDisconnect();
    }
  } catch {
    // closed
  }
}
