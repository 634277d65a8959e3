import { Metadata, status } from '@grpc/grpc-js';
import { ERROR_REASON_TRAILER } from '../../src/wire/constants';
import { RelayErrorReason } from '../../src/wire/enums';
import { RelayError, identityErrorReason, relayErrorReason, relayErrorReasonName } from '../../src/wire/errors';

// wire-contract.md §4.2, transcribed.
const TABLE: [number, string, status][] = [
  [1, 'RELAY_ERROR_REASON_CONTRACT_MISMATCH', status.FAILED_PRECONDITION],
  [2, 'RELAY_ERROR_REASON_INVALID_REQUEST', status.INVALID_ARGUMENT],
  [3, 'RELAY_ERROR_REASON_UNSUPPORTED_FEATURE', status.FAILED_PRECONDITION],
  [4, 'RELAY_ERROR_REASON_POOL_NOT_FOUND', status.NOT_FOUND],
  [5, 'RELAY_ERROR_REASON_PRODUCER_CHANGED', status.FAILED_PRECONDITION],
  [6, 'RELAY_ERROR_REASON_RESOURCE_LIMIT', status.RESOURCE_EXHAUSTED],
  [7, 'RELAY_ERROR_REASON_SUBSCRIBER_LAGGED', status.RESOURCE_EXHAUSTED],
  [8, 'RELAY_ERROR_REASON_SNAPSHOT_PROGRESS_TIMEOUT', status.RESOURCE_EXHAUSTED],
  [9, 'RELAY_ERROR_REASON_PUBLICATION_UNAVAILABLE', status.UNAVAILABLE],
  [10, 'RELAY_ERROR_REASON_INVALID_PUBLICATION', status.FAILED_PRECONDITION],
  [11, 'RELAY_ERROR_REASON_INTERNAL', status.INTERNAL],
];

test.each(TABLE)('reason %i → %s → code %i → trailer → reason', (reason, name, code) => {
  const err = new RelayError(reason as RelayErrorReason, 'diagnostic text');
  expect(err.code).toBe(code);
  expect(relayErrorReasonName(err.reason)).toBe(name);
  const st = err.toGrpcStatus();
  expect(st.code).toBe(code);
  expect(st.details).toBe('diagnostic text');
  expect(st.metadata.get(ERROR_REASON_TRAILER)).toEqual([name]);
  expect(relayErrorReason(st)).toBe(reason);
});

test('UNSPECIFIED maps to INTERNAL and decodes as no reason', () => {
  const st = new RelayError(RelayErrorReason.UNSPECIFIED, 'x').toGrpcStatus();
  expect(st.code).toBe(status.INTERNAL);
  expect(relayErrorReason(st)).toBeUndefined();
});

test.each([
  ['absent', undefined],
  ['unknown future reason', 'RELAY_ERROR_REASON_FUTURE'],
  ['unspecified', 'RELAY_ERROR_REASON_UNSPECIFIED'],
  ['short name', 'POOL_NOT_FOUND'],
  ['lower case', 'relay_error_reason_pool_not_found'],
  ['other enum', 'WORKER_ROLE_PREFILL'],
])('trailer %s decodes as no reason', (_name, value) => {
  const metadata = new Metadata();
  if (value !== undefined) metadata.set(ERROR_REASON_TRAILER, value);
  expect(relayErrorReason({ metadata })).toBeUndefined();
});

test('a status without metadata has no reason', () => {
  expect(relayErrorReason({})).toBeUndefined();
  expect(relayErrorReason({ metadata: null })).toBeUndefined();
});

test('unsupported identity errors map to UNSUPPORTED_FEATURE, malformed to INVALID_REQUEST', () => {
  expect(identityErrorReason(true)).toBe(RelayErrorReason.UNSUPPORTED_FEATURE);
  expect(identityErrorReason(false)).toBe(RelayErrorReason.INVALID_REQUEST);
});

test('an unknown reason number is rejected at construction', () => {
  expect(() => new RelayError(12 as RelayErrorReason, 'x')).toThrow(RangeError);
});
