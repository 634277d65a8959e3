// Table-driven checks of the topology, load and serving-load validators and of the catalog and
// readiness planes (identity-topology-load.md §2.1, §2.2, §2.4).
import { DataStatus, WorkerRole } from '../../src/wire/enums';
import {
  validateCatalogUpdate,
  validateKvPoolLoadEntry,
  validateKvPoolLoadUpdate,
  validateModelServingLoad,
  validatePoolServingLoad,
  validateReadinessUpdate,
  validateServingLoadUpdate,
  validateTopologyEntry,
} from '../../src/wire/validate';
import type {
  KvPoolCatalogUpdate,
  KvPoolLoadEntry,
  KvPoolLoadUpdate,
  ModelServingLoad,
  PoolServingLoad,
  ServingLoadUpdate,
  ServingReadinessUpdate,
  TopologyEntry,
} from '../../src/wire/types';
import { mutated, runCases } from './expect-validation';
import { MARKER, RELAY, descriptor, modelServingLoad, poolId, poolServingLoad, producer, topologyEntry } from './fixtures';

describe('topology entry', () => {
  runCases<TopologyEntry>(validateTopologyEntry, topologyEntry, [
    ['valid', () => {}, 'ok'],
    ['UNKNOWN state is valid', (e) => (e.state = 0), 'ok'],
    ['empty namespace', (e) => (e.namespace = ''), ['InvalidText', false, 'topology namespace']],
    ['padded model', (e) => (e.canonicalModelId = ' llama'), ['InvalidText', false, 'topology canonical model ID']],
    ['state 3 (future)', (e) => (e.state = 3), ['ReadinessState', true]],
    ['state -1', (e) => (e.state = -1), ['ReadinessState', true]],
    ['present role UNSPECIFIED', (e) => (e.presentRoles = [0]), ['WorkerRole', false]],
    ['empty present roles ok', (e) => (e.presentRoles = []), 'ok'],
    ['missing roles repeated', (e) => (e.missingRoles = [2, 2]), ['DuplicateWorkerRole', false]],
    ['duplicate endpoint role ENCODE', (e) => (e.duplicateRoleEndpoints = [WorkerRole.ENCODE]), ['UnsupportedDuplicateEndpointRole', false]],
    ['duplicate endpoint role future (role set first)', (e) => (e.duplicateRoleEndpoints = [1, 8]), ['WorkerRole', true]],
    ['duplicate endpoint roles PREFILL+DECODE', (e) => (e.duplicateRoleEndpoints = [1, 2]), 'ok'],
    ['no members', (e) => (e.members = []), ['MissingTopologyMembers', false]],
    ['member without endpoint', (e) => delete e.members[0].endpoint, ['MissingField', false, 'topology member endpoint']],
    ['member with empty component', (e) => (e.members[0].endpoint!.component = ''), ['InvalidText', false, 'endpoint component']],
    ['member in another namespace', (e) => (e.members[1].endpoint!.namespace = 'dev'), ['TopologyNamespaceMismatch', false]],
    ['member without roles', (e) => (e.members[0].roles = []), ['MissingWorkerRoles', false]],
    ['member with future pool id version', (e) => (e.members[0].poolId!.identityVersion = 2), ['PoolIdentityVersion', true]],
    ['member with short digest', (e) => (e.members[0].poolId!.indexerDomain!.cacheSemantics!.digest = new Uint8Array(1)), ['DigestLength', false]],
    ['repeated member tuple', (e) => e.members.push(structuredClone(e.members[0])), ['DuplicateTopologyMember', false]],
    ['dotted members are distinct', (e) => {
      e.members[0].endpoint = { namespace: 'prod', component: 'backend.a', endpoint: 'generate' };
      e.members[1].endpoint = { namespace: 'prod', component: 'backend', endpoint: 'a.generate' };
    }, 'ok'],
    ['adapter with empty id', (e) => (e.adapters[0].canonicalModelId = ''), ['InvalidText', false, 'adapter canonical model ID']],
    ['adapter with future state', (e) => (e.adapters[0].state = 4), ['ReadinessState', true]],
    ['adapter missing role UNSPECIFIED', (e) => (e.adapters[0].missingRoles = [0]), ['WorkerRole', false]],
    ['repeated adapter', (e) => e.adapters.push(structuredClone(e.adapters[0])), ['DuplicateAdapter', false]],
  ]);
});

