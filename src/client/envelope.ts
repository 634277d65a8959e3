// The Relay identity must stay constant for the life of one stream (consumer.md §1.3); the envelope
// itself is checked by the wire plane validators.
import type { RelayIdentity } from '../wire/types';
import type { PlaneValidation } from '../wire/plane';
import type { WireValidation } from '../wire/validate';
import { PlaneError, type Plane, type Quarantined } from './plane-error';

export function relayLabel(relay: RelayIdentity): string {
  return `${relay.drtInstanceId.toString(16)}/${relay.relayIncarnation.toString(16)}`;
}

export function sameRelay(a: RelayIdentity, b: RelayIdentity): boolean {
  return a.drtInstanceId === b.drtInstanceId && a.relayIncarnation === b.relayIncarnation;
}

/** `relay` has passed the envelope validator (present). */
export function checkStreamRelay(plane: Plane, relay: RelayIdentity, streamRelay: RelayIdentity | undefined): RelayIdentity {
  if (streamRelay && !sameRelay(streamRelay, relay)) {
    throw new PlaneError(plane, 'RelayIdentityChanged', `relay identity changed within the stream (${relayLabel(streamRelay)} -> ${relayLabel(relay)})`);
  }
  return relay;
}

/** A failed validation invalidates the whole plane. */
export function requireValid(plane: Plane, result: WireValidation): void {
  if (!result.ok) throw new PlaneError(plane, result.error.kind, result.error.message);
}

/** The accepted entries of a valid plane message; an invalid one invalidates the whole plane. */
export function acceptedEntries<T>(plane: Plane, result: PlaneValidation<T>, label: (entry: T) => string): { accepted: T[]; quarantined: Quarantined[] } {
  if (!result.ok) throw new PlaneError(plane, result.error.kind, result.error.message);
  return {
    accepted: result.accepted,
    quarantined: result.quarantined.map((q) => ({ index: q.index, label: label(q.entry), message: q.error.message })),
  };
}
