// The event plane's view of the deployment's advertised KV event sources (v1/event_sources,
// discovery/event-sources.ts), where it has any: the channels drop an event whose envelope publisher
// is advertised for another (worker, dp rank) (counted malformed), and every event of an Ambiguous
// rank (fail closed). A rank that becomes Ambiguous, or stops being so, is reset once: Dynamo needs a
// cold reset for any transition but Missing -> Active. Endpoints without entries are not gated.
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

export class SourceGate {
  /** Publisher name -> the source key it is advertised for. */
  private owners = new Map<string, string>();
  private ambiguous = new Map<string, SourceKey>();

  /** Applies discovery's sources; returns the sources that entered or left Ambiguous (each to be reset once). */
  update(advertised: AdvertisedSources): SourceKey[] {
    this.owners = new Map(advertised.publishers.map(([id, source]) => [publisherName(id), sourceKey(source)]));
    const ambiguous = new Map(advertised.ambiguous.map((s) => [sourceKey(s), s]));
    const changed: SourceKey[] = [];
    for (const [key, s] of ambiguous) if (!this.ambiguous.has(key)) changed.push(s);
    for (const [key, s] of this.ambiguous) if (!ambiguous.has(key)) changed.push(s);
    this.ambiguous = ambiguous;
    return changed;
  }

  /** The source key a publisher is advertised for, if any. */
  ownerOf(publisher: string): string | undefined {
    return this.owners.size === 0 ? undefined : this.owners.get(publisher);
  }

  isAmbiguous(key: string): boolean {
    return this.ambiguous.size !== 0 && this.ambiguous.has(key);
  }
}
