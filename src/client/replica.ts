// One pool replica: the state machine of a SubscribeKvPool stream (consumer.md §1.5,
// hashing-ckf-cbi1.md §3.5-3.6 and §4.10). A replica is installed only from a complete, validated
// snapshot and then advanced by contiguous deltas. Any violation throws a ReplicaFault; the caller
// drops the replica and resubscribes (there is no buffering across gaps and no repair).
import * as os from 'os';
import { CBI1, decodeFrame, SnapshotAssembly, type AssembledSnapshot, type DecodedChunk, type DecodedDelta, type DecodedFrame } from '../native/cbi1';
import { REPLICA_RATE_WINDOW_MS } from '../config/defaults';
import { FilterUpdateKind } from '../wire/enums';
import type { FilterUpdate, ProducerIdentity, RelayIdentity } from '../wire/types';
import { producerKey } from '../wire/producer-key';
import { validateProducerIdentity, validateProtocolEnvelope } from '../wire/validate';
import { sameRelay } from './envelope';
import { RateMeter } from './rate-meter';

if (os.endianness() !== 'LE') throw new Error('the replica reads bucket slots through a little-endian view');

export type ReplicaFaultReason =
  | 'envelope'
  | 'relayIdentity'
  | 'producerChanged'
  | 'malformedFrame'
  | 'identityDrift'
  | 'epochMismatch'
  | 'chunkSequence'
  | 'snapshotWhileReady'
  | 'deltaBeforeSnapshot'
  | 'gap'
  | 'nonContiguous'
  | 'emptyDelta'
  | 'duplicateImage'
  | 'heartbeatMismatch'
  | 'unknownKind';

export class ReplicaFault extends Error {
  constructor(
    readonly reason: ReplicaFaultReason,
    message: string,
    /** The native codec error code, for malformed frames. */
    readonly code?: string,
  ) {
    super(message);
    this.name = 'ReplicaFault';
  }
}

export type ReplicaOutcome =
  | { kind: 'chunk' }
  | { kind: 'installed'; sequence: bigint }
  | { kind: 'delta'; baseSequence: bigint; sequence: bigint; imageCount: number }
  | { kind: 'heartbeat'; sequence: bigint }
  | { kind: 'stale' };

export interface ReplicaStats {
  ready: boolean;
  sequence: bigint | null;
  bucketCount: number;
  filledSlots: number;
  totalSlots: number;
  deltasPerSecond: number;
  /** Since the last accepted frame; the Relay sends a heartbeat at least every pool heartbeat interval. */
  ageMs: number;
}

const SLOTS_PER_BUCKET = CBI1.slotsPerBucket;

export class PoolReplica {
  readonly producerKey: string;
  readonly bucketCount: number;
  readonly seed: bigint;
  private readonly dcId: bigint;
  private readonly format: { seed: bigint; bucketCount: number };
  private readonly assembly: SnapshotAssembly;
  /** Words of the snapshot being assembled. */
  private pending: { words: BigUint64Array; filled: number } | undefined;
  private readonly rate = new RateMeter(REPLICA_RATE_WINDOW_MS);
  private relay: RelayIdentity | undefined;
  private installed: { sequence: bigint; words: BigUint64Array; slots: Uint16Array } | undefined;
  private filled = 0;
  private lastFrameMs = 0;

  /**
   * `producer` must be a validated ProducerIdentity (from a validated catalog descriptor). `relay`,
   * when given, is the identity of the Relay whose catalog listed the pool: frames from any other
   * Relay instance are rejected.
   */
  constructor(producer: ProducerIdentity, relay?: RelayIdentity) {
    this.relay = relay;
    this.producerKey = producerKey(producer);
    this.dcId = producer.poolId!.dcId;
    this.seed = producer.ckfFormat!.seed;
    this.bucketCount = Number(producer.ckfFormat!.bucketCount);
    this.format = { seed: this.seed, bucketCount: this.bucketCount };
    // Validation only: the dense chunk words are copied into the pending table as they arrive.
    this.assembly = new SnapshotAssembly(this.format, { images: false });
  }

  get ready(): boolean {
    return this.installed !== undefined;
  }

  get sequence(): bigint | undefined {
    return this.installed?.sequence;
  }

  /** Bucket words of the installed image (bucket order); undefined until installed. */
  get words(): BigUint64Array | undefined {
    return this.installed?.words;
  }

