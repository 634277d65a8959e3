import type { KvPoolId, ProducerIdentity } from '../../src/wire/types';
import type { LoadPool, LoadWorker } from '../../src/load';

export function poolId(n: number): KvPoolId {
  const digest = (b: number) => ({ digest: new Uint8Array(16).fill(b), source: 1 });
  return { identityVersion: 1, indexerDomain: { cacheSemantics: digest(n), routingScope: digest(100 + n) }, dcId: 0x04f110c98b1bfc48n };
}

export function producer(n: number): ProducerIdentity {
  return {
    poolId: poolId(n),
    producerIncarnation: 42n,
    layoutGeneration: BigInt(n),
    ckfFormat: { formatVersion: 1, seed: 0x5deece66d1b54a33n, bucketCount: 524288n, fingerprintBits: 16, slotsPerBucket: 4 },
  };
}

export function worker(id: bigint, over: Partial<LoadWorker> = {}): LoadWorker {
  return { id, dpStartRank: 0, dpSize: 1, totalKvBlocks: 1000, live: true, ...over };
}

export function pool(n: number, workers: LoadWorker[], over: Partial<LoadPool> = {}): LoadPool {
  return { producer: producer(n), namespace: 'prod', models: ['llama'], workers, ...over };
}
