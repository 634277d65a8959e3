// Every response message the publication layer sends, encoded once: the transport writes these
// bytes as they are and never re-encodes. Envelope fields (protocol version, relay identity,
// contract marker) are filled in here and nowhere else.
import { RELAY_CONTRACT_MARKER, RELAY_PROTOCOL_VERSION } from '../wire/constants';
import { encodeMessage } from '../wire/codec';
import { FilterUpdateKind } from '../wire/enums';
import type { ProducerIdentity, RelayIdentity } from '../wire/types';
import { FRAME_OVERHEAD_BYTES } from '../config/defaults';
import type { CatalogState, PoolLoadState, ReadinessState, ServingLoadState } from './source';
import type { Window } from './windows';

const EMPTY = new Uint8Array(0);

/** Wall clock in microseconds since the Unix epoch. */
export function nowMicros(): bigint {
  return BigInt(Math.round((performance.timeOrigin + performance.now()) * 1000));
}

export function relayInfoMessage(relay: RelayIdentity): Buffer {
  return encodeMessage('RelayInfo', {
    protocolVersion: RELAY_PROTOCOL_VERSION,
    relay,
    contractMarker: RELAY_CONTRACT_MARKER,
  });
}

export function catalogMessage(relay: RelayIdentity, state: CatalogState): Buffer {
  return encodeMessage('KvPoolCatalogUpdate', {
    protocolVersion: RELAY_PROTOCOL_VERSION,
    relay,
    revision: state.revision,
    snapshot: state.snapshot,
    contractMarker: RELAY_CONTRACT_MARKER,
  });
}

export function readinessMessage(relay: RelayIdentity, state: ReadinessState): Buffer {
  return encodeMessage('ServingReadinessUpdate', {
    protocolVersion: RELAY_PROTOCOL_VERSION,
    relay,
    revision: state.revision,
    entries: state.entries,
    contractMarker: RELAY_CONTRACT_MARKER,
  });
}

export function poolLoadMessage(relay: RelayIdentity, window: Window<PoolLoadState>): Buffer {
  return encodeMessage('KvPoolLoadUpdate', {
    protocolVersion: RELAY_PROTOCOL_VERSION,
    relay,
    windowSequence: window.sequence,
    observedMs: window.observedMs,
    windowMs: window.windowMs,
    pools: window.state.pools,
    contractMarker: RELAY_CONTRACT_MARKER,
  });
}

export function servingLoadMessage(relay: RelayIdentity, window: Window<ServingLoadState>): Buffer {
  return encodeMessage('ServingLoadUpdate', {
    protocolVersion: RELAY_PROTOCOL_VERSION,
    relay,
    windowSequence: window.sequence,
    observedMs: window.observedMs,
    windowMs: window.windowMs,
    pools: window.state.pools,
    models: window.state.models,
    contractMarker: RELAY_CONTRACT_MARKER,
  });
}

export function filterUpdateMessage(
  relay: RelayIdentity,
  producer: ProducerIdentity,
  baseSequence: bigint,
  sequence: bigint,
  kind: number,
  payload: Uint8Array,
): Buffer {
  return encodeMessage('FilterUpdate', {
    protocolVersion: RELAY_PROTOCOL_VERSION,
    relay,
    producer,
    baseSequence,
    sequence,
    sendTsUs: nowMicros(),
    kind,
    payload,
    contractMarker: RELAY_CONTRACT_MARKER,
  });
}

export function heartbeatMessage(relay: RelayIdentity, producer: ProducerIdentity, sequence: bigint): Buffer {
  return filterUpdateMessage(relay, producer, sequence, sequence, FilterUpdateKind.HEARTBEAT, EMPTY);
}

/**
 * One pool frame (snapshot chunk or delta) shared by every subscriber: encoded into FilterUpdate
 * bytes the first time a subscriber needs it, then the same Buffer goes to everyone.
 */
export class SharedFrame {
  private encoded: Buffer | undefined;
  /** Queue accounting of the frame: CBI1 payload length plus the fixed per-frame overhead. */
  readonly accountedBytes: number;

  constructor(
    private readonly relay: RelayIdentity,
    private readonly producer: ProducerIdentity,
    readonly kind: number,
    readonly baseSequence: bigint,
    readonly sequence: bigint,
    private payload: Buffer | undefined,
  ) {
    this.accountedBytes = (payload?.length ?? 0) + FRAME_OVERHEAD_BYTES;
  }

  get bytes(): Buffer {
    if (!this.encoded) {
      const payload = this.payload ?? EMPTY;
      this.encoded = filterUpdateMessage(this.relay, this.producer, this.baseSequence, this.sequence, this.kind, payload);
      this.payload = undefined; // the encoded message holds its own copy
    }
    return this.encoded;
  }
}
