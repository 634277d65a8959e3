// Plain, JSON-ready views of the client's planes (bigint as decimal strings, enums by name), shared
// by the `watch` and `query` commands and usable by any operator tool.
import { enumValueName, KvQueryHashFormat } from '../wire/enums';
import type { KvPoolLoadEntry, PoolServingLoad, ModelServingLoad, LoadView } from '../wire/types';
import { endpointLabel, type CatalogPool, type CatalogValue } from './catalog-plane';
import { relayLabel } from './envelope';
import type { PoolLoadValue, ServingLoadValue } from './load-plane';
import type { ReadinessValue } from './readiness-plane';
import type { PoolReplicaStatus } from './pool-replicas';
import type { ClientErrorEvent } from './stream-events';
import type { PoolQueryResult } from './query';

const shortName = (enumName: 'WorkerRole' | 'ServingReadinessState' | 'DataStatus', prefix: string, v: number): string =>
  enumValueName(enumName, v)?.slice(prefix.length) ?? String(v);
const role = (v: number) => shortName('WorkerRole', 'WORKER_ROLE_', v);
const readinessState = (v: number) => shortName('ServingReadinessState', 'SERVING_READINESS_STATE_', v);
const dataStatus = (v: number) => shortName('DataStatus', 'DATA_STATUS_', v);
const str = (v: bigint | undefined | null): string | null => (v === undefined || v === null ? null : v.toString());
const hex = (v: bigint): string => `0x${v.toString(16).padStart(16, '0')}`;

export function poolView(pool: CatalogPool) {
  const d = pool.descriptor;
  const p = d.producer!;
  return {
    endpoint: endpointLabel(d),
    dcId: hex(p.poolId!.dcId),
    producerIncarnation: hex(p.producerIncarnation),
    layoutGeneration: p.layoutGeneration.toString(),
    bucketCount: p.ckfFormat!.bucketCount.toString(),
    kvBlockSize: d.querySemantics!.kvBlockSize,
    hashFormat: d.querySemantics!.hashFormat === KvQueryHashFormat.DYNAMO_EAGLE_V1 ? 'eagle' : 'standard',
    roles: d.poolRoles.map(role),
    models: d.registrations.map((r) => ({
      model: r.canonicalModelId,
      aliases: r.aliases,
      ...(r.target?.lora ? { baseModel: r.target.lora.baseModel, adapter: r.target.lora.adapter } : { baseModel: r.target?.base?.baseModel }),
    })),
  };
}

export function catalogView(catalog: CatalogValue) {
  return {
    relay: relayLabel(catalog.relay),
    revision: catalog.revision.toString(),
    pools: catalog.pools.map(poolView),
    quarantined: catalog.quarantined,
  };
}

export function replicaView(state: PoolReplicaStatus) {
  return {
    endpoint: endpointLabel(state.pool.descriptor),
    layoutGeneration: state.pool.descriptor.producer!.layoutGeneration.toString(),
    stream: state.stream,
    ready: state.stats?.ready ?? false,
    sequence: str(state.stats?.sequence),
    filledSlots: state.stats?.filledSlots ?? null,
    totalSlots: state.stats?.totalSlots ?? null,
    deltasPerSecond: state.stats ? Math.round(state.stats.deltasPerSecond * 10) / 10 : null,
    ageMs: state.stats?.ageMs ?? null,
  };
}

export function readinessView(readiness: ReadinessValue) {
  return {
    revision: readiness.revision.toString(),
    entries: readiness.entries.map((e) => ({
      namespace: e.namespace,
      model: e.canonicalModelId,
      state: readinessState(e.state),
      presentRoles: e.presentRoles.map(role),
      missingRoles: e.missingRoles.map(role),
      members: e.members.map((m) => `${m.endpoint!.namespace}.${m.endpoint!.component}.${m.endpoint!.endpoint}`),
      legacyFallbackActive: e.legacyFallbackActive,
      adapters: e.adapters.map((a) => ({ model: a.canonicalModelId, state: readinessState(a.state), missingRoles: a.missingRoles.map(role) })),
    })),
    quarantined: readiness.quarantined,
  };
}

