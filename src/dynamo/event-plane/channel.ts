// One event-plane channel's messages (a NATS subject, a JetStream stream, a ZMQ publisher): each
// message is copied into an arena as it arrives; once the turn's messages are in (setImmediate) they
// are decoded natively in one call (src/native/router-event-decoder.ts), put in order per publisher
// (order.ts), checked against the deployment's workers and ranks, and handed to the sink as one packed
// burst per worker: one hand-off per worker per turn, no JS object per event or block. Per message the
// turn's loop allocates nothing either: what a (worker, rank) needs (its stats, burst, key strings) is
// worked out once per turn (TurnSource), and a worker's consecutive messages of one rank are one batch.
import { monotonicMs } from '../../clock';
import { INGEST_RETAINED_BUFFER_BYTES } from '../../config/defaults';
import { recordU64, routerEventRecord, RouterEventBatchDecoder, type RouterEventFormat } from '../../native';
import { MESSAGE_INFO_STRIDE, type IngestSink, type PackedEngineEvents, type SourceKey, type SourceStats } from '../../ingest/types';
import type { DynamoMetrics } from '../../metrics/registry';
import type { WorkerRanks } from '../discovery/project';
import { PublisherOrder, sourceKey } from './order';
import type { SourceGate } from './source-gate';
import { u32Hi, u32Lo } from './zmq-wire';

/** The record layout copied once into a plain object: the native index's re-export is a getter, read per field per message otherwise. */
const R: typeof routerEventRecord = { ...routerEventRecord };

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
  /** The deployment's advertised event sources (v1/event_sources), where it has any. */
  gate: SourceGate;
  warn(obj: object, msg: string): void;
}

/** Event-plane counters that belong to no source. */
export type PlaneCounters = Pick<DynamoMetrics, 'messages' | 'malformed' | 'otherTopic' | 'unknownWorker' | 'duplicates' | 'gaps' | 'loadFaults'>;

/** Messages of one turn held before decoding; beyond these bounds the turn is decoded at once. */
const MAX_TURN_MESSAGES = 4096;
const MAX_TURN_BYTES = 8 * 1024 * 1024;
const INITIAL_ARENA_BYTES = 64 * 1024;

export class EventChannel {
  private arena = new Uint8Array(INITIAL_ARENA_BYTES);
  private ends = new Uint32Array(256);
  /** Per held message: its order sequence when the transport numbers it (JetStream), else -1. */
  private sequences = new Float64Array(256);
  /**
   * Per held ZMQ message: its publisher_id and sequence frames as u32 words (hi, lo, hi, lo), which its
   * envelope must repeat (zmq-wire.ts); undefined on a channel of another transport.
   */
  private wire: Uint32Array | undefined;
  private count = 0;
  private bytes = 0;
  private scheduled = false;
  private closed = false;
  /** Per worker of the deployment, its burst of the turn (kept between turns, with the arrays it grew up to INGEST_RETAINED_BUFFER_BYTES each; dropped when the worker leaves). */
  private readonly bursts = new Map<bigint, WorkerBurst>();
  /** The turn's (worker, rank)s, by turnKey; empty between turns. */
  private readonly turn = new Map<number, TurnSource>();
  /** A JetStream stream's messages have one publisher: the stream. */
  private readonly streamPublisher: string;
  private readonly order: PublisherOrder;

