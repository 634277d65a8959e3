// Tokens + model → matched prefix depth per pool (consumer.md §2.2-2.6). Pure over a snapshot of the
// client's planes; hashing is per pool because pools may differ in block size, hash format and salt.
import { KvQueryHashFormat, ServingReadinessState } from '../wire/enums';
import type { KvPoolLoadEntry, ModelRegistration, PoolServingLoad, TopologyEntry } from '../wire/types';
import type { CatalogPool, CatalogValue } from './catalog-plane';
import type { PoolLoadValue, ServingLoadValue } from './load-plane';
import { bindingOf, buildNameIndex, resolveName, type Binding } from './name-index';
import { findPrefixDepth } from './prefix-search';
import type { ReadinessValue } from './readiness-plane';
import { readinessKey } from './readiness-plane';
import type { PoolReplica } from './replica';

export interface QueryRequest {
  /** Canonical model id or alias. */
  model: string;
  tokens: ArrayLike<number>;
  /** Runtime LoRA adapter name on the resolved base model (the hash salt). */
  lora?: string;
}

export interface Prepared {
  fingerprint: number;
  bucketA: number;
  bucketB: number;
}

export interface QueryHasher {
  /** Canonical sequence hashes of the complete blocks of `tokens` (salt = LoRA adapter name). */
  sequenceHashes(tokens: Uint32Array, kvBlockSize: number, eagle: boolean, lora: string | undefined): ArrayLike<bigint>;
  prepare(hash: bigint, bucketCount: number, seed: bigint): Prepared;
}

export interface QueryView {
  nowMs: number;
  /** A replica silent for longer is not used: its depth is unknown, not zero. */
  maxReplicaAgeMs: number;
  catalog: CatalogValue | undefined;
  replicas: ReadonlyMap<string, PoolReplica>;
  readiness: ReadinessValue | undefined;
  load: PoolLoadValue | undefined;
  servingLoad: ServingLoadValue | undefined;
}

export type ReadinessName = 'READY' | 'UNAVAILABLE' | 'UNKNOWN';

export interface PoolQueryResult {
  poolKey: string;
  producerKey: string;
  endpoint: string;
  canonicalModelId: string;
  kvBlockSize: number;
  hashFormat: 'standard' | 'eagle';
  /** Complete blocks in the query under this pool's semantics. */
  queryBlocks: number;
  /** 'stale': installed but silent for longer than the freshness limit. */
  replica: 'ready' | 'stale' | 'absent';
  /** null unless the replica is ready (unknown, not zero). */
  matchedBlocks: number | null;
  matchedTokens: number | null;
  replicaSequence: bigint | null;
  /** null when the readiness plane has no entry for the pool's model. */
  readiness: ReadinessName | null;
  load: KvPoolLoadEntry | null;
  servingLoad: PoolServingLoad | null;
}

export type QueryResult =
  | { kind: 'ok'; binding: Binding; pools: PoolQueryResult[] }
  | { kind: 'noCatalog' }
  | { kind: 'unknownModel' }
  | { kind: 'ambiguousModel'; bindings: Binding[] }
  | { kind: 'loraMismatch'; binding: Binding };

export function runQuery(view: QueryView, request: QueryRequest, hasher: QueryHasher, verificationWindow: number): QueryResult {
  if (!view.catalog) return { kind: 'noCatalog' };
  const resolution = resolveName(buildNameIndex(view.catalog.pools), request.model);
  if (resolution.kind === 'unknown') return { kind: 'unknownModel' };
  if (resolution.kind === 'ambiguous') return { kind: 'ambiguousModel', bindings: resolution.bindings };
  const { binding } = resolution;
  if (binding.adapter !== undefined && request.lora !== undefined && request.lora !== binding.adapter) {
    return { kind: 'loraMismatch', binding };
  }
  const tokens = Uint32Array.from(request.tokens);
  const pools: PoolQueryResult[] = [];
  for (const { pool, registration } of resolution.pools) {
    const target = request.lora !== undefined && binding.adapter === undefined ? loraRegistration(pool, binding, request.lora) : registration;
    if (!target) continue;
    pools.push(queryPool(view, pool, target, tokens, hasher, verificationWindow));
  }
  return { kind: 'ok', binding, pools };
}