describe('pool load entry and window', () => {
  const entry = (): KvPoolLoadEntry => ({ producer: producer(), kvUsedBlocks: 40n, totalKvBlocks: 100n, kvObservedRanks: 1, kvExpectedRanks: 1 });
  runCases<KvPoolLoadEntry>(validateKvPoolLoadEntry, entry, [
    ['valid', () => {}, 'ok'],
    ['saturated sums pass unchanged', (e) => (e.kvUsedBlocks = (1n << 64n) - 1n), 'ok'],
    ['no producer', (e) => delete e.producer, ['MissingField', false, 'pool producer']],
    ['generation 0', (e) => (e.producer!.layoutGeneration = 0n), ['ZeroLayoutGeneration', false]],
    ['future CKF', (e) => (e.producer!.ckfFormat!.formatVersion = 2), ['UnsupportedCkfFormat', true]],
  ]);

  const window = (): KvPoolLoadUpdate => ({
    protocolVersion: 1, relay: RELAY, windowSequence: 1n, observedMs: 1n, windowMs: 1000n,
    pools: [entry(), { ...entry(), producer: producer(2n) }], contractMarker: MARKER,
  });
  runCases<KvPoolLoadUpdate>(validateKvPoolLoadUpdate, window, [
    ['valid', () => {}, 'ok'],
    ['empty window is valid', (u) => (u.pools = []), 'ok'],
    ['bad marker', (u) => (u.contractMarker = 0), ['ContractMarker', false]],
    ['no relay', (u) => delete u.relay, ['MissingField', false, 'relay identity']],
    ['repeated producer', (u) => (u.pools[1].producer = producer()), ['DuplicateLoadPool', false]],
    ['pool without producer', (u) => delete u.pools[1].producer, ['MissingField', false, 'pool producer']],
    ['malformed producer is fatal', (u) => (u.pools[1].producer!.poolId!.indexerDomain!.cacheSemantics!.source = 0), ['IdentitySource', false]],
    ['unsupported producer is left to the entry', (u) => {
      u.pools[1].producer!.poolId!.identityVersion = 2;
      u.pools.push(structuredClone(u.pools[1]));
    }, 'ok'],
  ]);
});

describe('pool serving load', () => {
  runCases<PoolServingLoad>(validatePoolServingLoad, () => poolServingLoad(DataStatus.COMPLETE), [
    ['complete', () => {}, 'ok'],
    ['degraded without gauges', (p) => {
      p.load!.status = DataStatus.DEGRADED;
      p.load!.tokens = {};
    }, 'ok'],
    ['unavailable, deployment empty', (p) => {
      p.load!.status = DataStatus.UNAVAILABLE;
      p.load!.tokens = {};
      p.deployment = {};
    }, 'ok'],
    ['invalid producer', (p) => (p.producer!.layoutGeneration = 0n), ['ZeroLayoutGeneration', false]],
    ['no producer', (p) => delete p.producer, ['MissingField', false, 'pool producer']],
    ['no load', (p) => delete p.load, ['MissingField', false, 'pool load view']],
    ['status UNSPECIFIED', (p) => (p.load!.status = 0), ['DataStatus', false]],
    ['status 4 (future)', (p) => (p.load!.status = 4), ['DataStatus', true]],
    ['requests set', (p) => (p.load!.requests = { requestsStartedTotal: 0n, requestsCompletedTotal: 0n, requestsFailedTotal: 0n, requestsCancelledTotal: 0n }), ['LoadViewField', false, 'pool requests']],
    ['no tokens', (p) => delete p.load!.tokens, ['MissingField', false, 'pool token load']],
    ['complete without prefill tokens', (p) => delete p.load!.tokens!.activePrefillTokens, ['LoadViewField', false, 'active_prefill_tokens']],
    ['complete without decode blocks', (p) => delete p.load!.tokens!.activeDecodeBlocks, ['LoadViewField', false, 'active_decode_blocks']],
    ['degraded with decode blocks', (p) => {
      p.load!.status = DataStatus.DEGRADED;
      p.load!.tokens = { activeDecodeBlocks: 1n };
    }, ['LoadViewField', false, 'active_decode_blocks']],
    ['model-only field', (p) => (p.load!.tokens!.inputTokensTotal = 1n), ['LoadViewField', false, 'pool input_tokens_total']],
    ['model-only gauge', (p) => (p.load!.tokens!.inflightInputTokens = 1n), ['LoadViewField', false, 'pool inflight_input_tokens']],
    ['no deployment', (p) => delete p.deployment, ['MissingField', false, 'pool deployment status']],
  ]);
});