  /** True when bucket `a` or `b` holds fingerprint `fp` (both from ckf addressing). */
  holds(fp: number, a: number, b: number): boolean {
    const slots = this.installed?.slots;
    if (!slots) return false;
    return bucketHas(slots, a, fp) || bucketHas(slots, b, fp);
  }

  apply(update: FilterUpdate, nowMs: number = Date.now()): ReplicaOutcome {
    this.checkFrameIdentity(update);
    const outcome = this.applyKind(update, nowMs);
    this.lastFrameMs = nowMs;
    return outcome;
  }

  /** Milliseconds since the last accepted frame (snapshot chunk, delta or heartbeat). */
  ageMs(nowMs: number = Date.now()): number {
    return nowMs - this.lastFrameMs;
  }

  private applyKind(update: FilterUpdate, nowMs: number): ReplicaOutcome {
    switch (update.kind) {
      case FilterUpdateKind.SNAPSHOT_CHUNK:
        return this.applyChunk(update);
      case FilterUpdateKind.DELTA:
        return this.applyDelta(update, nowMs);
      case FilterUpdateKind.HEARTBEAT:
        return this.applyHeartbeat(update);
      default:
        throw new ReplicaFault('unknownKind', `unknown filter update kind ${update.kind}`);
    }
  }

  stats(nowMs: number = Date.now()): ReplicaStats {
    return {
      ready: this.ready,
      sequence: this.installed?.sequence ?? null,
      bucketCount: this.bucketCount,
      filledSlots: this.filled,
      totalSlots: this.bucketCount * SLOTS_PER_BUCKET,
      deltasPerSecond: this.rate.perSecond(nowMs),
      ageMs: this.ageMs(nowMs),
    };
  }

  private checkFrameIdentity(update: FilterUpdate): void {
    const envelope = validateProtocolEnvelope(update.protocolVersion, update.contractMarker);
    if (!envelope.ok) throw new ReplicaFault('envelope', envelope.error.message);
    if (!update.relay) throw new ReplicaFault('envelope', 'frame carries no relay identity');
    if (this.relay && !sameRelay(this.relay, update.relay)) throw new ReplicaFault('relayIdentity', 'relay identity changed within the stream');
    this.relay = update.relay;
    if (!update.producer) throw new ReplicaFault('producerChanged', 'frame carries no producer');
    const verdict = validateProducerIdentity(update.producer);
    if (!verdict.ok) throw new ReplicaFault('producerChanged', `frame producer is invalid: ${verdict.error.message}`);
    if (producerKey(update.producer) !== this.producerKey) throw new ReplicaFault('producerChanged', 'frame belongs to a different producer generation');
  }

  private decode(update: FilterUpdate): DecodedFrame {
    let frame: DecodedFrame;
    try {
      frame = decodeFrame(this.format, update.payload);
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      throw new ReplicaFault('malformedFrame', `CBI1 frame rejected: ${(err as Error).message}`, typeof code === 'string' ? code : undefined);
    }
    const expected = update.kind === FilterUpdateKind.DELTA ? 'delta' : 'chunk';
    if (frame.kind !== expected) throw new ReplicaFault('malformedFrame', `a ${expected} update carries a CBI1 ${frame.kind} frame`);
    if (frame.header.dcId !== this.dcId) {
      throw new ReplicaFault('identityDrift', `CBI1 dc_id ${frame.header.dcId} differs from the pool's ${this.dcId}`);
    }
    if (frame.header.epoch !== update.sequence) {
      throw new ReplicaFault('epochMismatch', `CBI1 epoch ${frame.header.epoch} differs from sequence ${update.sequence}`);
    }
    return frame;
  }

