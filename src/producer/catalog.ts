// The pool catalog (wire-contract.md §6.1): complete descriptor snapshots sorted by pool id, with a
// revision that starts at 0 and grows by one (saturating) on every upsert, remove and clear.
// Listeners hear the latest state once per `publish()`, so a burst of changes may skip revisions.
import type { CatalogState, Unsubscribe } from '../publication/source';
import type { KvPoolDescriptor } from '../wire/types';
import { MAX_U64 } from '../config/limits';

export class Catalog {
  private revision = 0n;
  private readonly pools = new Map<string, KvPoolDescriptor>();
  private state: CatalogState = { revision: 0n, snapshot: { pools: [] } };
  private published = 0n;
  private readonly listeners = new Set<(state: CatalogState) => void>();

  current(): CatalogState {
    return this.state;
  }

  size(): number {
    return this.pools.size;
  }

  upsert(key: string, descriptor: KvPoolDescriptor): void {
    this.pools.set(key, descriptor);
    this.bump();
  }

  remove(key: string): void {
    if (this.pools.delete(key)) this.bump();
  }

  clear(): void {
    this.pools.clear();
    this.bump();
  }

  /** Notifies listeners of the current state if it changed since the last publish. */
  publish(): void {
    if (this.published === this.revision) return;
    this.published = this.revision;
    for (const listener of this.listeners) listener(this.state);
  }

  onChange(listener: (state: CatalogState) => void): Unsubscribe {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private bump(): void {
    if (this.revision < MAX_U64) this.revision += 1n;
    const keys = [...this.pools.keys()].sort();
    this.state = { revision: this.revision, snapshot: { pools: keys.map((k) => this.pools.get(k) as KvPoolDescriptor) } };
  }
}
