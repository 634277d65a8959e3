// One SubscribeKvPool stream after admission: the snapshot bootstrap (one chunk handed to the
// transport at a time, each within the progress timeout), then the queued and live deltas, then
// heartbeats on an idle interval. The subscriber's queue is bounded in frames and bytes; a
// subscriber that falls behind ends with SUBSCRIBER_LAGGED and nobody else notices.
import { PACING_PAUSE_BUDGET_MS, PACING_STRETCH_OCCUPANCY } from '../config/defaults';
import { RelayErrorReason } from '../wire/enums';
import { RelayError } from '../wire/errors';
import type { ProducerIdentity, RelayIdentity } from '../wire/types';
import { heartbeatMessage, type SharedFrame } from './frames';
import type { HubSnapshot, HubSubscriber } from './hub';
import { QueueState, queueState, snapshotChunkAllowanceMs } from './pacing';
import type { OpenStream } from './sink';
import type { PublicationCounters } from './stats';

export interface PoolSubscriberOptions {
  relay: RelayIdentity;
  producer: ProducerIdentity;
  queueCapacity: number;
  queueBytes: number;
  heartbeatMs: number;
  progressTimeoutMs: number;
  counters: PublicationCounters;
}

type HandOver = 'taken' | 'timeout' | 'closed';

export class PoolSubscriber implements HubSubscriber {
  private live = false;
  private readonly queued: SharedFrame[] = [];
  private queuedBytes = 0;
  private lastSequence = 0n;
  private heartbeat: NodeJS.Timeout | undefined;
  /** When the last data frame was handed over (the heartbeat interval counts from it). */
  private lastDataAt = 0;
  /** A heartbeat handed to the transport and not taken yet (heartbeats are not in the queue bounds). */
  private heartbeatPending = false;
  /** For pacing (live): when its queue last stood below the stretch occupancy, or it went live. */
  private lowAt = 0;
  /** For pacing: the frames its queue held at the last judgement. */
  private judgedFrames = 0;
  /** For pacing (bootstrap): until when the snapshot chunk in flight is still paced for. */
  private chunkPacedUntil = 0;
  /** Settles the snapshot chunk in flight, if any. */
  private handingOver: ((outcome: HandOver) => void) | undefined;

  constructor(
    private readonly stream: OpenStream,
    private readonly options: PoolSubscriberOptions,
  ) {
    stream.defer(() => {
      if (this.heartbeat) clearTimeout(this.heartbeat);
      this.queued.length = 0;
      this.handingOver?.('closed');
    });
  }

  deliver(frame: SharedFrame): void {
    if (this.stream.closed) return;
    if (this.live) {
      if (this.wouldOverflow(this.stream.frames, this.stream.bytes, frame)) return this.lagged();
      this.sendData(frame);
      return;
    }
    if (this.wouldOverflow(this.queued.length, this.queuedBytes, frame)) return this.lagged();
    this.queued.push(frame);
    this.queuedBytes += frame.accountedBytes;
  }

  end(error?: RelayError): void {
    this.stream.end(error);
  }

  /**
   * Its queue for pacing (publication/pacing.ts), while pacing can still save this subscriber: live,
   * within the pause budget since its queue last stood low; taking its snapshot, while the chunk in
   * flight is within its allowance (its queued deltas only drain once it is live). Low otherwise.
   */
  queueState(now: number): QueueState {
    const frames = this.live ? this.stream.frames : this.queued.length;
    const before = this.judgedFrames;
    this.judgedFrames = frames;
    if (!this.live) return now <= this.chunkPacedUntil ? queueState(this.fill(frames, this.queuedBytes), frames, before) : QueueState.Low;
    const fill = this.fill(frames, this.stream.bytes);
    if (fill < PACING_STRETCH_OCCUPANCY) this.lowAt = now;
    return now - this.lowAt <= PACING_PAUSE_BUDGET_MS ? queueState(fill, frames, before) : QueueState.Low;
  }