  private applyChunk(update: FilterUpdate): ReplicaOutcome {
    if (update.baseSequence !== update.sequence) throw new ReplicaFault('chunkSequence', 'snapshot chunk with base_sequence != sequence');
    if (this.installed) {
      if (update.sequence <= this.installed.sequence) return { kind: 'stale' };
      throw new ReplicaFault('snapshotWhileReady', 'a new snapshot arrived on a ready replica');
    }
    const frame = this.decode(update) as DecodedChunk;
    let complete: AssembledSnapshot | null;
    try {
      complete = this.assembly.absorb(frame);
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      throw new ReplicaFault('chunkSequence', `snapshot assembly failed: ${(err as Error).message}`, typeof code === 'string' ? code : undefined);
    }
    // The assembly has validated order, offsets and coverage; the dense chunk words are copied as
    // they arrive so that installing never walks the whole table in one event-loop turn.
    if (frame.chunkIndex === 0 || !this.pending) this.pending = { words: new BigUint64Array(this.bucketCount), filled: 0 };
    this.pending.words.set(frame.words, frame.bucketOffset);
    this.pending.filled += countFilled(new Uint16Array(frame.words.buffer, frame.words.byteOffset, frame.words.length * SLOTS_PER_BUCKET));
    if (!complete) return { kind: 'chunk' };
    const { words, filled } = this.pending;
    this.pending = undefined;
    this.installed = { sequence: complete.epoch, words, slots: new Uint16Array(words.buffer) };
    this.filled = filled;
    return { kind: 'installed', sequence: complete.epoch };
  }

  private applyDelta(update: FilterUpdate, nowMs: number): ReplicaOutcome {
    const installed = this.installed;
    if (!installed) throw new ReplicaFault('deltaBeforeSnapshot', 'delta before the snapshot was installed');
    const frame = this.decode(update) as DecodedDelta;
    if (frame.baseEpoch !== update.baseSequence) {
      throw new ReplicaFault('epochMismatch', `CBI1 base_epoch ${frame.baseEpoch} differs from base_sequence ${update.baseSequence}`);
    }
    if (update.sequence <= installed.sequence) return { kind: 'stale' };
    if (update.baseSequence !== installed.sequence) {
      throw new ReplicaFault('gap', `delta base ${update.baseSequence} does not follow installed sequence ${installed.sequence}`);
    }
    if (update.sequence !== update.baseSequence + 1n) {
      throw new ReplicaFault('nonContiguous', `delta sequence ${update.sequence} is not base ${update.baseSequence} + 1`);
    }
    const { buckets, values } = frame;
    if (buckets.length === 0) throw new ReplicaFault('emptyDelta', 'delta carries no bucket images');
    const seen = new Set<number>();
    for (const bucket of buckets) {
      if (seen.has(bucket)) throw new ReplicaFault('duplicateImage', `delta repeats bucket ${bucket}`);
      seen.add(bucket);
    }
    for (let i = 0; i < buckets.length; i++) {
      this.filled -= filledIn(installed.slots, buckets[i]);
      installed.words[buckets[i]] = values[i];
      this.filled += filledIn(installed.slots, buckets[i]);
    }
    installed.sequence = update.sequence;
    this.rate.record(nowMs);
    return { kind: 'delta', baseSequence: update.baseSequence, sequence: update.sequence, imageCount: buckets.length };
  }

  private applyHeartbeat(update: FilterUpdate): ReplicaOutcome {
    const installed = this.installed;
    if (!installed) throw new ReplicaFault('heartbeatMismatch', 'heartbeat before the snapshot was installed');
    if (update.payload.length !== 0) throw new ReplicaFault('heartbeatMismatch', 'heartbeat with a payload');
    if (update.baseSequence !== update.sequence || update.sequence !== installed.sequence) {
      throw new ReplicaFault(
        'heartbeatMismatch',
        `heartbeat base/sequence ${update.baseSequence}/${update.sequence} differ from installed ${installed.sequence}`,
      );
    }
    return { kind: 'heartbeat', sequence: update.sequence };
  }
}

function bucketHas(slots: Uint16Array, bucket: number, fp: number): boolean {
  const i = bucket * SLOTS_PER_BUCKET;
  return slots[i] === fp || slots[i + 1] === fp || slots[i + 2] === fp || slots[i + 3] === fp;
}

function countFilled(slots: Uint16Array): number {
  let n = 0;
  for (let i = 0; i < slots.length; i++) if (slots[i] !== 0) n++;
  return n;
}

function filledIn(slots: Uint16Array, bucket: number): number {
  const i = bucket * SLOTS_PER_BUCKET;
  return (slots[i] !== 0 ? 1 : 0) + (slots[i + 1] !== 0 ? 1 : 0) + (slots[i + 2] !== 0 ? 1 : 0) + (slots[i + 3] !== 0 ? 1 : 0);
}
