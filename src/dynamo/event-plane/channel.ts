// One event-plane channel's messages (a NATS subject, a JetStream stream, a ZMQ publisher): each
// message is copied into an arena as it arrives; once the turn's messages are in (setImmediate) they
// are decoded natively in one call (src/native/router-event-decoder.ts), put in order per publisher
// (order.ts), checked against the deployment's workers and ranks, and handed to the sink as one packed
// burst per worker: one hand-off per worker per turn, no JS object per event or block.
import { monotonicMs } from '../../clock';
import { recordU64, routerEventRecord as R, RouterEventBatchDecoder, type RouterEventFormat } from '../../native';
import { MESSAGE_INFO_STRIDE, type IngestSink, type PackedEngineEvents, type SourceKey, type SourceStats } from '../../ingest/types';
import type { DynamoMetrics } from '../../metrics/registry';
import type { WorkerRanks } from '../discovery/project';
import { PublisherOrder, sourceKey } from './order';

/** What a channel shares with the rest of the plane. */
export interface ChannelContext {
  sink: IngestSink;
  decoder: RouterEventBatchDecoder;
  /** Publishers remembered per channel (order.ts). */
  maxPublishers: number;
  /** The deployment's workers (events of others, or of undeclared ranks, are not applied). */
  workers(): ReadonlyMap<bigint, WorkerRanks>;
  stats(source: SourceKey): SourceStats;
  counters: PlaneCounters;
  warn(obj: object, msg: string): void;
}

/** Event-plane counters that belong to no source. */
export type PlaneCounters = Pick<DynamoMetrics, 'messages' | 'malformed' | 'otherTopic' | 'unknownWorker' | 'duplicates' | 'gaps'>;

/** Messages of one turn held before decoding; beyond these bounds the turn is decoded at once. */
const MAX_TURN_MESSAGES = 4096;
const MAX_TURN_BYTES = 8 * 1024 * 1024;

export class EventChannel {
  private arena = new Uint8Array(64 * 1024);
  private ends = new Uint32Array(256);
  /** Per held message: its order sequence when the transport numbers it (JetStream), else -1. */
  private sequences = new Float64Array(256);
  private count = 0;
  private bytes = 0;
  private scheduled = false;
  private closed = false;
  private readonly bursts = new Map<string, WorkerBurst>();
  private readonly order: PublisherOrder;

  constructor(
    readonly name: string,
    private readonly format: RouterEventFormat,
    private readonly ctx: ChannelContext,
  ) {
    this.order = new PublisherOrder(
      {
        gap: (publisher, missed) => {
          ctx.counters.gaps += 1;
          ctx.warn({ channel: name, publisher, missed }, 'Dynamo KV-event publisher skipped sequences: its sources are reset');
        },
        reset: (source, reason) => {
          // What this turn decoded before the reset reaches the sink before it (order per source).
          this.deliver();
          const stats = ctx.stats(source);
          stats.resets += 1;
          if (reason === 'gap') stats.gaps += 1;
          try {
            ctx.sink.reset(source, reason);
          } catch (err) {
            ctx.warn({ channel: name, err: String(err) }, 'KV-event sink failed to reset a source');
          }
        },
      },
      ctx.maxPublishers,
    );
  }

  /** The source was reset elsewhere (overflow, a lease ended): its next publisher starts it afresh. */
  forgetSource(source: SourceKey): void {
    this.order.forgetSource(source);
  }

