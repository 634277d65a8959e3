// What a consumer does when a stream ends with an error (consumer.md §1.4, "Contract guidance"). The
// reason comes from the `kv-relay-error-reason` trailer; without one, only the status code is used.
// Message text is never consulted.
import { status as GrpcStatus } from '@grpc/grpc-js';
import { RelayErrorReason } from '../wire/enums';

export type StreamAction =
  /** reopen the same request after a backoff delay (admission limits, lag, restarts) */
  | 'retry'
  /** the requested producer is gone: wait for the next catalog value, then subscribe to what it lists */
  | 'refreshCatalog'
  /** the same request can never succeed: do not retry it unchanged */
  | 'stop';

const BY_REASON: Record<number, StreamAction> = {
  [RelayErrorReason.CONTRACT_MISMATCH]: 'stop',
  [RelayErrorReason.INVALID_REQUEST]: 'stop',
  [RelayErrorReason.UNSUPPORTED_FEATURE]: 'stop',
  [RelayErrorReason.POOL_NOT_FOUND]: 'refreshCatalog',
  [RelayErrorReason.PRODUCER_CHANGED]: 'refreshCatalog',
  [RelayErrorReason.RESOURCE_LIMIT]: 'retry',
  [RelayErrorReason.SUBSCRIBER_LAGGED]: 'retry',
  [RelayErrorReason.SNAPSHOT_PROGRESS_TIMEOUT]: 'retry',
  [RelayErrorReason.PUBLICATION_UNAVAILABLE]: 'retry',
  // Both fence the producer generation, which withdraws it from the catalog.
  [RelayErrorReason.INVALID_PUBLICATION]: 'refreshCatalog',
  [RelayErrorReason.INTERNAL]: 'refreshCatalog',
};

const BY_CODE: Partial<Record<number, StreamAction>> = {
  [GrpcStatus.INVALID_ARGUMENT]: 'stop',
  [GrpcStatus.UNIMPLEMENTED]: 'stop',
  [GrpcStatus.NOT_FOUND]: 'refreshCatalog',
  [GrpcStatus.FAILED_PRECONDITION]: 'refreshCatalog',
};

/** `reason` is the decoded trailer (undefined when absent, unknown or UNSPECIFIED). */
export function streamAction(reason: number | undefined, code: number): StreamAction {
  if (reason !== undefined && BY_REASON[reason] !== undefined) return BY_REASON[reason];
  return BY_CODE[code] ?? 'retry';
}

/** Catalog, readiness and load streams have no catalog to wait for: a refresh is a plain retry. */
export function planeStreamAction(reason: number | undefined, code: number): 'retry' | 'stop' {
  const action = streamAction(reason, code);
  return action === 'stop' ? 'stop' : 'retry';
}
