// Shapes shared by the client's planes and pool subscriptions: the error event and failure labels.
import type { Plane } from './plane-error';
import { PlaneError } from './plane-error';
import { ReplicaFault } from './replica';
import type { FailureDecision, StreamFailure } from './resilient-stream';

export interface ClientErrorEvent {
  /** 'relay': the GetRelayInfo handshake or a change of Relay instance (a new connection epoch). */
  plane: Plane | 'pool' | 'relay';
  poolKey?: string;
  /** Trailer reason name, status code name, or the validation rule that failed. */
  reason: string;
  code?: number;
  relayReason?: number;
  message: string;
  /** What the client does next. */
  next: FailureDecision;
}

export function failureFields(failure: StreamFailure): Omit<ClientErrorEvent, 'plane' | 'next'> {
  return { reason: failure.reason, code: failure.code, relayReason: failure.relayReason, message: failure.message };
}

/** Labels a validation error thrown while handling a message. */
export function describeInvalid(err: unknown): { reason: string; message: string } {
  if (err instanceof PlaneError || err instanceof ReplicaFault) return { reason: err.reason, message: err.message };
  return { reason: 'invalidMessage', message: err instanceof Error ? err.message : String(err) };
}
