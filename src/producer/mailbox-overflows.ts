// Sources a pool actor reset because its mailbox was full (pool-actor.ts). The subscriber that
// delivered the dropped batch never hears of it, so the per-source ingest stats (stats(), /metrics)
// get these added: each is an overflow and a reset of that source, as when ingest's own backlog
// behind a replay overflows (reason 'overflow').
import type { SourceKey, SourceStats } from '../ingest/types';

const keyOf = (s: SourceKey): string => `${s.workerId}:${s.dpRank}`;

export class MailboxOverflows {
  /** Per source; a handful of entries at most (sources that ever overflowed), never cleared. */
  private readonly counts = new Map<string, number>();

  record(source: SourceKey): void {
    const key = keyOf(source);
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
  }

  /** The subscribers' per-source stats with these overflows and resets added (new objects). */
  addTo(stats: readonly SourceStats[]): SourceStats[] {
    return stats.map((s) => {
      const n = this.counts.get(keyOf(s.source));
      return n === undefined ? s : { ...s, overflows: s.overflows + n, resets: s.resets + n };
    });
  }
}
