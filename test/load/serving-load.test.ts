import { MAX_U64 } from '../../src/config/limits';
import { buildServingLoad } from '../../src/load';
import { DataStatus } from '../../src/wire/enums';
import type { ModelServingLoad } from '../../src/wire/types';
import { pool, poolId, producer, worker } from './fixtures';

describe('buildServingLoad (no router or frontend sources)', () => {
  test('pool entry: UNAVAILABLE, no requests, no token gauges, deployment from live workers', () => {
    const { pools } = buildServingLoad([
      pool(1, [worker(1n, { maxNumSeqs: 256, dpSize: 2 }), worker(2n, { maxNumSeqs: 128 }), worker(3n, { maxNumSeqs: 999, live: false })]),
    ]);
    expect(pools).toEqual([
      {
        producer: producer(1),
        load: { tokens: {}, status: DataStatus.UNAVAILABLE, sourceObservedMs: 0n },
        deployment: { liveWorkers: 2n, maxConcurrency: 640n },
      },
    ]);
    expect(pools[0].load).not.toHaveProperty('requests');
  });

  const deployments: [string, Parameters<typeof pool>[1], object][] = [
    ['max_concurrency unset when a live worker does not declare maxNumSeqs',
      [worker(1n, { maxNumSeqs: 8 }), worker(2n)], { liveWorkers: 2n }],
    ['a dead worker without maxNumSeqs does not unset it',
      [worker(1n, { maxNumSeqs: 8 }), worker(2n, { live: false })], { liveWorkers: 1n, maxConcurrency: 8n }],
    ['no live workers: zero of both', [worker(1n, { live: false })], { liveWorkers: 0n, maxConcurrency: 0n }],
    ['maxNumSeqs 0 counts as declared', [worker(1n, { maxNumSeqs: 0 })], { liveWorkers: 1n, maxConcurrency: 0n }],
    ['max_concurrency saturates at u64::MAX',
      [worker(1n, { maxNumSeqs: Number.MAX_SAFE_INTEGER, dpSize: 4096 }), worker(2n, { maxNumSeqs: Number.MAX_SAFE_INTEGER, dpSize: 4096 })],
      { liveWorkers: 2n, maxConcurrency: MAX_U64 }],
  ];
  test.each(deployments)('%s', (_name, workers, deployment) => {
    expect(buildServingLoad([pool(1, workers)]).pools[0].deployment).toStrictEqual(deployment);
  });

  test('model entries: one per registered (namespace, canonical model), sorted, with the pools registering it', () => {
    const { pools, models } = buildServingLoad([
      pool(1, [worker(1n)], { namespace: 'prod', models: ['llama', 'llama-tenant-a'] }),
      pool(2, [worker(2n)], { namespace: 'prod', models: ['llama', 'llama'] }),
      pool(3, [worker(3n)], { namespace: 'dev', models: ['llama'] }),
    ]);
    expect(pools.map((p) => p.producer)).toEqual([producer(1), producer(2), producer(3)]);
    const model = (namespace: string, canonicalModelId: string, servingPools: number[]): ModelServingLoad => ({
      namespace,
      canonicalModelId,
      load: {
        requests: { requestsStartedTotal: 0n, requestsCompletedTotal: 0n, requestsFailedTotal: 0n, requestsCancelledTotal: 0n },
        tokens: { inputTokensTotal: 0n, outputTokensTotal: 0n },
        status: DataStatus.UNAVAILABLE,
        sourceObservedMs: 0n,
      },
      deployment: { expectedFrontends: 0n, observedFrontends: 0n, readyFrontends: 0n, servingPools: servingPools.map(poolId) },
    });
    expect(models).toStrictEqual([model('dev', 'llama', [3]), model('prod', 'llama', [1, 2]), model('prod', 'llama-tenant-a', [1])]);
  });

  test('no pools: an empty window', () => {
    expect(buildServingLoad([])).toEqual({ pools: [], models: [] });
  });
});