export function poolLoadView(entry: KvPoolLoadEntry) {
  return {
    kvUsedBlocks: entry.kvUsedBlocks.toString(),
    totalKvBlocks: entry.totalKvBlocks.toString(),
    kvObservedRanks: entry.kvObservedRanks,
    kvExpectedRanks: entry.kvExpectedRanks,
  };
}

/** The fields that are set, as decimal strings. */
function setCounts(counts: object): Record<string, string> {
  return Object.fromEntries(Object.entries(counts).filter(([, v]) => v !== undefined).map(([k, v]) => [k, String(v)]));
}

function loadViewOf(load: LoadView | undefined) {
  if (!load) return null;
  return {
    status: dataStatus(load.status),
    sourceObservedMs: load.sourceObservedMs.toString(),
    tokens: setCounts(load.tokens ?? {}),
    ...(load.requests ? { requests: setCounts(load.requests) } : {}),
  };
}

export function servingPoolView(p: PoolServingLoad) {
  return { load: loadViewOf(p.load), liveWorkers: str(p.deployment?.liveWorkers), maxConcurrency: str(p.deployment?.maxConcurrency) };
}

export function servingModelView(m: ModelServingLoad) {
  return {
    namespace: m.namespace,
    model: m.canonicalModelId,
    load: loadViewOf(m.load),
    expectedFrontends: str(m.deployment?.expectedFrontends),
    observedFrontends: str(m.deployment?.observedFrontends),
    readyFrontends: str(m.deployment?.readyFrontends),
  };
}

function windowHeader(load: { windowSequence: bigint; observedMs: bigint; windowMs: bigint }) {
  return { windowSequence: load.windowSequence.toString(), observedMs: load.observedMs.toString(), windowMs: load.windowMs.toString() };
}

/** Per-pool entries joined to the catalog, in catalog order: a pool absent from the catalog is left out. */
function catalogPools<E, V extends object>(catalog: CatalogValue | undefined, entries: ReadonlyMap<string, E>, view: (entry: E) => V) {
  return (catalog?.pools ?? []).flatMap((pool) => {
    const entry = entries.get(pool.producerKey);
    return entry ? [{ endpoint: endpointLabel(pool.descriptor), ...view(entry) }] : [];
  });
}

/** Load windows joined to the catalog: a pool absent from the catalog has no load. */
export function loadView(catalog: CatalogValue | undefined, load: PoolLoadValue) {
  return { ...windowHeader(load), pools: catalogPools(catalog, load.pools, poolLoadView), quarantined: load.quarantined };
}

export function servingLoadView(catalog: CatalogValue | undefined, load: ServingLoadValue) {
  return {
    ...windowHeader(load),
    pools: catalogPools(catalog, load.pools, servingPoolView),
    models: [...load.models.values()].map(servingModelView),
    quarantined: load.quarantined,
  };
}

export function errorView(e: ClientErrorEvent) {
  return { plane: e.plane, pool: e.poolKey ?? null, reason: e.reason, code: e.code ?? null, message: e.message, next: e.next };
}

export function queryPoolView(p: PoolQueryResult) {
  return {
    endpoint: p.endpoint,
    model: p.canonicalModelId,
    kvBlockSize: p.kvBlockSize,
    hashFormat: p.hashFormat,
    queryBlocks: p.queryBlocks,
    replica: p.replica,
    matchedBlocks: p.matchedBlocks,
    matchedTokens: p.matchedTokens,
    replicaSequence: str(p.replicaSequence),
    readiness: p.readiness,
    load: p.load ? poolLoadView(p.load) : null,
    servingLoad: p.servingLoad ? servingPoolView(p.servingLoad) : null,
  };
}
