// What applying a new deployment does to the running pools (relay-config.md, "What a change does").
// Pure. Pools are matched by pool id: a different id (identity material changed) is a remove plus an
// add; the same id with different metadata (names, aliases, adapters, roles, needs, workers) is an
// in-place update on the same producer generation.
import type { Deployment, PoolSpec } from './deployment';

export interface DeploymentDiff {
  added: PoolSpec[];
  removed: PoolSpec[];
  /** The new specs of pools whose metadata changed. */
  updated: PoolSpec[];
}

export function diffDeployments(prev: Deployment, next: Deployment): DeploymentDiff {
  const before = new Map(prev.pools.map((p) => [p.key, p]));
  const after = new Map(next.pools.map((p) => [p.key, p]));
  return {
    added: next.pools.filter((p) => !before.has(p.key)),
    removed: prev.pools.filter((p) => !after.has(p.key)),
    updated: next.pools.filter((p) => {
      const old = before.get(p.key);
      return old !== undefined && metadataOf(old) !== metadataOf(p);
    }),
  };
}

/** A spec's metadata text, computed once per spec (the running deployment's specs are diffed again at every change). */
const metadataTexts = new WeakMap<PoolSpec, string>();

function metadataOf(p: PoolSpec): string {
  let text = metadataTexts.get(p);
  if (text === undefined) {
    const { servingEndpoint, registrations, poolRoles, endpoint } = p;
    text = JSON.stringify({ servingEndpoint, registrations, poolRoles, endpoint }, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
    metadataTexts.set(p, text);
  }
  return text;
}
