// Valid wire values shared by the wire tests.
import { DataStatus, FilterUpdateKind, IdentitySource, KvQueryHashFormat, WorkerRole } from '../../src/wire/enums';
import { RELAY_CONTRACT_MARKER } from '../../src/wire/constants';
import type {
  KvPoolDescriptor,
  KvPoolId,
  ModelServingLoad,
  PoolServingLoad,
  ProducerIdentity,
  TopologyEntry,
} from '../../src/wire/types';

export const MARKER = RELAY_CONTRACT_MARKER;
export const RELAY = { drtInstanceId: 7n, relayIncarnation: 0x1234n };

export function poolId(dc = 0x04f110c98b1bfc48n): KvPoolId {
  return {
    identityVersion: 1,
    indexerDomain: {
      cacheSemantics: { digest: Buffer.from('7d31eb9019357572470605f4a8be687e', 'hex'), source: IdentitySource.DEFAULT_DERIVED },
      routingScope: { digest: Buffer.from('18270d3ba03effaec8d167ba02c7752d', 'hex'), source: IdentitySource.DEFAULT_DERIVED },
    },
    dcId: dc,
  };
}

export function producer(generation = 1n, dc?: bigint): ProducerIdentity {
  return {
    poolId: poolId(dc),
    producerIncarnation: 0x7fff_ffff_ffff_fffen,
    layoutGeneration: generation,
    ckfFormat: { formatVersion: 1, seed: 0x5deece66d1b54a33n, bucketCount: 524288n, fingerprintBits: 16, slotsPerBucket: 4 },
  };
}

export function descriptor(generation = 1n, dc?: bigint): KvPoolDescriptor {
  return {
    producer: producer(generation, dc),
    servingEndpoint: { namespace: 'prod', component: 'backend', endpoint: 'generate' },
    registrations: [{ canonicalModelId: 'llama', target: { base: { baseModel: 'llama' } }, aliases: ['chat'] }],
    querySemantics: { kvBlockSize: 64, hashFormat: KvQueryHashFormat.DYNAMO_STANDARD_V1 },
    poolRoles: [WorkerRole.LEGACY],
  };
}

export function topologyEntry(): TopologyEntry {
  return {
    namespace: 'prod',
    canonicalModelId: 'llama',
    state: 2,
    presentRoles: [WorkerRole.PREFILL, WorkerRole.DECODE],
    missingRoles: [],
    members: [
      { endpoint: { namespace: 'prod', component: 'prefill', endpoint: 'generate' }, roles: [WorkerRole.PREFILL], poolId: poolId() },
      { endpoint: { namespace: 'prod', component: 'decode', endpoint: 'generate' }, roles: [WorkerRole.DECODE] },
    ],
    duplicateRoleEndpoints: [WorkerRole.PREFILL],
    legacyFallbackActive: false,
    adapters: [{ canonicalModelId: 'llama-lora', state: 0, missingRoles: [WorkerRole.DECODE] }],
  };
}

export function poolServingLoad(status: number = DataStatus.COMPLETE): PoolServingLoad {
  const complete = status === DataStatus.COMPLETE;
  return {
    producer: producer(),
    load: {
      tokens: complete ? { activePrefillTokens: 10n, activeDecodeBlocks: 0n } : {},
      status,
      sourceObservedMs: 1n,
    },
    deployment: { liveWorkers: 1n },
  };
}

export function modelServingLoad(status: number = DataStatus.COMPLETE): ModelServingLoad {
  const complete = status === DataStatus.COMPLETE;
  return {
    namespace: 'prod',
    canonicalModelId: 'llama',
    load: {
      requests: {
        requestsStartedTotal: 5n,
        requestsCompletedTotal: 4n,
        requestsFailedTotal: 0n,
        requestsCancelledTotal: 0n,
        ...(complete ? { requestsAwaitingFirstToken: 1n, requestsGenerating: 0n } : {}),
      },
      tokens: {
        inputTokensTotal: 100n,
        outputTokensTotal: 20n,
        ...(complete ? { awaitingFirstTokenInputTokens: 3n, inflightInputTokens: 9n } : {}),
      },
      status,
      sourceObservedMs: 0n,
    },
    deployment: { expectedFrontends: 1n, observedFrontends: 1n, readyFrontends: 1n, servingPools: [poolId()] },
  };
}

export { FilterUpdateKind };
