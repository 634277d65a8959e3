import type { EngineEventBatch, IngestSink, ResetReason, SourceKey } from '../../src/ingest/types';

/** An IngestSink that records every call in order. */
export class RecordingSink implements IngestSink {
  readonly calls: ({ kind: 'batch'; batch: EngineEventBatch } | { kind: 'reset'; source: SourceKey; reason: ResetReason })[] = [];

  batch(b: EngineEventBatch): void {
    this.calls.push({ kind: 'batch', batch: b });
  }

  reset(source: SourceKey, reason: ResetReason): void {
    this.calls.push({ kind: 'reset', source, reason });
  }

  get batches(): EngineEventBatch[] {
    return this.calls.flatMap((c) => (c.kind === 'batch' ? [c.batch] : []));
  }

  get resets(): { source: SourceKey; reason: ResetReason }[] {
    return this.calls.flatMap((c) => (c.kind === 'reset' ? [{ source: c.source, reason: c.reason }] : []));
  }

  sequences(dpRank = 0): bigint[] {
    return this.batches.filter((b) => b.source.dpRank === dpRank).map((b) => b.sequence);
  }
}
