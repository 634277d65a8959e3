// Pure admission checks shared by every streaming RPC, in the contract's order (wire-contract.md
// §5.1): contract marker, then subscriber_id, then (SubscribeKvPool) the expected producer. Each
// returns the RelayError to end the stream with, or undefined when the request may proceed.
import { RelayErrorReason } from '../wire/enums';
import { RelayError, identityErrorReason } from '../wire/errors';
import type { ProducerIdentity } from '../wire/types';
import { validateContractMarker, validateProducerIdentity, validateSubscriberId } from '../wire/validate';
import type { WireValidation } from '../wire/validation';

export function checkMarker(contractMarker: number): RelayError | undefined {
  if (validateContractMarker(contractMarker).ok) return undefined;
  return new RelayError(RelayErrorReason.CONTRACT_MISMATCH, 'unsupported Relay v1 wire contract');
}

export function checkSubscriber(subscriberId: string): RelayError | undefined {
  return asRelayError(validateSubscriberId(subscriberId));
}

export function checkExpectedProducer(expected: ProducerIdentity | undefined): RelayError | undefined {
  if (!expected) return new RelayError(RelayErrorReason.INVALID_REQUEST, 'SubscribeKvPool requires expected_producer');
  return asRelayError(validateProducerIdentity(expected));
}

function asRelayError(result: WireValidation): RelayError | undefined {
  if (result.ok) return undefined;
  return new RelayError(identityErrorReason(result.error.unsupported), result.error.message);
}
