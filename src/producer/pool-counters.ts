// A pool generation's metrics (PoolMetrics less its key) as 8-byte slots: counted where the pool is
// applied, read where /metrics is served. A pool hosted on an ingest thread (thread-pools.ts) shares
// them with the main thread, which so reads them at a scrape without asking the thread.
import { defineSlotProperties } from '../ingest/slots';
import type { PoolMetrics } from '../metrics/registry';

type Values = Omit<PoolMetrics, 'pool'>;

const FIELDS = Object.keys({
  eventsApplied: true,
  eventsDroppedBlockSize: true,
  eventErrors: true,
  deltasPublished: true,
  deltasDropped: true,
  capacityFailures: true,
  parentNotFound: true,
  unknownRemovals: true,
  mailboxOverflows: true,
  publicationSliceMs: true,
  storesRejectedAtLimit: true,
  trackedBlocks: true,
  filterResidentBlocks: true,
  filterLoad: true,
  stateBytes: true,
} satisfies Record<keyof Values, true>) as (keyof Values)[];

export class PoolCounters {
  readonly slots: Float64Array;
  readonly at = 0;

  /** Fresh counters (all 0), or those of `shared` (made on another thread). */
  constructor(readonly shared: SharedArrayBuffer = new SharedArrayBuffer(8 * FIELDS.length)) {
    this.slots = new Float64Array(shared);
  }

  /** A plain copy of every value. */
  values(): Values {
    const out = {} as Values;
    for (let i = 0; i < FIELDS.length; i++) out[FIELDS[i]] = this.slots[i];
    return out;
  }
}
export interface PoolCounters extends Values {}
defineSlotProperties(PoolCounters.prototype, FIELDS);
