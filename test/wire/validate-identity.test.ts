// Table-driven checks of the identity validators (identity-topology-load.md §2.1, §2.2).
import {
  validateContractMarker,
  validateEndpointId,
  validateModelRegistration,
  validatePoolDescriptor,
  validateProducerIdentity,
  validateProtocolEnvelope,
  validateQuerySemantics,
  validateSubscriberId,
} from '../../src/wire/validate';
import type { DynamoEndpointId, KvPoolDescriptor, KvQuerySemantics, ModelRegistration, ProducerIdentity } from '../../src/wire/types';
import { expectResult, runCases, type Case } from './expect-validation';
import { MARKER, descriptor, producer } from './fixtures';

describe('envelope', () => {
  test.each([
    [1, MARKER, 'ok'],
    [1, 0, ['ContractMarker', false]],
    [2, MARKER, ['ProtocolVersion', false]],
    [0, MARKER, ['ProtocolVersion', false]],
    [2, 0x4b565232, ['ContractMarker', false]], // marker is checked first
  ] as const)('version %i marker %i', (version, marker, expected) => {
    expectResult(validateProtocolEnvelope(version, marker), expected as never);
  });

  test('requests carry only the marker', () => {
    expectResult(validateContractMarker(MARKER), 'ok');
    expectResult(validateContractMarker(0), ['ContractMarker', false]);
  });
});

describe('subscriber_id (no trimming, no truncation)', () => {
  test.each([
    ['consumer-a', true],
    ['', false],
    ['x'.repeat(128), true],
    ['x'.repeat(129), false],
    ['é'.repeat(64), true], // 128 UTF-8 bytes
    ['é'.repeat(64) + 'x', false], // 129 UTF-8 bytes, 65 characters
    ['consumer\nspoof', false],
    ['nul\u0000', false],
    ['del\u007f', false],
    ['c1\u0085', false],
    ['c1\u009f', false],
    [' padded ', true],
    ['zero\u200bwidth', true], // Cf, not Cc
    ['unicode-東京', true],
  ])('%j → %s', (id, ok) => {
    expectResult(validateSubscriberId(id), ok ? 'ok' : ['InvalidSubscriberId', false, 'subscriber_id']);
  });
});