  /** Holds one message (copied). `sequence`: the transport's own order (JetStream stream sequence), if any. */
  push(message: Uint8Array, sequence = -1): void {
    if (this.closed) return;
    if (this.count === this.ends.length) {
      this.ends = grow(this.ends, this.count * 2);
      this.sequences = grow(this.sequences, this.count * 2);
    }
    if (this.bytes + message.length > this.arena.length) {
      const next = new Uint8Array(Math.max(2 * this.arena.length, this.bytes + message.length));
      next.set(this.arena.subarray(0, this.bytes));
      this.arena = next;
    }
    this.arena.set(message, this.bytes);
    this.bytes += message.length;
    this.ends[this.count] = this.bytes;
    this.sequences[this.count] = sequence;
    this.count += 1;
    if (this.count >= MAX_TURN_MESSAGES || this.bytes >= MAX_TURN_BYTES) return this.flush();
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.flush());
    }
  }

  close(): void {
    this.closed = true;
    this.count = 0;
    this.bytes = 0;
  }

  private flush(): void {
    this.scheduled = false;
    if (this.count === 0 || this.closed) return;
    const count = this.count;
    const batch = this.ctx.decoder.decode(this.arena, this.ends, count, this.format);
    const { records, meta, words } = batch;
    const { counters } = this.ctx;
    const workers = this.ctx.workers();
    const receivedAtMs = monotonicMs();
    let metaStart = 0;
    let wordsStart = 0;
    counters.messages += count;
    for (let i = 0; i < count; i++) {
      const at = i * R.stride;
      const metaEnd = records[at + R.metaEnd];
      const wordsEnd = records[at + R.wordsEnd];
      const status = records[at + R.status];
      const flags = records[at + R.flags];
      const from = metaStart;
      const fromWords = wordsStart;
      metaStart = metaEnd;
      wordsStart = wordsEnd;
      if (status === R.malformed) {
        counters.malformed += 1;
        this.ctx.warn({ channel: this.name, err: this.ctx.decoder.errorOf(i) }, 'malformed Dynamo KV-event message');
        continue;
      }
      if (status === R.otherTopic) {
        counters.otherTopic += 1;
        continue;
      }
      const workerId = recordU64(records, at + R.workerLo);
      const dpRank = records[at + R.dpRank];
      const ranks = workers.get(workerId);
      if (!ranks) {
        counters.unknownWorker += 1;
        continue;
      }
      const source = { workerId, dpRank };
      const stats = this.ctx.stats(source);
      if (dpRank < ranks.dpStartRank || dpRank >= ranks.dpStartRank + ranks.dpSize) {
        stats.rejectedRanks += 1;
        continue;
      }
      // Order: the envelope's publisher and sequence; a JetStream message's stream sequence; a bare
      // JSON event (Dynamo before the event plane) has neither and is applied as it comes.
      const transportSeq = this.sequences[i];
      let publisher: string | undefined;
      let sequence = 0;
      if (transportSeq >= 0) {
        publisher = `stream:${this.name}`;
        sequence = transportSeq;
      } else if (flags & R.hasEnvelope) {
        publisher = `${records[at + R.publisherHi]}:${records[at + R.publisherLo]}`;
        sequence = records[at + R.sequenceHi] * 2 ** 32 + records[at + R.sequenceLo];
      }
      if (publisher !== undefined) {
        // A reset the order calls for reaches the sink after what this turn delivered before it.
        const verdict = this.order.accept(publisher, sequence, source);
        if (verdict === 'duplicate') {
          counters.duplicates += 1;
          stats.outOfOrder += 1;
          continue;
        }
      }
      stats.lastSequence = BigInt(sequence);
      if (!(flags & R.counted)) {
        stats.ignored += 1;
        continue;
      }
      stats.events += 1;
      stats.blocks += records[at + R.blocks];
      const key = sourceKey({ workerId, dpRank: 0 });
      let burst = this.bursts.get(key);
      if (!burst) {
        burst = new WorkerBurst(workerId);
        this.bursts.set(key, burst);
      }
      burst.add(meta.subarray(from, metaEnd), words.subarray(fromWords, wordsEnd), BigInt(sequence), dpRank, receivedAtMs);
    }
    this.count = 0;
    this.bytes = 0;
    this.deliver();
  }

  /** Hands every worker's burst to the sink (before any reset that follows). */
  deliver(): void {
    for (const burst of this.bursts.values()) {
      if (burst.isEmpty) continue;
      try {
        void this.ctx.sink.events(burst.view());
      } catch (err) {
        this.ctx.warn({ channel: this.name, err: String(err) }, 'KV-event sink rejected a batch');
      }
      burst.clear();
    }
  }
}

/** One worker's events of a turn, in the pool's packed layout (packed_batch.h). */
class WorkerBurst {
  private meta = new Uint32Array(512);
  private words = new BigUint64Array(4096);
  private sequences = new BigUint64Array(64);
  private info = new Uint32Array(64 * MESSAGE_INFO_STRIDE);
  private metaLength = 0;
  private wordsLength = 0;
  private messages = 0;
  private receivedAtMs = 0;

  constructor(private readonly workerId: bigint) {}

  get isEmpty(): boolean {
    return this.messages === 0;
  }

  add(meta: Uint32Array, words: BigUint64Array, sequence: bigint, dpRank: number, receivedAtMs: number): void {
    if (this.messages === 0) this.receivedAtMs = receivedAtMs;
    if (this.metaLength + meta.length > this.meta.length) this.meta = grow(this.meta, 2 * (this.metaLength + meta.length), this.metaLength);
    if (this.wordsLength + words.length > this.words.length) this.words = grow(this.words, 2 * (this.wordsLength + words.length), this.wordsLength);
    if (this.messages === this.sequences.length) {
      this.sequences = grow(this.sequences, 2 * this.messages, this.messages);
      this.info = grow(this.info, 2 * this.messages * MESSAGE_INFO_STRIDE, this.messages * MESSAGE_INFO_STRIDE);
    }
    this.meta.set(meta, this.metaLength);
    this.words.set(words, this.wordsLength);
    this.metaLength += meta.length;
    this.wordsLength += words.length;
    this.sequences[this.messages] = sequence;
    this.info[this.messages * MESSAGE_INFO_STRIDE] = dpRank;
    this.info[this.messages * MESSAGE_INFO_STRIDE + 1] = this.metaLength;
    this.messages += 1;
  }

  view(): PackedEngineEvents {
    return {
      workerId: this.workerId,
      meta: this.meta.subarray(0, this.metaLength),
      words: this.words.subarray(0, this.wordsLength),
      messages: this.messages,
      sequences: this.sequences.subarray(0, this.messages),
      messageInfo: this.info.subarray(0, this.messages * MESSAGE_INFO_STRIDE),
      droppedBlockSize: 0,
      receivedAtMs: this.receivedAtMs,
    };
  }

  clear(): void {
    this.metaLength = 0;
    this.wordsLength = 0;
    this.messages = 0;
  }
}

type Growable = Uint32Array | Float64Array | BigUint64Array;

function grow<T extends Growable>(array: T, size: number, keep = array.length): T {
  const out = new (array.constructor as new (n: number) => T)(Math.max(size, 1));
  (out as Growable).set(array.subarray(0, keep) as never);
  return out;
}
