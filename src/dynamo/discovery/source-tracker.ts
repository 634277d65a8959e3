// What the watch remembers of `v1/event_sources` between passes: each entry's value (an immutable
// descriptor: one that changes while present makes its rank Ambiguous{conflicting-descriptor} until
// it is deleted), each logical source's last status (an operator warning once per transition into
// Ambiguous, not on every pass), and the counts /metrics shows.
import { clipForLog, type Logger } from '../../log';
import type { EndpointSources, SourceStatus } from './event-sources';
import { DYNAMO_PREFIX } from './keys';

const BUCKET = `${DYNAMO_PREFIX}event_sources/`;

export type EventSourceCounts = Record<SourceStatus | 'invalid', number>;

export class EventSourceTracker {
  private values = new Map<string, string>();
  private readonly changedKeys = new Set<string>();
  private statuses = new Map<string, string>();
  private invalid = new Map<string, string>();
  private counts: EventSourceCounts = { missing: 0, active: 0, ambiguous: 0, invalid: 0 };

  constructor(private readonly logger: Logger) {}

  /** The source keys (full) whose value changed while present, `entries` being full key -> value. */
  changed(entries: ReadonlyMap<string, string>): ReadonlySet<string> {
    const values = new Map<string, string>();
    for (const [key, text] of entries) if (key.startsWith(BUCKET)) values.set(key, text);
    for (const [key, text] of values) {
      const before = this.values.get(key);
      if (before !== undefined && before !== text) this.changedKeys.add(key);
    }
    for (const key of this.changedKeys) if (!values.has(key)) this.changedKeys.delete(key);
    this.values = values;
    return this.changedKeys;
  }

  /** Logs what changed since the last pass and keeps the counts. */
  report(endpoints: ReadonlyMap<string, EndpointSources>, invalid: readonly { key: string; problem: string }[]): void {
    const counts: EventSourceCounts = { missing: 0, active: 0, ambiguous: 0, invalid: invalid.length };
    const statuses = new Map<string, string>();
    for (const [endpoint, { ranks }] of endpoints) {
      for (const r of ranks) {
        counts[r.status]++;
        const id = `${endpoint}/${r.workerId}/${r.dpRank}`;
        const status = r.reason ? `${r.status}:${r.reason}` : r.status;
        statuses.set(id, status);
        const before = this.statuses.get(id);
        if (before === status) continue;
        const fields = { endpoint, workerId: r.workerId.toString(), dpRank: r.dpRank, status: r.status, reason: r.reason, publishers: r.publishers.map(String), was: before ?? 'unknown' };
        if (r.status === 'ambiguous') this.logger.warn(fields, 'Dynamo KV event source ambiguous: its events are not trusted until the ambiguity is resolved (fail closed)');
        else this.logger.info(fields, 'Dynamo KV event source status');
      }
    }
    const invalidNow = new Map(invalid.map((i) => [i.key, i.problem]));
    for (const [key, problem] of invalidNow) if (this.invalid.get(key) !== problem) this.logger.warn({ key: clipForLog(key), problem: clipForLog(problem) }, 'Dynamo KV event source invalid: it counts for no rank');
    this.statuses = statuses;
    this.invalid = invalidNow;
    this.counts = counts;
  }

  get metrics(): EventSourceCounts {
    return { ...this.counts };
  }
}
