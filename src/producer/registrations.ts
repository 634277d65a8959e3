// Model registrations of a serving endpoint (identity-topology-load.md §1.7, §5.1). Pure.
//
// Each endpoint registers its base model (with its aliases) and one LoRA target per adapter.
// Lookup names (canonical ids and aliases) that resolve to more than one (model, target) across the
// whole deployment are dropped everywhere; a pool whose own registrations conflict fails closed.
import type { EndpointConfig } from '../config/schema';
import type { ModelRegistration, ModelTarget } from '../wire/types';
import { compareUtf8 } from '../topology/order';

/** Self aliases dropped, then sorted by UTF-8 bytes and deduplicated (CanonicalModelRegistration::with_target). */
export function normalizeAliases(model: string, aliases: readonly string[]): string[] {
  return [...new Set(aliases.filter((a) => a !== model))].sort(compareUtf8);
}

export function endpointRegistrations(ep: EndpointConfig): ModelRegistration[] {
  const base = ep.model.name;
  return [
    { canonicalModelId: base, target: { base: { baseModel: base } }, aliases: normalizeAliases(base, ep.model.aliases) },
    ...ep.adapters.map((a) => ({
      canonicalModelId: a.servedModel,
      target: { lora: { baseModel: base, adapter: a.name } },
      aliases: [],
    })),
  ];
}

function targetKey(canonical: string, target: ModelTarget | undefined): string {
  return JSON.stringify([canonical, target?.base?.baseModel ?? null, target?.lora?.baseModel ?? null, target?.lora?.adapter ?? null]);
}

/**
 * Names that resolve to more than one (model, target) across all endpoints. Registering the same
 * (model, target) on several endpoints (e.g. prefill and decode) is not a collision.
 */
export function collidingNames(all: readonly (readonly ModelRegistration[])[]): Set<string> {
  const targets = new Map<string, Set<string>>();
  const claim = (name: string, key: string): void => {
    const set = targets.get(name) ?? new Set<string>();
    set.add(key);
    targets.set(name, set);
  };
  for (const regs of all) {
    for (const r of regs) {
      const key = targetKey(r.canonicalModelId, r.target);
      claim(r.canonicalModelId, key);
      for (const alias of r.aliases) claim(alias, key);
    }
  }
  return new Set([...targets].filter(([, keys]) => keys.size > 1).map(([name]) => name));
}

/** Removes colliding canonical registrations and filters colliding aliases out of the rest. */
export function withoutCollisions(regs: readonly ModelRegistration[], colliding: ReadonlySet<string>): ModelRegistration[] {
  return regs
    .filter((r) => !colliding.has(r.canonicalModelId))
    .map((r) => ({ ...r, aliases: r.aliases.filter((a) => !colliding.has(a)) }));
}

/** The pool registry's attach checks; returns the first problem, or undefined when the set is valid. */
export function registrationConflict(regs: readonly ModelRegistration[]): string | undefined {
  if (regs.length === 0) return 'no model registrations';
  const byModel = new Map<string, string>();
  for (const r of regs) {
    const key = targetKey(r.canonicalModelId, r.target);
    const prior = byModel.get(r.canonicalModelId);
    if (prior !== undefined) {
      return prior === key
        ? `duplicate canonical model registration ${r.canonicalModelId}`
        : `conflicting targets for canonical model ${r.canonicalModelId}`;
    }
    byModel.set(r.canonicalModelId, key);
  }
  const aliasOwner = new Map<string, string>();
  for (const r of regs) {
    for (const alias of r.aliases) {
      if (byModel.has(alias)) return `alias ${alias} of ${r.canonicalModelId} equals canonical model ${alias}`;
      const owner = aliasOwner.get(alias);
      if (owner !== undefined && owner !== r.canonicalModelId) return `alias ${alias} is claimed by ${owner} and ${r.canonicalModelId}`;
      aliasOwner.set(alias, r.canonicalModelId);
    }
  }
  return undefined;
}