describe('producer identity', () => {
  runCases<ProducerIdentity>(validateProducerIdentity, () => producer(), [
    ['valid', () => {}, 'ok'],
    ['dc_id 0 and incarnation 0 and seed 0 are allowed', (p) => {
      p.poolId!.dcId = 0n;
      p.producerIncarnation = 0n;
      p.ckfFormat!.seed = 0n;
    }, 'ok'],
    ['no pool id', (p) => delete p.poolId, ['MissingField', false, 'producer pool ID']],
    ['identity_version 0', (p) => (p.poolId!.identityVersion = 0), ['PoolIdentityVersion', false]],
    ['identity_version 2', (p) => (p.poolId!.identityVersion = 2), ['PoolIdentityVersion', true]],
    ['no indexer domain', (p) => delete p.poolId!.indexerDomain, ['MissingField', false, 'indexer domain']],
    ['no cache semantics', (p) => delete p.poolId!.indexerDomain!.cacheSemantics, ['MissingField', false, 'cache semantics']],
    ['no routing scope', (p) => delete p.poolId!.indexerDomain!.routingScope, ['MissingField', false, 'routing scope']],
    ['15-byte digest', (p) => (p.poolId!.indexerDomain!.cacheSemantics!.digest = new Uint8Array(15)), ['DigestLength', false, 'cache semantics']],
    ['17-byte digest', (p) => (p.poolId!.indexerDomain!.routingScope!.digest = new Uint8Array(17)), ['DigestLength', false, 'routing scope']],
    ['source UNSPECIFIED', (p) => (p.poolId!.indexerDomain!.cacheSemantics!.source = 0), ['IdentitySource', false, 'cache semantics']],
    ['source 3 (future)', (p) => (p.poolId!.indexerDomain!.routingScope!.source = 3), ['IdentitySource', true, 'routing scope']],
    ['source -1', (p) => (p.poolId!.indexerDomain!.cacheSemantics!.source = -1), ['IdentitySource', true]],
    ['explicit source', (p) => (p.poolId!.indexerDomain!.cacheSemantics!.source = 2), 'ok'],
    ['layout generation 0', (p) => (p.layoutGeneration = 0n), ['ZeroLayoutGeneration', false]],
    ['pool id checked before generation', (p) => {
      p.layoutGeneration = 0n;
      p.poolId!.identityVersion = 2;
    }, ['PoolIdentityVersion', true]],
    ['no CKF format', (p) => delete p.ckfFormat, ['MissingField', false, 'producer CKF format']],
    ['zero format version', (p) => (p.ckfFormat!.formatVersion = 0), ['ZeroFormatField', false, 'format version']],
    ['zero bucket count', (p) => (p.ckfFormat!.bucketCount = 0n), ['ZeroFormatField', false, 'bucket count']],
    ['zero fingerprint bits', (p) => (p.ckfFormat!.fingerprintBits = 0), ['ZeroFormatField', false, 'fingerprint width']],
    ['zero slots', (p) => (p.ckfFormat!.slotsPerBucket = 0), ['ZeroFormatField', false, 'slots per bucket']],
    ['zeros checked in order', (p) => {
      p.ckfFormat!.slotsPerBucket = 0;
      p.ckfFormat!.bucketCount = 0n;
    }, ['ZeroFormatField', false, 'bucket count']],
    ['format version 2', (p) => (p.ckfFormat!.formatVersion = 2), ['UnsupportedCkfFormat', true]],
    ['fingerprint bits 8', (p) => (p.ckfFormat!.fingerprintBits = 8), ['UnsupportedCkfFormat', true]],
    ['slots 8', (p) => (p.ckfFormat!.slotsPerBucket = 8), ['UnsupportedCkfFormat', true]],
    ['bucket count 2 (minimum)', (p) => (p.ckfFormat!.bucketCount = 2n), 'ok'],
    ['bucket count 2^24 (maximum)', (p) => (p.ckfFormat!.bucketCount = 1n << 24n), 'ok'],
    ['bucket count 2^25', (p) => (p.ckfFormat!.bucketCount = 1n << 25n), ['BucketCountTooLarge', true]],
    ['bucket count 2^24 + 1', (p) => (p.ckfFormat!.bucketCount = (1n << 24n) + 1n), ['BucketCountTooLarge', true]],
    ['bucket count u64::MAX', (p) => (p.ckfFormat!.bucketCount = (1n << 64n) - 1n), ['BucketCountTooLarge', true]],
    ['bucket count 1', (p) => (p.ckfFormat!.bucketCount = 1n), ['UnsupportedBucketCount', false]],
    ['bucket count 3 (not a power of two)', (p) => (p.ckfFormat!.bucketCount = 3n), ['UnsupportedBucketCount', false]],
    ['bucket count 524287', (p) => (p.ckfFormat!.bucketCount = 524287n), ['UnsupportedBucketCount', false]],
  ]);
});

describe('endpoint id', () => {
  const base = (): DynamoEndpointId => ({ namespace: 'prod', component: 'backend.a', endpoint: 'a.generate' });
  runCases<DynamoEndpointId>(validateEndpointId, base, [
    ['dots and slashes allowed', (e) => (e.namespace = 'team/prod'), 'ok'],
    ['empty namespace', (e) => (e.namespace = ''), ['InvalidText', false, 'endpoint namespace']],
    ['leading space', (e) => (e.namespace = ' prod'), ['InvalidText', false, 'endpoint namespace']],
    ['empty component', (e) => (e.component = ''), ['InvalidText', false, 'endpoint component']],
    ['trailing tab', (e) => (e.endpoint = 'generate\t'), ['InvalidText', false, 'endpoint name']],
    ['trailing NEL (Unicode whitespace)', (e) => (e.endpoint = 'generate\u0085'), ['InvalidText', false, 'endpoint name']],
    ['trailing ideographic space', (e) => (e.endpoint = 'generate\u3000'), ['InvalidText', false, 'endpoint name']],
    ['leading BOM is not whitespace', (e) => (e.endpoint = '\ufeffgenerate'), 'ok'],
    ['inner space', (e) => (e.endpoint = 'gen erate'), 'ok'],
  ]);
});

