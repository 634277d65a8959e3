// The readiness revision (identity-topology-load.md §3.5): starts at 1 and grows by one only when
// the recomputed entries differ, so identical inputs (e.g. a repeated health answer) publish nothing.
import type { TopologyEntry } from '../wire/types';
import type { ReadinessState } from '../publication/source';
import { MAX_U64 } from '../config/limits';
import { buildTopologyEntries, type TopologyEndpointInput } from './readiness';
import { wireEqual } from './equal';

export interface ReadinessUpdate extends ReadinessState {
  changed: boolean;
}

export class ReadinessProjection {
  private revision = 1n;
  private entries: TopologyEntry[] = [];

  current(): ReadinessState {
    return { revision: this.revision, entries: this.entries };
  }

  /** Recomputes from a complete input; `update([])` on terminal stop publishes empty entries. */
  update(endpoints: readonly TopologyEndpointInput[]): ReadinessUpdate {
    const entries = buildTopologyEntries(endpoints);
    const changed = !wireEqual(entries, this.entries);
    if (changed) {
      this.entries = entries;
      if (this.revision < MAX_U64) this.revision += 1n;
    }
    return { revision: this.revision, entries: this.entries, changed };
  }
}