describe('model serving load', () => {
  runCases<ModelServingLoad>(validateModelServingLoad, () => modelServingLoad(DataStatus.COMPLETE), [
    ['complete', () => {}, 'ok'],
    ['unavailable keeps totals only', (m) => {
      Object.assign(m, modelServingLoad(DataStatus.UNAVAILABLE));
    }, 'ok'],
    ['empty namespace', (m) => (m.namespace = ''), ['InvalidText', false, 'serving load namespace']],
    ['no load', (m) => delete m.load, ['MissingField', false, 'model load view']],
    ['status 9', (m) => (m.load!.status = 9), ['DataStatus', true]],
    ['no requests', (m) => delete m.load!.requests, ['MissingField', false, 'model request counts']],
    ['complete without generating', (m) => delete m.load!.requests!.requestsGenerating, ['LoadViewField', false, 'requests_generating']],
    ['degraded with awaiting-first-token', (m) => (m.load!.status = DataStatus.DEGRADED), ['LoadViewField', false, 'requests_awaiting_first_token']],
    ['no tokens', (m) => delete m.load!.tokens, ['MissingField', false, 'model token load']],
    ['complete without inflight tokens', (m) => delete m.load!.tokens!.inflightInputTokens, ['LoadViewField', false, 'inflight_input_tokens']],
    ['no input total', (m) => delete m.load!.tokens!.inputTokensTotal, ['LoadViewField', false, 'input_tokens_total']],
    ['no output total', (m) => delete m.load!.tokens!.outputTokensTotal, ['LoadViewField', false, 'output_tokens_total']],
    ['pool-only field', (m) => (m.load!.tokens!.activePrefillTokens = 0n), ['LoadViewField', false, 'model active_prefill_tokens']],
    ['no deployment', (m) => delete m.deployment, ['MissingField', false, 'model deployment status']],
    ['repeated serving pool', (m) => m.deployment!.servingPools.push(poolId()), ['DuplicateServingPool', false]],
    ['distinct serving pools', (m) => m.deployment!.servingPools.push(poolId(1n)), 'ok'],
    ['invalid serving pool', (m) => (m.deployment!.servingPools[0].identityVersion = 0), ['PoolIdentityVersion', false]],
  ]);
});

describe('serving load window', () => {
  const window = (): ServingLoadUpdate => ({
    protocolVersion: 1, relay: RELAY, windowSequence: 1n, observedMs: 5n, windowMs: 10n,
    pools: [poolServingLoad(), { ...poolServingLoad(), producer: producer(2n) }],
    models: [modelServingLoad(), { ...modelServingLoad(), canonicalModelId: 'other' }],
    contractMarker: MARKER,
  });
  runCases<ServingLoadUpdate>(validateServingLoadUpdate, window, [
    ['valid', () => {}, 'ok'],
    ['empty window', (u) => {
      u.pools = [];
      u.models = [];
    }, 'ok'],
    ['wrong version', (u) => (u.protocolVersion = 2), ['ProtocolVersion', false]],
    ['no relay', (u) => delete u.relay, ['MissingField', false, 'relay identity']],
    ['repeated pool', (u) => (u.pools[1].producer = producer()), ['DuplicateLoadPool', false]],
    ['pool without producer', (u) => delete u.pools[0].producer, ['MissingField', false, 'pool producer']],
    ['unsupported pool is quarantined later', (u) => (u.pools[0].producer!.poolId!.identityVersion = 5), 'ok'],
    ['malformed pool is fatal', (u) => (u.pools[0].producer!.layoutGeneration = 0n), ['ZeroLayoutGeneration', false]],
    ['padded model id', (u) => (u.models[0].canonicalModelId = 'llama '), ['InvalidText', false, 'serving load canonical model ID']],
    ['repeated model', (u) => (u.models[1].canonicalModelId = 'llama'), ['DuplicateLoadModel', false]],
    ['same model in two namespaces', (u) => {
      u.models[1].canonicalModelId = 'llama';
      u.models[1].namespace = 'dev';
    }, 'ok'],
  ]);
});

