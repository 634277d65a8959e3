// The event plane's view of the deployment's advertised KV event sources (v1/event_sources,
// discovery/event-sources.ts), where it has any: the channels drop an event whose envelope publisher
// is advertised for another (worker, dp rank), or that is not the publisher advertised for its Active
// rank (counted malformed), and every event of an Ambiguous rank (fail closed). Dynamo needs a cold
// reset for any transition but Missing -> Active (identity-topology-load.md §5.2): a rank that becomes
// or stops being Ambiguous, an Active rank whose entry goes, or whose publisher is replaced, is reset
// once. Endpoints without entries are not gated.
import type { SourceKey } from '../../ingest/types';
import type { EndpointSources } from '../discovery/event-sources';
import { sourceKey } from './order';

/** What discovery hands the plane (structured-clonable: it crosses to the plane's thread). */
export interface AdvertisedSources {
  /** Each valid advertised publisher id and the source it speaks for. */
  publishers: [bigint, SourceKey][];
  ambiguous: SourceKey[];
}

export const NO_ADVERTISED_SOURCES: AdvertisedSources = { publishers: [], ambiguous: [] };

export function advertisedSources(endpoints: ReadonlyMap<string, EndpointSources>): AdvertisedSources {
  const out: AdvertisedSources = { publishers: [], ambiguous: [] };
  for (const { publishers, ranks } of endpoints.values()) {
    for (const [id, { workerId, dpRank }] of publishers) out.publishers.push([id, { workerId, dpRank }]);
    for (const r of ranks) if (r.status === 'ambiguous') out.ambiguous.push({ workerId: r.workerId, dpRank: r.dpRank });
  }
  return out;
}

/** An envelope publisher id as the channels name it (order.ts): its u32 words, `hi:lo`. */
export function publisherName(id: bigint): string {
  return `${Number(id >> 32n)}:${Number(id & 0xffff_ffffn)}`;
}

/** What a logical source is bound to: its one advertised publisher's name (Active), or Ambiguous. */
type Binding = string | typeof AMBIGUOUS;
const AMBIGUOUS = Symbol('ambiguous');

export class SourceGate {
  /** Publisher name -> the source key it is advertised for. */
  private owners = new Map<string, string>();
  /** Source key -> its binding; a source of no entry (Missing) is absent. */
  private bindings = new Map<string, { source: SourceKey; binding: Binding }>();

  /** Applies discovery's sources; returns the sources whose binding changed other than Missing -> Active (each to be reset once). */
  update(advertised: AdvertisedSources): SourceKey[] {
    this.owners = new Map(advertised.publishers.map(([id, source]) => [publisherName(id), sourceKey(source)]));
    const next = new Map<string, { source: SourceKey; binding: Binding }>();
    for (const s of advertised.ambiguous) next.set(sourceKey(s), { source: s, binding: AMBIGUOUS });
    for (const [id, source] of advertised.publishers) {
      const key = sourceKey(source);
      if (!next.has(key)) next.set(key, { source, binding: publisherName(id) });
    }
    const changed: SourceKey[] = [];
    for (const [key, { source, binding }] of next) {
      const was = this.bindings.get(key)?.binding;
      if (was !== binding && (was !== undefined || binding === AMBIGUOUS)) changed.push(source);
    }
    for (const [key, { source }] of this.bindings) if (!next.has(key)) changed.push(source);
    this.bindings = next;
    return changed;
  }

  /** The source key a publisher is advertised for, if any. */
  ownerOf(publisher: string): string | undefined {
    return this.owners.size === 0 ? undefined : this.owners.get(publisher);
  }

  /** The publisher advertised for an Active source, if it is one. */
  publisherFor(key: string): string | undefined {
    const binding = this.bindings.size === 0 ? undefined : this.bindings.get(key)?.binding;
    return typeof binding === 'string' ? binding : undefined;
  }

  isAmbiguous(key: string): boolean {
    return this.bindings.size !== 0 && this.bindings.get(key)?.binding === AMBIGUOUS;
  }
}
