import type { IngestSink, PackedEngineEvents, ResetReason, SourceKey } from '../../src/ingest/types';
import { MESSAGE_INFO_STRIDE } from '../../src/ingest/types';
import { unpackEvents, type UnpackedEvent } from './packed';

/** One engine message as the sink received it inside a burst, its packed events unpacked. */
export interface RecordedBatch {
  source: SourceKey;
  sequence: bigint;
  events: UnpackedEvent[];
}

/** An IngestSink that records every call in order, each burst split back into its messages. */
export class RecordingSink implements IngestSink {
  readonly calls: ({ kind: 'batch'; batch: RecordedBatch } | { kind: 'reset'; source: SourceKey; reason: ResetReason })[] = [];
  /** Hand-offs (bursts) received, and stores dropped for their block size. */
  bursts = 0;
  droppedBlockSize = 0;
  /** Engine messages per burst, in order. */
  readonly burstMessages: number[] = [];

  events(b: PackedEngineEvents): void {
    this.bursts += 1;
    this.burstMessages.push(b.messages);
    this.droppedBlockSize += b.droppedBlockSize;
    const all = unpackEvents(b.meta, b.words);
    let from = 0;
    for (let i = 0; i < b.messages; i++) {
      const dpRank = b.messageInfo[i * MESSAGE_INFO_STRIDE];
      const to = b.messageInfo[i * MESSAGE_INFO_STRIDE + 1] / all.stride;
      const events = all.events.slice(from, to).map(({ workerId, dpRank: rank, ...e }) => {
        if (workerId !== b.workerId || rank !== dpRank) throw new Error(`event of ${workerId}:${rank} in a batch of ${b.workerId}:${dpRank}`);
        return e;
      });
      from = to;
      this.calls.push({ kind: 'batch', batch: { source: { workerId: b.workerId, dpRank }, sequence: b.sequences[i], events } });
    }
    if (from !== all.events.length) throw new Error('events after the last message');
  }

  reset(source: SourceKey, reason: ResetReason): void {
    this.calls.push({ kind: 'reset', source, reason });
  }

  get batches(): RecordedBatch[] {
    return this.calls.flatMap((c) => (c.kind === 'batch' ? [c.batch] : []));
  }

  get resets(): { source: SourceKey; reason: ResetReason }[] {
    return this.calls.flatMap((c) => (c.kind === 'reset' ? [{ source: c.source, reason: c.reason }] : []));
  }

  sequences(dpRank = 0): bigint[] {
    return this.batches.filter((b) => b.source.dpRank === dpRank).map((b) => b.sequence);
  }
}