  private fill(frames: number, bytes: number): number {
    return Math.max(frames / this.options.queueCapacity, bytes / this.options.queueBytes);
  }

  /** Sends the snapshot chunks one at a time, then whatever queued behind them; then goes live. */
  async bootstrap(snapshot: HubSnapshot, replay: SharedFrame[]): Promise<void> {
    for (const frame of replay) this.deliver(frame);
    for (const chunk of snapshot.chunks) {
      const outcome = await this.handOver(chunk);
      if (outcome !== 'taken') {
        if (outcome === 'timeout') {
          const message = `snapshot bootstrap made no progress for ${this.options.progressTimeoutMs} ms`;
          this.stream.end(new RelayError(RelayErrorReason.SNAPSHOT_PROGRESS_TIMEOUT, message));
        }
        return;
      }
    }
    this.lastSequence = snapshot.sequence;
    this.live = true;
    this.lowAt = performance.now();
    const queued = this.queued.splice(0);
    this.queuedBytes = 0;
    for (const frame of queued) this.sendData(frame);
    this.lastDataAt = performance.now();
    this.heartbeat = setTimeout(() => this.beat(), this.options.heartbeatMs);
  }

  // The stream's one close cleanup (constructor) settles the chunk in flight: a cleanup per chunk
  // would hold each chunk's timer and promise until the stream closes (32 per subscriber of a
  // 2^24-bucket pool).
  private handOver(chunk: SharedFrame): Promise<HandOver> {
    if (this.stream.closed) return Promise.resolve('closed');
    return new Promise((resolve) => {
      const settle = (outcome: HandOver): void => {
        clearTimeout(timer);
        if (this.handingOver === settle) this.handingOver = undefined;
        resolve(outcome);
      };
      const timer = setTimeout(() => settle('timeout'), this.options.progressTimeoutMs);
      this.handingOver = settle;
      this.chunkPacedUntil = performance.now() + snapshotChunkAllowanceMs(chunk.accountedBytes);
      this.stream.sendUncounted(chunk.bytes, () => settle('taken'));
    });
  }

  private sendData(frame: SharedFrame): void {
    this.lastSequence = frame.sequence;
    this.stream.send(frame.bytes, frame.accountedBytes);
    this.lastDataAt = performance.now();
  }

  // Data frames push the next heartbeat back (checked when the timer fires, so sending a frame
  // costs no timer work); heartbeats do not, so an idle stream gets one per interval. A client
  // that has not taken everything yet (a data frame or the previous heartbeat) does not need one,
  // so a stalled client holds at most one heartbeat and never piles them up.
  private beat(): void {
    if (this.stream.closed) return;
    const sinceData = performance.now() - this.lastDataAt;
    if (sinceData < this.options.heartbeatMs) {
      this.heartbeat = setTimeout(() => this.beat(), this.options.heartbeatMs - sinceData);
      return;
    }
    if (this.stream.frames === 0 && !this.heartbeatPending) {
      this.heartbeatPending = true;
      const message = heartbeatMessage(this.options.relay, this.options.producer, this.lastSequence);
      this.stream.sendUncounted(message, () => {
        this.heartbeatPending = false;
      });
      this.options.counters.poolHeartbeatsTotal += 1;
    }
    this.heartbeat = setTimeout(() => this.beat(), this.options.heartbeatMs);
  }

  private wouldOverflow(frames: number, bytes: number, frame: SharedFrame): boolean {
    return frames + 1 > this.options.queueCapacity || bytes + frame.accountedBytes > this.options.queueBytes;
  }

  private lagged(): void {
    this.options.counters.laggedTotal.pool += 1;
    const message = `pool subscriber lagged: more than ${this.options.queueCapacity} frames or ${this.options.queueBytes} bytes queued; resubscribe`;
    this.stream.end(new RelayError(RelayErrorReason.SUBSCRIBER_LAGGED, message));
  }
}
