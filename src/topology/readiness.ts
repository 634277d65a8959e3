// Serving topology and readiness (identity-topology-load.md §3, wire-contract.md §6.3): one entry per
// (namespace, canonical base model) over the configured serving endpoints. Pure.
//
// Input, mapped by the producer from the deployment config and liveness:
// - one TopologyEndpointInput per serving endpoint that takes part in serving topology (the
//   producer leaves out endpoints it cannot serve from, e.g. ones with an invalid model);
// - `workerType` undefined = a legacy endpoint (no worker type): its workers form a LEGACY unit;
// - worker `live`: true/false when availability is authoritative (static `live`, or the health
//   probe has answered at least once), undefined while a health URL has not answered yet;
// - `poolId`: the stable pool link, set only while the endpoint's pool is materialized;
// - adapter `workers`: the ids of the endpoint's workers that serve the adapter.
import type { KvPoolId, TopologyEntry, TopologyMember, AdapterReadiness } from '../wire/types';
import { ServingReadinessState, WorkerRole } from '../wire/enums';
import { evaluateReadiness, type ReadinessUnit } from './evaluate';
import { compareModelKey, compareUtf8 } from './order';

export type WorkerType = 'prefill' | 'decode' | 'encode' | 'aggregated';

export interface TopologyWorkerInput {
  id: bigint;
  live: boolean | undefined;
}

export interface TopologyAdapterInput {
  /** The request-facing served model name: the adapter's readiness id. */
  servedModel: string;
  workers: readonly bigint[];
}

export interface TopologyEndpointInput {
  namespace: string;
  component: string;
  endpoint: string;
  /** Canonical base model id served by the endpoint. */
  model: string;
  workerType?: WorkerType;
  needs?: readonly (readonly WorkerType[])[];
  workers: readonly TopologyWorkerInput[];
  adapters?: readonly TopologyAdapterInput[];
  poolId?: KvPoolId;
}

const ROLE_OF: Record<WorkerType, WorkerRole> = {
  prefill: WorkerRole.PREFILL,
  decode: WorkerRole.DECODE,
  encode: WorkerRole.ENCODE,
  aggregated: WorkerRole.AGGREGATED,
};

/** The wire role an endpoint declares (LEGACY without a worker type); also its pool_roles entry. */
export function endpointRole(workerType: WorkerType | undefined): WorkerRole {
  return workerType === undefined ? WorkerRole.LEGACY : ROLE_OF[workerType];
}

interface Group {
  namespace: string;
  model: string;
  authoritative: boolean;
  members: { key: string; member: TopologyMember }[];
  units: ReadinessUnit[];
  adapterUnits: Map<string, ReadinessUnit[]>;
}

export function buildTopologyEntries(endpoints: readonly TopologyEndpointInput[]): TopologyEntry[] {
  const groups = new Map<string, Group>();
  for (const ep of endpoints) {
    const key = JSON.stringify([ep.namespace, ep.model]);
    let g = groups.get(key);
    if (!g) {
      g = { namespace: ep.namespace, model: ep.model, authoritative: true, members: [], units: [], adapterUnits: new Map() };
      groups.set(key, g);
    }
    // Like upstream's per-endpoint Option<set>: one unanswered worker makes the whole endpoint
    // non-authoritative, and a non-authoritative endpoint counts no live workers.
    const authoritative = ep.workers.every((w) => w.live !== undefined);
    g.authoritative &&= authoritative;
    const role = endpointRole(ep.workerType);
    const needs = (ep.needs ?? []).map((alt) => alt.map((t) => ROLE_OF[t]));
    const liveCount = (ids?: ReadonlySet<bigint>): number =>
      authoritative ? ep.workers.filter((w) => w.live === true && (!ids || ids.has(w.id))).length : 0;

    const member: TopologyMember = {
      endpoint: { namespace: ep.namespace, component: ep.component, endpoint: ep.endpoint },
      roles: [role],
    };
    if (ep.poolId) member.poolId = ep.poolId;
    g.members.push({ key: `${ep.namespace}/${ep.component}/${ep.endpoint}`, member });
    g.units.push({ role, needs, liveCount: liveCount() });
    for (const adapter of ep.adapters ?? []) {
      const units = g.adapterUnits.get(adapter.servedModel) ?? [];
      units.push({ role, needs, liveCount: liveCount(new Set(adapter.workers)) });
      g.adapterUnits.set(adapter.servedModel, units);
    }
  }
  return [...groups.values()].map(toEntry).sort(compareModelKey);
}

function toEntry(g: Group): TopologyEntry {
  const ev = evaluateReadiness(g.units);
  // A live duplicated non-aggregated role makes the route ambiguous for remote KV sourcing.
  const state = !g.authoritative
    ? ServingReadinessState.UNKNOWN
    : ev.ready && ev.ambiguous.length === 0
      ? ServingReadinessState.READY
      : ServingReadinessState.UNAVAILABLE;
  const unknown = state === ServingReadinessState.UNKNOWN;
  return {
    namespace: g.namespace,
    canonicalModelId: g.model,
    state,
    presentRoles: unknown ? [] : ev.present,
    missingRoles: unknown ? [] : ev.missing,
    members: g.members.sort((a, b) => compareUtf8(a.key, b.key)).map((m) => m.member),
    // Only PREFILL/DECODE are valid on the wire; a duplicated ENCODE still gates the state above.
    duplicateRoleEndpoints: ev.ambiguous.filter((r) => r === WorkerRole.PREFILL || r === WorkerRole.DECODE),
    legacyFallbackActive: ev.hasLegacy,
    adapters: [...g.adapterUnits]
      .sort(([a], [b]) => compareUtf8(a, b))
      .map(([id, units]) => adapterReadiness(id, units, state)),
  };
}

function adapterReadiness(id: string, units: ReadinessUnit[], baseState: ServingReadinessState): AdapterReadiness {
  const ev = evaluateReadiness(units);
  const state =
    baseState !== ServingReadinessState.READY
      ? baseState
      : ev.ready
        ? ServingReadinessState.READY
        : ServingReadinessState.UNAVAILABLE;
  return { canonicalModelId: id, state, missingRoles: state === ServingReadinessState.UNKNOWN ? [] : ev.missing };
}
