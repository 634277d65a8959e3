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

/** A worker's declared topology: its own when it has a worker type, else its endpoint's. */
export interface WorkerTopology {
  workerType?: WorkerType;
  needs?: readonly (readonly WorkerType[])[];
}

export interface TopologyWorkerInput extends WorkerTopology {
  id: bigint;
  live: boolean | undefined;
}

export interface TopologyAdapterInput {
  /** The request-facing served model name: the adapter's readiness id. */
  servedModel: string;
  workers: readonly bigint[];
}

export interface TopologyEndpointInput extends WorkerTopology {
  namespace: string;
  component: string;
  endpoint: string;
  /** Canonical base model id served by the endpoint. */
  model: string;
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

/** The wire role of a worker type (LEGACY without one). */
function roleOf(workerType: WorkerType | undefined): WorkerRole {
  return workerType === undefined ? WorkerRole.LEGACY : ROLE_OF[workerType];
}

/** A worker's type and needs: its own when it declares a type, else its endpoint's. */
function topologyOf(endpoint: WorkerTopology, worker: WorkerTopology): WorkerTopology {
  return worker.workerType !== undefined ? worker : endpoint;
}

/**
 * The readiness units of an endpoint (upstream: its workers grouped by (worker type, needs)), each
 * with its workers; an endpoint without workers is one unit of its own declared type.
 */
function endpointUnits<W extends WorkerTopology & { id: bigint }>(ep: WorkerTopology & { workers: readonly W[] }): { role: WorkerRole; needs: WorkerRole[][]; workers: W[] }[] {
  const units = new Map<string, { role: WorkerRole; needs: WorkerRole[][]; workers: W[] }>();
  const declared = ep.workers.length > 0 ? ep.workers.map((w) => ({ w, t: topologyOf(ep, w) })) : [{ w: undefined, t: ep as WorkerTopology }];
  for (const { w, t } of declared) {
    const role = roleOf(t.workerType);
    const needs = (t.needs ?? []).map((alt) => alt.map((x) => ROLE_OF[x]));
    const key = JSON.stringify([role, needs]);
    const unit = units.get(key) ?? units.set(key, { role, needs, workers: [] }).get(key)!;
    if (w) unit.workers.push(w);
  }
  return [...units.values()];
}

/**
 * The roles an endpoint declares, sorted and unique: its topology member's roles and its pool's
 * pool_roles (the roles of its base-card workers, independent of liveness).
 */
export function endpointRoles(ep: WorkerTopology & { workers: readonly (WorkerTopology & { id: bigint })[] }): WorkerRole[] {
  return rolesOf(endpointUnits(ep));
}

function rolesOf(units: readonly { role: WorkerRole }[]): WorkerRole[] {
  return [...new Set(units.map((u) => u.role))].sort((a, b) => a - b);
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
    const units = endpointUnits(ep);
    const liveCount = (workers: readonly TopologyWorkerInput[], ids?: ReadonlySet<bigint>): number =>
      authoritative ? workers.filter((w) => w.live === true && (!ids || ids.has(w.id))).length : 0;

    const member: TopologyMember = {
      endpoint: { namespace: ep.namespace, component: ep.component, endpoint: ep.endpoint },
      roles: rolesOf(units),
    };
    if (ep.poolId) member.poolId = ep.poolId;
    g.members.push({ key: `${ep.namespace}/${ep.component}/${ep.endpoint}`, member });
    for (const u of units) g.units.push({ role: u.role, needs: u.needs, liveCount: liveCount(u.workers) });
    for (const adapter of ep.adapters ?? []) {
      const adapterUnits = g.adapterUnits.get(adapter.servedModel) ?? [];
      const served = new Set(adapter.workers);
      // Units are built from the adapter's workers only (derive_adapters): a unit with none of them,
      // e.g. the encoders of an EPD endpoint, is not the adapter's.
      for (const u of units) {
        if (u.workers.some((w) => served.has(w.id))) adapterUnits.push({ role: u.role, needs: u.needs, liveCount: liveCount(u.workers, served) });
      }
      g.adapterUnits.set(adapter.servedModel, adapterUnits);
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
