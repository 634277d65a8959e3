// Every response message the publication layer sends, encoded once: the transport writes these
// bytes as they are and never re-encodes. Envelope fields (protocol version, relay identity,
// contract marker) are filled in here and nowhere else.
import { RELAY_CONTRACT_MARKER, RELAY_PROTOCOL_VERSION } from '../wire/constants';
import { encodeMessage } from '../wire/codec';
import { FilterUpdateKind } from '../wire/enums';
import type { ProducerIdentity, RelayIdentity, WireMessages } from '../wire/types';
import { FRAME_OVERHEAD_BYTES } from '../config/defaults';
import type { CatalogState, PoolLoadState, ReadinessState, ServingLoadState } from './source';
import type { Window } from './windows';

const EMPTY = new Uint8Array(0);

/** Wall clock in microseconds since the Unix epoch. */
export function nowMicros(): bigint {
  return BigInt(Math.round((performance.timeOrigin + performance.now()) * 1000));
}

type Envelope = 'protocolVersion' | 'relay' | 'contractMarker';
type ResponseName = 'RelayInfo' | 'KvPoolCatalogUpdate' | 'ServingReadinessUpdate' | 'KvPoolLoadUpdate' | 'ServingLoadUpdate' | 'FilterUpdate';

/** Encodes a response with its envelope: protocol version, relay identity, contract marker. */
function response<N extends ResponseName>(type: N, relay: RelayIdentity, body: Omit<WireMessages[N], Envelope>): Buffer {
  return encodeMessage(type, { protocolVersion: RELAY_PROTOCOL_VERSION, relay, ...body, contractMarker: RELAY_CONTRACT_MARKER } as WireMessages[N]);
}

function windowFields(window: Window<unknown>): { windowSequence: bigint; observedMs: bigint; windowMs: bigint } {
  return { windowSequence: window.sequence, observedMs: window.observedMs, windowMs: window.windowMs };
}

export function relayInfoMessage(relay: RelayIdentity): Buffer {
  return response('RelayInfo', relay, {});
}

export function catalogMessage(relay: RelayIdentity, state: CatalogState): Buffer {
  return response('KvPoolCatalogUpdate', relay, { revision: state.revision, snapshot: state.snapshot });
}

export function readinessMessage(relay: RelayIdentity, state: ReadinessState): Buffer {
  return response('ServingReadinessUpdate', relay, { revision: state.revision, entries: state.entries });
}

export function poolLoadMessage(relay: RelayIdentity, window: Window<PoolLoadState>): Buffer {
  return response('KvPoolLoadUpdate', relay, { ...windowFields(window), pools: window.state.pools });
}

export function servingLoadMessage(relay: RelayIdentity, window: Window<ServingLoadState>): Buffer {
  return response('ServingLoadUpdate', relay, { ...windowFields(window), pools: window.state.pools, models: window.state.models });
}

export function filterUpdateMessage(
  relay: RelayIdentity,
  producer: ProducerIdentity,
  baseSequence: bigint,
  sequence: bigint,
  kind: number,
  payload: Uint8Array,
): Buffer {
  const rest = response('FilterUpdate', relay, { producer, baseSequence, sequence, sendTsUs: nowMicros(), kind, payload: EMPTY });
  return payload.length === 0 ? rest : spliceBeforeMarker(rest, PAYLOAD_TAG, payload);
}

// FilterUpdate.payload is field 8 (length-delimited); the contract marker (field 127, fixed32,
// never 0 so always written) is the only field after it: 2 tag bytes and 4 value bytes.
const PAYLOAD_TAG = (8 << 3) | 2;
const MARKER_FIELD_BYTES = 6;

/**
 * `message` (encoded without the bytes field `tag`) with that field inserted before the trailing
 * contract marker: the same bytes as one canonical encode, but a multi-MiB snapshot payload is
 * copied once instead of through the protobuf writer (milliseconds on the event loop per chunk).
 */
function spliceBeforeMarker(message: Buffer, tag: number, payload: Uint8Array): Buffer {
  const at = message.length - MARKER_FIELD_BYTES;
  const length: number[] = [];
  for (let n = payload.length; ; n >>>= 7) {
    if (n < 0x80) {
      length.push(n);
      break;
    }
    length.push((n & 0x7f) | 0x80);
  }
  const out = Buffer.allocUnsafe(message.length + 1 + length.length + payload.length);
  message.copy(out, 0, 0, at);
  let pos = at;
  out[pos++] = tag;
  for (const b of length) out[pos++] = b;
  out.set(payload, pos);
  message.copy(out, pos + payload.length, at);
  return out;
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