describe('model registration', () => {
  const base = (): ModelRegistration => ({ canonicalModelId: 'llama', target: { base: { baseModel: 'llama' } }, aliases: ['chat', 'llama'] });
  runCases<ModelRegistration>(validateModelRegistration, base, [
    ['valid (alias equal to the id is allowed)', () => {}, 'ok'],
    ['empty canonical id', (r) => (r.canonicalModelId = ''), ['InvalidText', false, 'canonical model ID']],
    ['no target', (r) => delete r.target, ['MissingField', false, 'model target']],
    ['unset oneof (future variant)', (r) => (r.target = {}), ['UnsupportedModelTarget', true]],
    ['empty base model', (r) => (r.target = { base: { baseModel: '' } }), ['InvalidText', false, 'base model ID']],
    ['lora', (r) => (r.target = { lora: { baseModel: 'llama', adapter: 'sql' } }), 'ok'],
    ['lora empty base', (r) => (r.target = { lora: { baseModel: '', adapter: 'sql' } }), ['InvalidText', false, 'LoRA base model ID']],
    ['lora padded adapter', (r) => (r.target = { lora: { baseModel: 'llama', adapter: 'sql ' } }), ['InvalidText', false, 'LoRA adapter ID']],
    ['empty alias', (r) => r.aliases.push(''), ['InvalidText', false, 'model alias']],
    ['repeated alias', (r) => r.aliases.push('chat'), ['DuplicateAlias', false]],
    ['unsorted aliases pass', (r) => (r.aliases = ['z', 'a']), 'ok'],
  ]);
});

describe('query semantics', () => {
  runCases<KvQuerySemantics>(validateQuerySemantics, () => ({ kvBlockSize: 16, hashFormat: 1 }), [
    ['standard', () => {}, 'ok'],
    ['eagle', (q) => (q.hashFormat = 2), 'ok'],
    ['block size 0', (q) => (q.kvBlockSize = 0), ['ZeroQueryBlockSize', false]],
    ['block size checked first', (q) => {
      q.kvBlockSize = 0;
      q.hashFormat = 0;
    }, ['ZeroQueryBlockSize', false]],
    ['format UNSPECIFIED', (q) => (q.hashFormat = 0), ['QueryHashFormat', false]],
    ['format 3 (future)', (q) => (q.hashFormat = 3), ['QueryHashFormat', true]],
    ['format -1', (q) => (q.hashFormat = -1), ['QueryHashFormat', true]],
  ]);
});

describe('pool descriptor', () => {
  const cases: Case<KvPoolDescriptor>[] = [
    ['valid', () => {}, 'ok'],
    ['no registrations passes', (d) => (d.registrations = []), 'ok'],
    ['no producer', (d) => delete d.producer, ['MissingField', false, 'pool producer']],
    ['invalid producer', (d) => (d.producer!.layoutGeneration = 0n), ['ZeroLayoutGeneration', false]],
    ['no serving endpoint', (d) => delete d.servingEndpoint, ['MissingField', false, 'serving endpoint']],
    ['invalid endpoint', (d) => (d.servingEndpoint!.component = ''), ['InvalidText', false, 'endpoint component']],
    ['no query semantics', (d) => delete d.querySemantics, ['MissingField', false, 'KV query semantics']],
    ['future hash format', (d) => (d.querySemantics!.hashFormat = 7), ['QueryHashFormat', true]],
    ['invalid registration', (d) => (d.registrations[0].target = {}), ['UnsupportedModelTarget', true]],
    ['no roles', (d) => (d.poolRoles = []), ['MissingWorkerRoles', false]],
    ['role UNSPECIFIED', (d) => (d.poolRoles = [0]), ['WorkerRole', false]],
    ['role 9 (future)', (d) => (d.poolRoles = [1, 9]), ['WorkerRole', true]],
    ['repeated role', (d) => (d.poolRoles = [1, 2, 1]), ['DuplicateWorkerRole', false]],
    ['producer before endpoint', (d) => {
      d.servingEndpoint!.namespace = '';
      d.producer!.ckfFormat!.formatVersion = 2;
    }, ['UnsupportedCkfFormat', true]],
  ];
  runCases<KvPoolDescriptor>(validatePoolDescriptor, () => descriptor(), cases);
});