describe('catalog plane', () => {
  const update = (): KvPoolCatalogUpdate => ({
    protocolVersion: 1, relay: RELAY, revision: 2n,
    snapshot: { pools: [descriptor(1n, 1n), descriptor(2n, 2n), descriptor(3n, 3n)] }, contractMarker: MARKER,
  });

  test('a valid catalog accepts every pool', () => {
    const result = validateCatalogUpdate(update());
    expect(result).toEqual({ ok: true, accepted: update().snapshot!.pools, quarantined: [] });
  });

  test('an unsupported descriptor is quarantined and the others kept', () => {
    const u = mutated(update(), (x) => (x.snapshot!.pools[1].producer!.ckfFormat!.formatVersion = 2));
    const result = validateCatalogUpdate(u);
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.accepted.map((d) => d.producer!.layoutGeneration)).toEqual([1n, 3n]);
    expect(result.quarantined).toHaveLength(1);
    expect(result.quarantined[0]).toMatchObject({ index: 1, error: { kind: 'UnsupportedCkfFormat', unsupported: true } });
  });

  test.each([
    ['bad marker', (x: KvPoolCatalogUpdate) => (x.contractMarker = 1), 'ContractMarker'],
    ['wrong version', (x: KvPoolCatalogUpdate) => (x.protocolVersion = 0), 'ProtocolVersion'],
    ['no relay', (x: KvPoolCatalogUpdate) => delete x.relay, 'MissingField'],
    ['no snapshot', (x: KvPoolCatalogUpdate) => delete x.snapshot, 'MissingField'],
    ['a malformed descriptor', (x: KvPoolCatalogUpdate) => (x.snapshot!.pools[2].poolRoles = []), 'MissingWorkerRoles'],
    ['one pool twice (other generation)', (x: KvPoolCatalogUpdate) => x.snapshot!.pools.push(descriptor(9n, 1n)), 'DuplicateCatalogPool'],
  ])('%s invalidates the whole catalog', (_name, mutate, kind) => {
    const result = validateCatalogUpdate(mutated(update(), mutate));
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error.kind).toBe(kind);
  });

  test('an empty catalog is valid', () => {
    const result = validateCatalogUpdate(mutated(update(), (x) => (x.snapshot!.pools = [])));
    expect(result).toEqual({ ok: true, accepted: [], quarantined: [] });
  });
});

describe('readiness plane', () => {
  const other = (): TopologyEntry => ({ ...topologyEntry(), canonicalModelId: 'other' });
  const update = (): ServingReadinessUpdate => ({
    protocolVersion: 1, relay: RELAY, revision: 1n, entries: [topologyEntry(), other()], contractMarker: MARKER,
  });

  test('valid entries are accepted', () => {
    expect(validateReadinessUpdate(update())).toEqual({ ok: true, accepted: update().entries, quarantined: [] });
  });

  test('an unsupported entry is quarantined', () => {
    const result = validateReadinessUpdate(mutated(update(), (x) => (x.entries[0].state = 7)));
    expect(result.ok && result.accepted.map((e) => e.canonicalModelId)).toEqual(['other']);
    expect(result.ok && result.quarantined.map((q) => q.error.kind)).toEqual(['ReadinessState']);
  });

  test.each([
    ['bad marker', (x: ServingReadinessUpdate) => (x.contractMarker = 0), 'ContractMarker'],
    ['no relay', (x: ServingReadinessUpdate) => delete x.relay, 'MissingField'],
    ['a malformed entry', (x: ServingReadinessUpdate) => (x.entries[1].members = []), 'MissingTopologyMembers'],
    ['a model twice', (x: ServingReadinessUpdate) => (x.entries[1].canonicalModelId = 'llama'), 'DuplicateTopologyEntry'],
  ])('%s invalidates the whole update', (_name, mutate, kind) => {
    const result = validateReadinessUpdate(mutated(update(), mutate));
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error.kind).toBe(kind);
  });
});
