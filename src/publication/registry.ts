// The hubs of every pool generation that has (had) subscribers: created lazily by a generation's
// first subscriber, shared by later ones, bounded by the initialized-hub limit (an idle hub of
// another pool is evicted to make room), and retired when their generation leaves the catalog.
import { RelayErrorReason } from '../wire/enums';
import { RelayError } from '../wire/errors';
import { PoolHub, retiredError, type HubContext } from './hub';
import type { PoolFeed } from './source';

interface Entry {
  hub: PoolHub;
  poolKey: string;
}

export class HubRegistry {
  private readonly entries = new Map<string, Entry>(); // by producer key

  constructor(
    private readonly ctx: HubContext,
    private readonly maxInitializedHubs: number,
  ) {}

  /** Hubs requested by a subscriber and not ended (each counts against the initialized-hub limit). */
  get size(): number {
    return this.entries.size;
  }

  get readyCount(): number {
    return this.count((hub) => hub.isReady);
  }

  get idleCount(): number {
    return this.count((hub) => hub.idle);
  }

  private count(holds: (hub: PoolHub) => boolean): number {
    let n = 0;
    for (const entry of this.entries.values()) if (holds(entry.hub)) n += 1;
    return n;
  }

  /** Subscribers per generation (producer key) with a hub. */
  subscribersByProducer(): Map<string, number> {
    return new Map([...this.entries].map(([key, entry]) => [key, entry.hub.subscriberCount]));
  }

  /** The hub of `feed`'s generation; another generation of the same pool is retired. */
  hubFor(feed: PoolFeed, producerKey: string, poolKey: string): PoolHub {
    const existing = this.entries.get(producerKey);
    if (existing) return existing.hub;
    for (const entry of [...this.entries.values()]) {
      if (entry.poolKey === poolKey) entry.hub.end(retiredError());
    }
    if (this.entries.size >= this.maxInitializedHubs) this.evictOneIdle(poolKey);
    const hub = new PoolHub(feed, this.ctx);
    this.entries.set(producerKey, { hub, poolKey });
    hub.onEnded = () => {
      if (this.entries.get(producerKey)?.hub === hub) this.entries.delete(producerKey);
    };
    return hub;
  }

  /** Retires every hub whose generation is not in `liveProducerKeys` (withdrawn or replaced). */
  retireAbsent(liveProducerKeys: ReadonlySet<string>): void {
    for (const [key, entry] of [...this.entries]) {
      if (!liveProducerKeys.has(key)) entry.hub.end(retiredError());
    }
  }

  /** Ends every hub; their streams end cleanly. */
  shutdown(): void {
    for (const entry of [...this.entries.values()]) entry.hub.end();
  }

  private evictOneIdle(exceptPoolKey: string): void {
    for (const entry of this.entries.values()) {
      if (entry.poolKey !== exceptPoolKey && entry.hub.idle) {
        entry.hub.end();
        return;
      }
    }
    this.ctx.counters.rejected('pool', 'initialized_hub');
    throw new RelayError(RelayErrorReason.RESOURCE_LIMIT, `Relay initialized publication hub limit ${this.maxInitializedHubs} reached`);
  }
}
