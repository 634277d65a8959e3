// Hand-built wire messages for the plane reducers' table tests.
import { RELAY_CONTRACT_MARKER, RELAY_PROTOCOL_VERSION } from '../../src/wire/constants';
import { IdentitySource, KvQueryHashFormat, ServingReadinessState, WorkerRole } from '../../src/wire/enums';
import type {
  KvPoolCatalogUpdate,
  KvPoolDescriptor,
  ModelRegistration,
  ProducerIdentity,
  RelayIdentity,
  ServingReadinessUpdate,
  TopologyEntry,
} from '../../src/wire/types';

export const RELAY: RelayIdentity = { drtInstanceId: 11n, relayIncarnation: 22n };

export function producer(dcId: bigint, layoutGeneration = 1n, bucketCount = 16n): ProducerIdentity {
  return {
    poolId: {
      identityVersion: 1,
      indexerDomain: {
        cacheSemantics: { digest: new Uint8Array(16).fill(1), source: IdentitySource.DEFAULT_DERIVED },
        routingScope: { digest: new Uint8Array(16).fill(2), source: IdentitySource.DEFAULT_DERIVED },
      },
      dcId,
    },
    producerIncarnation: 33n,
    layoutGeneration,
    ckfFormat: { formatVersion: 1, seed: 0x5deece66d1b54a33n, bucketCount, fingerprintBits: 16, slotsPerBucket: 4 },
  };
}

export function baseRegistration(model: string, aliases: string[] = []): ModelRegistration {
  return { canonicalModelId: model, target: { base: { baseModel: model } }, aliases };
}

export function loraRegistration(model: string, base: string, adapter: string): ModelRegistration {
  return { canonicalModelId: model, target: { lora: { baseModel: base, adapter } }, aliases: [] };
}

export function descriptor(
  dcId: bigint,
  registrations: ModelRegistration[] = [baseRegistration('llama', ['chat'])],
  opts: { generation?: bigint; component?: string; hashFormat?: number; kvBlockSize?: number } = {},
): KvPoolDescriptor {
  return {
    producer: producer(dcId, opts.generation ?? 1n),
    servingEndpoint: { namespace: 'prod', component: opts.component ?? `backend${dcId}`, endpoint: 'generate' },
    registrations,
    querySemantics: { kvBlockSize: opts.kvBlockSize ?? 4, hashFormat: opts.hashFormat ?? KvQueryHashFormat.DYNAMO_STANDARD_V1 },
    poolRoles: [WorkerRole.AGGREGATED],
  };
}

export function catalogUpdate(revision: bigint, pools: KvPoolDescriptor[], relay: RelayIdentity = RELAY): KvPoolCatalogUpdate {
  return { protocolVersion: RELAY_PROTOCOL_VERSION, relay, revision, snapshot: { pools }, contractMarker: RELAY_CONTRACT_MARKER };
}

export function topologyEntry(model: string, state: number = ServingReadinessState.READY, namespace = 'prod'): TopologyEntry {
  return {
    namespace,
    canonicalModelId: model,
    state,
    presentRoles: [WorkerRole.AGGREGATED],
    missingRoles: [],
    members: [{ endpoint: { namespace, component: 'backend', endpoint: 'generate' }, roles: [WorkerRole.AGGREGATED] }],
    duplicateRoleEndpoints: [],
    legacyFallbackActive: false,
    adapters: [],
  };
}

export function readinessUpdate(revision: bigint, entries: TopologyEntry[], relay: RelayIdentity = RELAY): ServingReadinessUpdate {
  return { protocolVersion: RELAY_PROTOCOL_VERSION, relay, revision, entries, contractMarker: RELAY_CONTRACT_MARKER };
}