  constructor(
    readonly name: string,
    private readonly format: RouterEventFormat,
    private readonly ctx: ChannelContext,
  ) {
    this.streamPublisher = `stream:${name}`;
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

  /**
   * Forgets what the channel holds for workers the deployment no longer has (their leases ended:
   * Dynamo workers come back under new instance ids, so a relay with churning workers would otherwise
   * grow without bound): their bursts, their sources' order and the publishers that fed only them.
   */
  forgetWorkers(workers: ReadonlyMap<bigint, WorkerRanks>): void {
    for (const id of this.bursts.keys()) if (!workers.has(id)) this.bursts.delete(id);
    this.order.forgetWorkers((id) => !workers.has(id));
  }

  /** What the channel holds between turns (the bounds' tests): workers with a burst, sources and publishers in its order, bytes of its arrays. */
  held(): { workers: number; sources: number; publishers: number; bytes: number } {
    let bytes = this.arena.byteLength + this.ends.byteLength + this.sequences.byteLength;
    for (const b of this.bursts.values()) bytes += b.byteLength;
    return { workers: this.bursts.size, sources: this.order.sourceCount, publishers: this.order.publisherCount, bytes };
  }

  /**
   * Holds one message (copied). `sequence`: the transport's own order (JetStream stream sequence), if
   * any. `wirePublisher`, `wireSequence`: a ZMQ message's 8-byte id frames, checked against its envelope.
   */
  push(message: Uint8Array, sequence = -1, wirePublisher?: Uint8Array, wireSequence?: Uint8Array): void {
    if (this.closed) return;
    if (this.count === this.ends.length) {
      this.ends = grow(this.ends, this.count * 2);
      this.sequences = grow(this.sequences, this.count * 2);
      if (this.wire) this.wire = grow(this.wire, this.count * 8);
    }
    if (wirePublisher && wireSequence) {
      this.wire ??= new Uint32Array(4 * this.ends.length);
      const w = 4 * this.count;
      this.wire[w] = u32Hi(wirePublisher);
      this.wire[w + 1] = u32Lo(wirePublisher);
      this.wire[w + 2] = u32Hi(wireSequence);
      this.wire[w + 3] = u32Lo(wireSequence);
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
    const { records, meta } = batch;
    // The words as u32 pairs: a burst copies them bit for bit without a BigInt per word.
    const words = new Uint32Array(batch.words.buffer, batch.words.byteOffset, 2 * batch.words.length);
    const { counters } = this.ctx;
    const workers = this.ctx.workers();
    const receivedAtMs = monotonicMs();
    const turn = this.turn;
    const wire = this.wire;
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
      if (wire !== undefined) {
        const w = 4 * i;
        if (
          !(flags & R.hasEnvelope) ||
          records[at + R.publisherHi] !== wire[w] ||
          records[at + R.publisherLo] !== wire[w + 1] ||
          records[at + R.sequenceHi] !== wire[w + 2] ||
          records[at + R.sequenceLo] !== wire[w + 3]
        ) {
          counters.malformed += 1;
          this.ctx.warn(
            {
              channel: this.name,
              frames: { publisher: wordsU64(wire[w], wire[w + 1]), sequence: wordsU64(wire[w + 2], wire[w + 3]) },
              envelope: { publisher: wordsU64(records[at + R.publisherHi], records[at + R.publisherLo]), sequence: wordsU64(records[at + R.sequenceHi], records[at + R.sequenceLo]) },
            },
            'malformed Dynamo KV-event message: its ZMQ frames name another publisher or sequence than its envelope',
          );
          continue;
        }
      }
      const workerLo = records[at + R.workerLo];
      const workerHi = records[at + R.workerHi];
      const dpRank = records[at + R.dpRank];
      // Keyed by the worker's low word and the rank (an exact key would cost a BigInt or a string per
      // message); a collision only replaces the entry.
      const turnKey = workerLo + (dpRank % 0x200000) * 0x100000000;
      let t = turn.get(turnKey);
      if (t === undefined || t.workerHi !== workerHi || t.workerLo !== workerLo || t.dpRank !== dpRank) {
        if (t !== undefined) t.commit();
        t = this.turnSource(recordU64(records, at + R.workerLo), workerHi, workerLo, dpRank, workers);
        turn.set(turnKey, t);
      }
      if (t.stats === undefined) {
        counters.unknownWorker += 1;
        continue;
      }
      if (!t.inRanks || t.ambiguous) {
        // An Ambiguous rank's publisher is not known (fail closed): counted as a rank not accepted.
        t.stats.rejectedRanks += 1;
        continue;
      }
      // Order: the envelope's publisher and sequence; a JetStream message's stream sequence; a bare
      // JSON event (Dynamo before the event plane) has neither and is applied as it comes.
      const transportSeq = this.sequences[i];
      let publisher: string | undefined;
      let sequence = 0;
      if (transportSeq >= 0) {
        publisher = this.streamPublisher;
        sequence = transportSeq;
      } else if (flags & R.hasEnvelope) {
        publisher = t.publisherOf(records[at + R.publisherHi], records[at + R.publisherLo]);
        if (t.refusal !== undefined) {
          counters.malformed += 1;
          t.stats.malformed += 1;
          this.ctx.warn(
            { channel: this.name, publisher: wordsU64(records[at + R.publisherHi], records[at + R.publisherLo]), source: t.key, ...t.refusal },
            'malformed Dynamo KV-event message: its publisher is not the one v1/event_sources advertises for its worker rank',
          );
          continue;
        }
        sequence = records[at + R.sequenceHi] * 2 ** 32 + records[at + R.sequenceLo];
      }
      if (publisher !== undefined) {
        // A reset the order calls for reaches the sink after what this turn delivered before it.
        const verdict = this.order.accept(publisher, sequence, t.source, t.key);
        if (verdict === 'duplicate') {
          counters.duplicates += 1;
          t.stats.outOfOrder += 1;
          continue;
        }
      }
      t.lastSequence = sequence;
      if (!(flags & R.counted)) {
        t.stats.ignored += 1;
        continue;
      }
      t.stats.events += 1;
      t.stats.blocks += records[at + R.blocks];
      t.burst.add(meta, from, metaEnd, words, fromWords, wordsEnd, sequence, dpRank, receivedAtMs);
    }
    for (const t of turn.values()) t.commit();
    turn.clear();
    this.count = 0;
    this.bytes = 0;
    this.deliver();
    // Arrays an outsized turn grew are given back (the bursts' in their clear()); those sized per
    // message stay under 64 KiB (MAX_TURN_MESSAGES).
    if (this.arena.byteLength > INGEST_RETAINED_BUFFER_BYTES) this.arena = new Uint8Array(INITIAL_ARENA_BYTES);
    this.ctx.decoder.trim();
  }

  /** What the turn's messages of one (worker, rank) share; `stats` undefined for a worker the deployment does not have. */
  private turnSource(workerId: bigint, workerHi: number, workerLo: number, dpRank: number, workers: ReadonlyMap<bigint, WorkerRanks>): TurnSource {
    const ranks = workers.get(workerId);
    const source = { workerId, dpRank };
    if (ranks === undefined) return new TurnSource(workerHi, workerLo, dpRank, source, undefined, false, undefined, this.ctx.gate);
    let burst = this.bursts.get(workerId);
    if (!burst) {
      burst = new WorkerBurst(workerId);
      this.bursts.set(workerId, burst);
    }
    const inRanks = dpRank >= ranks.dpStartRank && dpRank < ranks.dpStartRank + ranks.dpSize;
    return new TurnSource(workerHi, workerLo, dpRank, source, this.ctx.stats(source), inRanks, burst, this.ctx.gate);
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

/** What one turn's messages of a (worker, rank) share, worked out at its first message. */
class TurnSource {
  readonly key: string;
  /** Its rank is Ambiguous (v1/event_sources): its events are dropped. */
  readonly ambiguous: boolean;
  /**
   * Why the current publisher may not speak for this source (set by publisherOf): it is advertised for
   * another source, or this source is Active with another publisher advertised.
   */
  refusal: { advertisedFor: string } | { rankPublisher: string } | undefined;
  /** The sequence of its last message this turn (-1: none), written to its stats once per turn. */
  lastSequence = -1;
  private publisherHi = -1;
  private publisherLo = -1;
  private publisher = '';

  constructor(
    readonly workerHi: number,
    readonly workerLo: number,
    readonly dpRank: number,
    readonly source: SourceKey,
    readonly stats: SourceStats | undefined,
    readonly inRanks: boolean,
    /** Its worker's burst (undefined with stats). */
    private readonly workerBurst: WorkerBurst | undefined,
    private readonly gate: SourceGate,
  ) {
    this.key = sourceKey(source);
    this.ambiguous = gate.isAmbiguous(this.key);
  }

  get burst(): WorkerBurst {
    return this.workerBurst!;
  }

  /** The order's name of an envelope publisher, made once per turn and publisher. */
  publisherOf(hi: number, lo: number): string {
    if (hi !== this.publisherHi || lo !== this.publisherLo) {
      this.publisherHi = hi;
      this.publisherLo = lo;
      this.publisher = `${hi}:${lo}`;
      const owner = this.gate.ownerOf(this.publisher);
      const bound = owner === undefined ? this.gate.publisherFor(this.key) : undefined;
      this.refusal =
        owner !== undefined && owner !== this.key ? { advertisedFor: owner } : bound !== undefined && bound !== this.publisher ? { rankPublisher: bound } : undefined;
    }
    return this.publisher;
  }

  commit(): void {
    if (this.lastSequence >= 0 && this.stats) this.stats.lastSequence = BigInt(this.lastSequence);
    this.lastSequence = -1;
  }
}

/**
 * One worker's events of a turn, in the pool's packed layout (packed_batch.h). Consecutive messages of
 * one rank are one batch of the pool's (a Dynamo message carries a single event, where a vLLM batch
 * carries many; the pool's mailbox and the hand-off count batches, and counted per event a turn's
 * small messages filled their bounds long before their events or blocks did).
 */
const INITIAL_META = 512;
const INITIAL_WORDS = 4096;

class WorkerBurst {
  private meta = new Uint32Array(INITIAL_META);
  private words = new Uint32Array(2 * INITIAL_WORDS);
  /** Per batch: the sequence of its last message, its rank, where its events end in meta. */
  private batchSequences = new Float64Array(64);
  private info = new Uint32Array(64 * MESSAGE_INFO_STRIDE);
  private sequences = new BigUint64Array(64);
  private metaLength = 0;
  private wordsLength = 0;
  private batches = 0;
  private receivedAtMs = 0;

  constructor(private readonly workerId: bigint) {}

  get isEmpty(): boolean {
    return this.batches === 0;
  }

  /** Appends meta[metaFrom, metaTo) and the u64 words [wordsFrom, wordsTo) of `words` (u32 pairs). */
  add(meta: Uint32Array, metaFrom: number, metaTo: number, words: Uint32Array, wordsFrom: number, wordsTo: number, sequence: number, dpRank: number, receivedAtMs: number): void {
    if (this.batches === 0) this.receivedAtMs = receivedAtMs;
    const metaLength = this.metaLength + metaTo - metaFrom;
    const wordsLength = this.wordsLength + 2 * (wordsTo - wordsFrom);
    if (metaLength > this.meta.length) this.meta = grow(this.meta, 2 * metaLength, this.metaLength);
    if (wordsLength > this.words.length) this.words = grow(this.words, 2 * wordsLength, this.wordsLength);
    // A few slots per message: a loop costs less than two subarrays and set().
    for (let i = metaFrom, o = this.metaLength; i < metaTo; i++, o++) this.meta[o] = meta[i];
    for (let i = 2 * wordsFrom, o = this.wordsLength; o < wordsLength; i++, o++) this.words[o] = words[i];
    this.metaLength = metaLength;
    this.wordsLength = wordsLength;
    const last = this.batches - 1;
    if (last < 0 || this.info[last * MESSAGE_INFO_STRIDE] !== dpRank) {
      if (this.batches === this.batchSequences.length) {
        this.batchSequences = grow(this.batchSequences, 2 * this.batches, this.batches);
        this.info = grow(this.info, 2 * this.batches * MESSAGE_INFO_STRIDE, this.batches * MESSAGE_INFO_STRIDE);
      }
      this.info[this.batches * MESSAGE_INFO_STRIDE] = dpRank;
      this.batches += 1;
    }
    this.batchSequences[this.batches - 1] = sequence;
    this.info[(this.batches - 1) * MESSAGE_INFO_STRIDE + 1] = metaLength;
  }

  view(): PackedEngineEvents {
    if (this.sequences.length < this.batches) this.sequences = new BigUint64Array(this.batchSequences.length);
    for (let i = 0; i < this.batches; i++) this.sequences[i] = BigInt(this.batchSequences[i]);
    return {
      workerId: this.workerId,
      meta: this.meta.subarray(0, this.metaLength),
      words: new BigUint64Array(this.words.buffer, 0, this.wordsLength / 2),
      messages: this.batches,
      sequences: this.sequences.subarray(0, this.batches),
      messageInfo: this.info.subarray(0, this.batches * MESSAGE_INFO_STRIDE),
      droppedBlockSize: 0,
      receivedAtMs: this.receivedAtMs,
    };
  }

  get byteLength(): number {
    return this.meta.byteLength + this.words.byteLength + this.batchSequences.byteLength + this.info.byteLength + this.sequences.byteLength;
  }

  /** Empties the burst; arrays an outsized turn grew past INGEST_RETAINED_BUFFER_BYTES are given back (those sized per batch stay under 64 KiB: MAX_TURN_MESSAGES). */
  clear(): void {
    this.metaLength = 0;
    this.wordsLength = 0;
    this.batches = 0;
    if (this.meta.byteLength > INGEST_RETAINED_BUFFER_BYTES) this.meta = new Uint32Array(INITIAL_META);
    if (this.words.byteLength > INGEST_RETAINED_BUFFER_BYTES) this.words = new Uint32Array(2 * INITIAL_WORDS);
  }
}

/** A u64 from its two u32 words, as a decimal string (for a log line). */
const wordsU64 = (hi: number, lo: number): string => ((BigInt(hi) << 32n) | BigInt(lo)).toString();

type Growable = Uint32Array | Float64Array;

function grow<T extends Growable>(array: T, size: number, keep = array.length): T {
  const out = new (array.constructor as new (n: number) => T)(Math.max(size, 1));
  (out as Growable).set(array.subarray(0, keep) as never);
  return out;
}