/** The pool's LoRA registration for `adapter` on the resolved base model, if it serves one. */
function loraRegistration(pool: CatalogPool, base: Binding, adapter: string): ModelRegistration | undefined {
  return pool.descriptor.registrations.find((r) => r.target?.lora?.baseModel === base.baseModel && r.target.lora.adapter === adapter);
}

function queryPool(
  view: QueryView,
  pool: CatalogPool,
  registration: ModelRegistration,
  tokens: Uint32Array,
  hasher: QueryHasher,
  verificationWindow: number,
): PoolQueryResult {
  const { descriptor } = pool;
  const semantics = descriptor.querySemantics!;
  const eagle = semantics.hashFormat === KvQueryHashFormat.DYNAMO_EAGLE_V1;
  const binding = bindingOf(registration);
  const hashes = hasher.sequenceHashes(tokens, semantics.kvBlockSize, eagle, binding.adapter);
  const replica = view.replicas.get(pool.poolKey);
  const installed = replica !== undefined && replica.ready && replica.producerKey === pool.producerKey;
  const usable = installed && replica.ageMs(view.nowMs) <= view.maxReplicaAgeMs;
  let matchedBlocks: number | null = null;
  if (usable) {
    matchedBlocks = findPrefixDepth(
      hashes.length,
      (pos) => {
        const p = hasher.prepare(hashes[pos], replica.bucketCount, replica.seed);
        return replica.holds(p.fingerprint, p.bucketA, p.bucketB);
      },
      verificationWindow,
    );
  }
  const e = descriptor.servingEndpoint!;
  return {
    poolKey: pool.poolKey,
    producerKey: pool.producerKey,
    endpoint: `${e.namespace}.${e.component}.${e.endpoint}`,
    canonicalModelId: registration.canonicalModelId,
    kvBlockSize: semantics.kvBlockSize,
    hashFormat: eagle ? 'eagle' : 'standard',
    queryBlocks: hashes.length,
    replica: usable ? 'ready' : installed ? 'stale' : 'absent',
    matchedBlocks,
    matchedTokens: matchedBlocks === null ? null : Math.min(matchedBlocks * semantics.kvBlockSize, tokens.length),
    replicaSequence: usable ? replica.sequence! : null,
    readiness: readinessOf(view.readiness, e.namespace, binding),
    load: view.load?.pools.get(pool.producerKey) ?? null,
    servingLoad: view.servingLoad?.pools.get(pool.producerKey) ?? null,
  };
}

const STATE_NAMES: Record<number, ReadinessName> = {
  [ServingReadinessState.READY]: 'READY',
  [ServingReadinessState.UNAVAILABLE]: 'UNAVAILABLE',
  [ServingReadinessState.UNKNOWN]: 'UNKNOWN',
};

/** Topology entries are keyed by base model; a LoRA adapter's readiness is nested in its base entry. */
export function readinessOf(readiness: ReadinessValue | undefined, namespace: string, binding: Binding): ReadinessName | null {
  if (!readiness) return null;
  const key = readinessKey(namespace, binding.baseModel);
  const entry: TopologyEntry | undefined = readiness.entries.find((x) => readinessKey(x.namespace, x.canonicalModelId) === key);
  if (!entry) return null;
  if (binding.adapter === undefined) return STATE_NAMES[entry.state] ?? null;
  const adapter = entry.adapters.find((a) => a.canonicalModelId === binding.canonicalModelId);
  return adapter ? (STATE_NAMES[adapter.state] ?? null) : null;
}
