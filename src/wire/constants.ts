// Envelope constants of the v1 contract (wire-contract.md §1.1, §4.1, §5.1). MUST values.

export const RELAY_PROTOCOL_VERSION = 1;
/** ASCII "KVR1" as a little-endian fixed32 at field 127 of every top-level message. */
export const RELAY_CONTRACT_MARKER = 0x4b565231;
export const POOL_IDENTITY_VERSION = 1;
export const ERROR_REASON_TRAILER = 'kv-relay-error-reason';
export const SUBSCRIBER_ID_MAX_BYTES = 128;
export const RELAY_SERVICE_NAME = 'dynamo.kvrelay.v1.KvEventRelay';
export const RELAY_PROTO_PACKAGE = 'dynamo.kvrelay.v1';

/** The only CKF interpretation of the v1 contract (identity-topology-load.md §1.5, §2.1). */
export const CKF_FORMAT_VERSION = 1;
export const CKF_FINGERPRINT_BITS = 16;
export const CKF_SLOTS_PER_BUCKET = 4;
export const MIN_BUCKET_COUNT = 2n;
export const MAX_BUCKET_COUNT = 1n << 24n;
/** DigestIdentity.digest length. */
export const IDENTITY_DIGEST_BYTES = 16;
