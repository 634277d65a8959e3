// Model name → pools, built by the consumer from catalog snapshots (the Relay publishes no such
// index). A name (canonical id or alias) that maps to more than one distinct binding is omitted,
// fail-closed; the same binding repeated across pools is fine (consumer.md §2.2).
import type { ModelRegistration } from '../wire/types';
import type { CatalogPool } from './catalog-plane';

/** What a name denotes: a base model, or a LoRA adapter on a base model (the adapter is the hash salt). */
export interface Binding {
  canonicalModelId: string;
  baseModel: string;
  /** Set for LoRA targets: the runtime adapter name, never an alias. */
  adapter?: string;
}

export interface PoolBinding {
  pool: CatalogPool;
  registration: ModelRegistration;
  binding: Binding;
}

export type Resolution =
  | { kind: 'resolved'; binding: Binding; pools: PoolBinding[] }
  | { kind: 'ambiguous'; bindings: Binding[] }
  | { kind: 'unknown' };

/** Registrations come from validated descriptors, so exactly one target variant is set. */
export function bindingOf(registration: ModelRegistration): Binding {
  const target = registration.target!;
  if (target.lora) {
    return { canonicalModelId: registration.canonicalModelId, baseModel: target.lora.baseModel, adapter: target.lora.adapter };
  }
  return { canonicalModelId: registration.canonicalModelId, baseModel: target.base!.baseModel };
}

function bindingKey(b: Binding): string {
  return JSON.stringify([b.canonicalModelId, b.baseModel, b.adapter ?? null]);
}

export type NameIndex = Map<string, Map<string, PoolBinding[]>>;

export function buildNameIndex(pools: CatalogPool[]): NameIndex {
  const index: NameIndex = new Map();
  for (const pool of pools) {
    for (const registration of pool.descriptor.registrations) {
      const binding = bindingOf(registration);
      const key = bindingKey(binding);
      for (const name of new Set([registration.canonicalModelId, ...registration.aliases])) {
        let byBinding = index.get(name);
        if (!byBinding) index.set(name, (byBinding = new Map()));
        let list = byBinding.get(key);
        if (!list) byBinding.set(key, (list = []));
        list.push({ pool, registration, binding });
      }
    }
  }
  return index;
}

export function resolveName(index: NameIndex, name: string): Resolution {
  const byBinding = index.get(name);
  if (!byBinding) return { kind: 'unknown' };
  const groups = [...byBinding.values()];
  if (groups.length > 1) return { kind: 'ambiguous', bindings: groups.map((g) => g[0].binding) };
  return { kind: 'resolved', binding: groups[0][0].binding, pools: groups[0] };
}
