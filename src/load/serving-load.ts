// Serving load of one window for a relay with no router or frontend sources (relay-config.md,
// Details: serving load; wire shapes per identity-topology-load.md §4.2). Pure.
//
// Every catalog pool and every (namespace, canonical model) it registers is listed with status
// UNAVAILABLE: no source ever reports, so gauges stay unset while the always-present counters are 0.
// Pool deployment counts the live workers; max_concurrency sums maxNumSeqs × dpSize over those same
// workers and is set only when each of them declares maxNumSeqs.
import type { KvPoolId, ModelServingLoad, PoolServingLoad } from '../wire/types';
import type { ServingLoadState } from '../publication/source';
import { DataStatus } from '../wire/enums';
import { compareModelKey } from '../topology/order';
import type { LoadPool } from './inputs';
import { saturatingSum } from './saturating';

export function buildServingLoad(pools: readonly LoadPool[]): ServingLoadState {
  return { pools: pools.map(poolServingLoad), models: modelServingLoads(pools) };
}

function poolServingLoad(pool: LoadPool): PoolServingLoad {
  const live = pool.workers.filter((w) => w.live);
  const deployment: PoolServingLoad['deployment'] = { liveWorkers: BigInt(live.length) };
  if (live.every((w) => w.maxNumSeqs !== undefined)) {
    deployment.maxConcurrency = saturatingSum(live.map((w) => BigInt(w.maxNumSeqs ?? 0) * BigInt(w.dpSize)));
  }
  return {
    producer: pool.producer,
    load: { tokens: {}, status: DataStatus.UNAVAILABLE, sourceObservedMs: 0n },
    deployment,
  };
}

function modelServingLoads(pools: readonly LoadPool[]): ModelServingLoad[] {
  const models = new Map<string, { namespace: string; canonicalModelId: string; servingPools: KvPoolId[] }>();
  for (const pool of pools) {
    for (const model of new Set(pool.models)) {
      const key = JSON.stringify([pool.namespace, model]);
      const entry = models.get(key) ?? { namespace: pool.namespace, canonicalModelId: model, servingPools: [] };
      if (pool.producer.poolId) entry.servingPools.push(pool.producer.poolId);
      models.set(key, entry);
    }
  }
  return [...models.values()].sort(compareModelKey).map(({ namespace, canonicalModelId, servingPools }) => ({
    namespace,
    canonicalModelId,
    load: {
      requests: { requestsStartedTotal: 0n, requestsCompletedTotal: 0n, requestsFailedTotal: 0n, requestsCancelledTotal: 0n },
      tokens: { inputTokensTotal: 0n, outputTokensTotal: 0n },
      status: DataStatus.UNAVAILABLE,
      sourceObservedMs: 0n,
    },
    deployment: { expectedFrontends: 0n, observedFrontends: 0n, readyFrontends: 0n, servingPools },
  }));
}
