// The GetRelayInfo handshake of a connection epoch (wire-contract.md §5.2): the answer's envelope must
// be valid and it must name the Relay instance; that identity then fences every plane of the epoch.
import type { RelayIdentity, RelayInfo } from '../wire/types';
import { validateProtocolEnvelope } from '../wire/validate';

export type RelayInfoCheck =
  | { ok: true; relay: RelayIdentity }
  /** A marker or version mismatch can never succeed unchanged ('stop'); a missing identity may be a transient fault. */
  | { ok: false; reason: string; message: string; next: 'retry' | 'stop' };

export function checkRelayInfo(info: RelayInfo): RelayInfoCheck {
  const envelope = validateProtocolEnvelope(info.protocolVersion, info.contractMarker);
  if (!envelope.ok) return { ok: false, reason: envelope.error.kind, message: `GetRelayInfo: ${envelope.error.message}`, next: 'stop' };
  if (!info.relay) return { ok: false, reason: 'MissingField', message: 'GetRelayInfo carries no relay identity', next: 'retry' };
  return { ok: true, relay: info.relay };
}
