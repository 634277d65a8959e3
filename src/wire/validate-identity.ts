// Identity and catalog-descriptor validators, in the reference check order
// (identity-topology-load.md §2.1). `check*` throw a WireViolation (for composing validators);
// `validate*` return a WireValidation.
import { MAX_U64 } from '../config/limits';
import {
  CKF_FINGERPRINT_BITS,
  CKF_FORMAT_VERSION,
  CKF_SLOTS_PER_BUCKET,
  IDENTITY_DIGEST_BYTES,
  MAX_BUCKET_COUNT,
  MIN_BUCKET_COUNT,
  POOL_IDENTITY_VERSION,
  RELAY_CONTRACT_MARKER,
  RELAY_PROTOCOL_VERSION,
} from './constants';
import { IdentitySource, KvQueryHashFormat, WorkerRole, enumValueName, isKnownEnumValue } from './enums';
import { checkSubscriberId, checkText } from './text';
import type {
  CkfFormat,
  DigestIdentity,
  DynamoEndpointId,
  KvPoolDescriptor,
  KvPoolId,
  KvQuerySemantics,
  ModelRegistration,
  ProducerIdentity,
} from './types';
import { checked, fail, type WireValidation } from './validation';

function hex32(v: number): string {
  return `0x${(v >>> 0).toString(16).padStart(8, '0')}`;
}

export function checkContractMarker(marker: number): void {
  if (marker !== RELAY_CONTRACT_MARKER) fail('ContractMarker', `invalid Relay contract marker ${hex32(marker)}`, { value: marker });
}

/** Marker first, then protocol_version. */
export function checkProtocolEnvelope(protocolVersion: number, marker: number): void {
  checkContractMarker(marker);
  if (protocolVersion !== RELAY_PROTOCOL_VERSION) {
    fail('ProtocolVersion', `unsupported Relay protocol version ${protocolVersion}`, { value: protocolVersion });
  }
}

function checkDigest(field: string, identity: DigestIdentity | undefined): void {
  if (!identity) fail('MissingField', `${field} is missing`, { field });
  if (identity.digest.length !== IDENTITY_DIGEST_BYTES) {
    fail('DigestLength', `${field} digest has ${identity.digest.length} bytes, expected ${IDENTITY_DIGEST_BYTES}`, {
      field,
      value: identity.digest.length,
    });
  }
  if (!isKnownEnumValue('IdentitySource', identity.source) || identity.source === IdentitySource.UNSPECIFIED) {
    fail('IdentitySource', `${field} has invalid identity source ${identity.source}`, { field, value: identity.source });
  }
}

export function checkPoolId(poolId: KvPoolId): void {
  if (poolId.identityVersion !== POOL_IDENTITY_VERSION) {
    fail('PoolIdentityVersion', `unsupported pool identity version ${poolId.identityVersion}`, {
      value: poolId.identityVersion,
    });
  }
  const domain = poolId.indexerDomain;
  if (!domain) fail('MissingField', 'indexer domain is missing', { field: 'indexer domain' });
  checkDigest('cache semantics', domain.cacheSemantics);
  checkDigest('routing scope', domain.routingScope);
  // dc_id is unchecked: 0 is a valid DC id.
}

export function checkCkfFormat(format: CkfFormat): void {
  const zeroChecks: [string, number | bigint][] = [
    ['format version', format.formatVersion],
    ['bucket count', format.bucketCount],
    ['fingerprint width', format.fingerprintBits],
    ['slots per bucket', format.slotsPerBucket],
  ];
  for (const [field, value] of zeroChecks) {
    if (value === 0 || value === 0n) fail('ZeroFormatField', `CKF format has zero ${field}`, { field });
  }
  if (
    format.formatVersion !== CKF_FORMAT_VERSION ||
    format.fingerprintBits !== CKF_FINGERPRINT_BITS ||
    format.slotsPerBucket !== CKF_SLOTS_PER_BUCKET
  ) {
    fail(
      'UnsupportedCkfFormat',
      `unsupported CKF format (version ${format.formatVersion}, fingerprint bits ${format.fingerprintBits}, ` +
        `slots ${format.slotsPerBucket}); expected (${CKF_FORMAT_VERSION}, ${CKF_FINGERPRINT_BITS}, ${CKF_SLOTS_PER_BUCKET})`,
    );
  }
  const buckets = format.bucketCount;
  // A u64 always fits a 64-bit usize; only a value outside u64 (a hand-built object) overflows.
  if (buckets < 0n || buckets > MAX_U64) fail('BucketCountOverflow', 'CKF bucket count does not fit this platform', { value: buckets });
  if (buckets > MAX_BUCKET_COUNT) {
    fail('BucketCountTooLarge', `CKF bucket count ${buckets} exceeds the supported maximum ${MAX_BUCKET_COUNT}`, {
      value: buckets,
    });
  }
  if (buckets < MIN_BUCKET_COUNT || (buckets & (buckets - 1n)) !== 0n) {
    fail('UnsupportedBucketCount', `CKF bucket count ${buckets} is not a power of two in 2..=${MAX_BUCKET_COUNT}`, {
      value: buckets,
    });
  }
  // The seed is unchecked.
}

