// Relay application errors (wire-contract.md §4): a RelayErrorReason travels as the gRPC status code
// of §4.2 plus the ASCII trailer `kv-relay-error-reason: RELAY_ERROR_REASON_<NAME>`. The message text
// is diagnostic only; clients act on the reason (or the bare code when there is none).
import { Metadata, status as GrpcStatus, type StatusObject } from '@grpc/grpc-js';
import { ERROR_REASON_TRAILER } from './constants';
import { RelayErrorReason, enumValueByName, enumValueName } from './enums';

/** §4.2: reason → gRPC status code. */
export const RELAY_ERROR_STATUS: Readonly<Record<RelayErrorReason, GrpcStatus>> = Object.freeze({
  [RelayErrorReason.UNSPECIFIED]: GrpcStatus.INTERNAL,
  [RelayErrorReason.CONTRACT_MISMATCH]: GrpcStatus.FAILED_PRECONDITION,
  [RelayErrorReason.INVALID_REQUEST]: GrpcStatus.INVALID_ARGUMENT,
  [RelayErrorReason.UNSUPPORTED_FEATURE]: GrpcStatus.FAILED_PRECONDITION,
  [RelayErrorReason.POOL_NOT_FOUND]: GrpcStatus.NOT_FOUND,
  [RelayErrorReason.PRODUCER_CHANGED]: GrpcStatus.FAILED_PRECONDITION,
  [RelayErrorReason.RESOURCE_LIMIT]: GrpcStatus.RESOURCE_EXHAUSTED,
  [RelayErrorReason.SUBSCRIBER_LAGGED]: GrpcStatus.RESOURCE_EXHAUSTED,
  [RelayErrorReason.SNAPSHOT_PROGRESS_TIMEOUT]: GrpcStatus.RESOURCE_EXHAUSTED,
  [RelayErrorReason.PUBLICATION_UNAVAILABLE]: GrpcStatus.UNAVAILABLE,
  [RelayErrorReason.INVALID_PUBLICATION]: GrpcStatus.FAILED_PRECONDITION,
  [RelayErrorReason.INTERNAL]: GrpcStatus.INTERNAL,
});

/** The exact proto enum name, e.g. 'RELAY_ERROR_REASON_POOL_NOT_FOUND'. */
export function relayErrorReasonName(reason: RelayErrorReason): string {
  const name = enumValueName('RelayErrorReason', reason);
  if (name === undefined) throw new RangeError(`unknown RelayErrorReason ${reason}`);
  return name;
}

export class RelayError extends Error {
  readonly code: GrpcStatus;

  constructor(
    readonly reason: RelayErrorReason,
    message: string,
  ) {
    super(message);
    this.name = 'RelayError';
    this.code = RELAY_ERROR_STATUS[reason];
    if (this.code === undefined) throw new RangeError(`unknown RelayErrorReason ${reason}`);
  }

  /** The status a grpc-js handler ends the call with (trailers, or trailers-only before streaming). */
  toGrpcStatus(): StatusObject {
    const metadata = new Metadata();
    metadata.set(ERROR_REASON_TRAILER, relayErrorReasonName(this.reason));
    return { code: this.code, details: this.message, metadata };
  }
}

/** §2.2 / service.rs identity_status: unsupported → UNSUPPORTED_FEATURE, malformed → INVALID_REQUEST. */
export function identityErrorReason(unsupported: boolean): RelayErrorReason {
  return unsupported ? RelayErrorReason.UNSUPPORTED_FEATURE : RelayErrorReason.INVALID_REQUEST;
}

/**
 * The reason a status carries in its `kv-relay-error-reason` trailer. Absent, unknown (e.g. a future
 * RELAY_ERROR_REASON_FUTURE) or UNSPECIFIED ⇒ undefined: fall back to the status code.
 */
export function relayErrorReason(status: { metadata?: Metadata | null }): RelayErrorReason | undefined {
  const values = status.metadata?.get(ERROR_REASON_TRAILER) ?? [];
  if (values.length === 0) return undefined;
  const raw = values[0];
  const name = typeof raw === 'string' ? raw : raw.toString('ascii');
  const reason = enumValueByName('RelayErrorReason', name) as RelayErrorReason | undefined;
  return reason === RelayErrorReason.UNSPECIFIED ? undefined : reason;
}
