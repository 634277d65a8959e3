// Per-publisher order of Dynamo's event plane (dynamo-event-plane-and-discovery.md §5.1): every
// publisher (a random publisher_id per publisher incarnation) numbers its messages from 0, one by one.
// With the vLLM path's reset semantics and no replay (a relay cannot query the worker's local indexer):
// - the next sequence is delivered;
// - a sequence at or below the last one is a duplicate or arrived out of order: dropped and counted;
// - a jump is a gap: the messages in between are lost, so every source the publisher fed is reset
//   (its blocks dropped) before the message is delivered; the source then rebuilds from live events,
//   and a store whose parent was lost cannot be chained (the pool counts it);
// - a publisher's first message above 0 counts a gap (what it sent before the relay listened is
//   lost; nothing was delivered, so nothing is reset);
// - a source fed by a new publisher (the worker's publisher restarted) is reset first.
// Pure and bounded: at most `maxPublishers` publishers are remembered; one idle since the others were
// last seen is forgotten first (a second-chance clock: a message marks its publisher used, where moving
// it to the end of the map cost a delete and an insert per message).
import type { SourceKey } from '../../ingest/types';

export type Verdict = 'deliver' | 'duplicate';

export interface OrderHooks {
  gap(publisher: string, missed: number): void;
  reset(source: SourceKey, reason: 'gap' | 'restart'): void;
}

interface Publisher {
  last: number;
  /** A message came since the clock last passed it. */
  used: boolean;
  /** Sources (key) it delivered to since its last reset. */
  sources: Map<string, SourceKey>;
}

export class PublisherOrder {
  private readonly publishers = new Map<string, Publisher>();
  /** Source key -> the publisher that last fed it. */
  private readonly feeders = new Map<string, string>();

  constructor(
    private readonly hooks: OrderHooks,
    private readonly maxPublishers: number,
  ) {}

  /** `sequence` is exact up to 2^53 (a publisher at 1 M messages/s reaches that in 285 years). */
  accept(publisher: string, sequence: number, source: SourceKey, key = sourceKey(source)): Verdict {
    let p = this.publishers.get(publisher);
    if (!p) {
      p = { last: sequence, used: false, sources: new Map() };
      if (this.publishers.size >= this.maxPublishers) this.forgetOldest();
      this.publishers.set(publisher, p);
      if (sequence > 0) this.hooks.gap(publisher, sequence);
    } else {
      p.used = true;
      if (sequence <= p.last) return 'duplicate';
      if (sequence > p.last + 1) {
        this.hooks.gap(publisher, sequence - p.last - 1);
        for (const s of p.sources.values()) this.hooks.reset(s, 'gap');
        p.sources.clear();
      }
      p.last = sequence;
    }
    const feeder = this.feeders.get(key);
    if (feeder !== publisher) {
      if (feeder !== undefined) {
        this.publishers.get(feeder)?.sources.delete(key);
        this.hooks.reset(source, 'restart');
      }
      this.feeders.set(key, publisher);
    }
    p.sources.set(key, source);
    return 'deliver';
  }

  /** The source was reset elsewhere (a lease ended, an overflow): it starts afresh with its next publisher. */
  forgetSource(source: SourceKey): void {
    const key = sourceKey(source);
    const feeder = this.feeders.get(key);
    if (feeder !== undefined) this.publishers.get(feeder)?.sources.delete(key);
    this.feeders.delete(key);
  }

  /**
   * Workers that left the deployment (discovery dropped them): their sources are forgotten, and so is
   * every publisher that fed only them (a worker comes back with a new instance id and publisher).
   */
  forgetWorkers(gone: (workerId: bigint) => boolean): void {
    for (const key of this.feeders.keys()) if (gone(workerOfKey(key))) this.feeders.delete(key);
    for (const [name, p] of this.publishers) {
      let dropped = false;
      for (const [key, s] of p.sources) {
        if (!gone(s.workerId)) continue;
        p.sources.delete(key);
        dropped = true;
      }
      if (dropped && p.sources.size === 0) this.publishers.delete(name);
    }
  }

  /** Sources whose feeding publisher is remembered. */
  get sourceCount(): number {
    return this.feeders.size;
  }

  get publisherCount(): number {
    return this.publishers.size;
  }

  /** Map order is insertion order: a used publisher at the front moves to the end, unmarked; the first unmarked one goes (each move was paid for by a message). */
  private forgetOldest(): void {
    for (;;) {
      const [name, p] = this.publishers.entries().next().value as [string, Publisher];
      this.publishers.delete(name);
      if (!p.used) return this.forget(name, p);
      p.used = false;
      this.publishers.set(name, p);
    }
  }

  private forget(oldest: string, p: Publisher): void {
    for (const key of p.sources.keys()) if (this.feeders.get(key) === oldest) this.feeders.delete(key);
  }
}

export function sourceKey(s: SourceKey): string {
  return `${s.workerId}:${s.dpRank}`;
}

function workerOfKey(key: string): bigint {
  return BigInt(key.slice(0, key.indexOf(':')));
}