export function checkProducerIdentity(identity: ProducerIdentity): void {
  if (!identity.poolId) fail('MissingField', 'producer pool ID is missing', { field: 'producer pool ID' });
  checkPoolId(identity.poolId);
  if (identity.layoutGeneration === 0n) fail('ZeroLayoutGeneration', 'layout generation must be nonzero');
  if (!identity.ckfFormat) fail('MissingField', 'producer CKF format is missing', { field: 'producer CKF format' });
  checkCkfFormat(identity.ckfFormat);
  // producer_incarnation is unchecked: 0 is allowed.
}

export function checkEndpointId(endpoint: DynamoEndpointId): void {
  checkText('endpoint namespace', endpoint.namespace);
  checkText('endpoint component', endpoint.component);
  checkText('endpoint name', endpoint.endpoint);
}

export function checkModelRegistration(registration: ModelRegistration): void {
  checkText('canonical model ID', registration.canonicalModelId);
  const target = registration.target;
  if (!target) fail('MissingField', 'model target is missing', { field: 'model target' });
  if (target.base) {
    checkText('base model ID', target.base.baseModel);
  } else if (target.lora) {
    checkText('LoRA base model ID', target.lora.baseModel);
    checkText('LoRA adapter ID', target.lora.adapter);
  } else {
    // An unknown future oneof variant decodes as unset; never fall back to a base-model target.
    fail('UnsupportedModelTarget', 'model target is not a supported variant');
  }
  const seen = new Set<string>();
  for (const alias of registration.aliases) {
    checkText('model alias', alias);
    if (seen.has(alias)) fail('DuplicateAlias', `model registration repeats alias ${JSON.stringify(alias)}`);
    seen.add(alias);
  }
}

export function checkQuerySemantics(semantics: KvQuerySemantics): void {
  if (semantics.kvBlockSize === 0) fail('ZeroQueryBlockSize', 'KV query block size must be nonzero');
  const format = semantics.hashFormat;
  if (!isKnownEnumValue('KvQueryHashFormat', format) || format === KvQueryHashFormat.UNSPECIFIED) {
    fail('QueryHashFormat', `unsupported KV query hash format ${format}`, { value: format });
  }
}

/** Role-set rule: every value a known non-UNSPECIFIED role, no repeats; empty is fine. */
export function checkRoleSet(roles: readonly number[]): void {
  const seen = new Set<number>();
  for (const role of roles) {
    if (!isKnownEnumValue('WorkerRole', role) || role === WorkerRole.UNSPECIFIED) {
      fail('WorkerRole', `unsupported worker role ${role}`, { value: role });
    }
    if (seen.has(role)) fail('DuplicateWorkerRole', `worker-role set repeats ${enumValueName('WorkerRole', role)}`);
    seen.add(role);
  }
}

export function checkWorkerRoles(roles: readonly number[]): void {
  if (roles.length === 0) fail('MissingWorkerRoles', 'worker-role set must not be empty');
  checkRoleSet(roles);
}

export function checkPoolDescriptor(descriptor: KvPoolDescriptor): void {
  if (!descriptor.producer) fail('MissingField', 'pool producer is missing', { field: 'pool producer' });
  checkProducerIdentity(descriptor.producer);
  if (!descriptor.servingEndpoint) fail('MissingField', 'serving endpoint is missing', { field: 'serving endpoint' });
  checkEndpointId(descriptor.servingEndpoint);
  if (!descriptor.querySemantics) fail('MissingField', 'KV query semantics is missing', { field: 'KV query semantics' });
  checkQuerySemantics(descriptor.querySemantics);
  // An empty registration list passes the wire check (the producer always sends at least one).
  descriptor.registrations.forEach(checkModelRegistration);
  checkWorkerRoles(descriptor.poolRoles);
}

export const validateContractMarker = (marker: number): WireValidation => checked(() => checkContractMarker(marker));
export const validateProtocolEnvelope = (protocolVersion: number, marker: number): WireValidation =>
  checked(() => checkProtocolEnvelope(protocolVersion, marker));
export const validateSubscriberId = (subscriberId: string): WireValidation => checked(() => checkSubscriberId(subscriberId));
export const validatePoolId = (poolId: KvPoolId): WireValidation => checked(() => checkPoolId(poolId));
export const validateCkfFormat = (format: CkfFormat): WireValidation => checked(() => checkCkfFormat(format));
export const validateProducerIdentity = (identity: ProducerIdentity): WireValidation =>
  checked(() => checkProducerIdentity(identity));
export const validateEndpointId = (endpoint: DynamoEndpointId): WireValidation => checked(() => checkEndpointId(endpoint));
export const validateModelRegistration = (registration: ModelRegistration): WireValidation =>
  checked(() => checkModelRegistration(registration));
export const validateQuerySemantics = (semantics: KvQuerySemantics): WireValidation =>
  checked(() => checkQuerySemantics(semantics));
export const validateWorkerRoles = (roles: readonly number[]): WireValidation => checked(() => checkWorkerRoles(roles));
export const validatePoolDescriptor = (descriptor: KvPoolDescriptor): WireValidation =>
  checked(() => checkPoolDescriptor(descriptor));
