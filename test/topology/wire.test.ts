// The projection's output goes on the wire as is: it must encode and decode back unchanged.
import { buildTopologyEntries, type TopologyEndpointInput } from '../../src/topology';
import { decodeMessage, encodeMessage } from '../../src/wire/codec';
import { RELAY_CONTRACT_MARKER, RELAY_PROTOCOL_VERSION } from '../../src/wire/constants';
import type { ServingReadinessUpdate } from '../../src/wire/types';
import { validateReadinessUpdate } from '../../src/wire/validate';

const poolId = {
  identityVersion: 1,
  indexerDomain: {
    cacheSemantics: { digest: Uint8Array.from({ length: 16 }, (_, i) => i), source: 1 },
    routingScope: { digest: new Uint8Array(16).fill(0xff), source: 2 },
  },
  dcId: 0xa80b8cea06f82376n,
};

const endpoints: TopologyEndpointInput[] = [
  { namespace: 'prod', component: 'backend', endpoint: 'p', model: 'llama', workerType: 'prefill', workers: [{ id: 1n, live: true }], poolId },
  { namespace: 'prod', component: 'backend', endpoint: 'p2', model: 'llama', workerType: 'prefill', workers: [{ id: 2n, live: true }] },
  {
    namespace: 'prod', component: 'backend', endpoint: 'd', model: 'llama', workerType: 'decode', needs: [['prefill']],
    workers: [{ id: 3n, live: true }, { id: 4n, live: false }],
    adapters: [{ servedModel: 'llama-tenant-a', workers: [3n] }, { servedModel: 'llama-tenant-b', workers: [4n] }],
  },
  { namespace: 'prod', component: 'legacy', endpoint: 'generate', model: 'mistral', workers: [{ id: 5n, live: true }] },
  { namespace: 'dev', component: 'backend', endpoint: 'generate', model: 'llama', workerType: 'aggregated', workers: [{ id: 6n, live: undefined }] },
];

test('readiness entries pass the wire validator and survive a ServingReadinessUpdate encode/decode unchanged', () => {
  const update: ServingReadinessUpdate = {
    protocolVersion: RELAY_PROTOCOL_VERSION,
    relay: { drtInstanceId: 1n, relayIncarnation: 2n },
    revision: 3n,
    entries: buildTopologyEntries(endpoints),
    contractMarker: RELAY_CONTRACT_MARKER,
  };
  expect(update.entries.map((e) => [e.namespace, e.canonicalModelId])).toEqual([['dev', 'llama'], ['prod', 'llama'], ['prod', 'mistral']]);
  expect(validateReadinessUpdate(update)).toEqual({ ok: true, accepted: update.entries, quarantined: [] });
  const decoded = decodeMessage('ServingReadinessUpdate', encodeMessage('ServingReadinessUpdate', update));
  expect(decoded).toEqual(update);
  // The member without a materialized pool has no pool_id on the wire either.
  expect(decoded.entries[1].members.map((m) => m.poolId !== undefined)).toEqual([false, true, false]);
});
