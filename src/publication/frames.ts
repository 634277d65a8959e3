// Every response message the publication layer sends, encoded once: the transport writes these
// bytes as they are and never re-encodes. Envelope fields (protocol version, relay identity,
// contract marker) are filled in here and nowhere else.
import { RELAY_CONTRACT_MARKER, RELAY_PROTOCOL_VERSION } from '../wire/constants';
import { encodeMessage } from '../wire/codec';
import { FilterUpdateKind } from '../wire/enums';
import type { ProducerIdentity, RelayIdentity, WireMessages } from '../wire/types';
import { FRAME_OVERHEAD_BYTES } from '../config/defaults';
import { filterUpdateBytes, MARKER_FIELD_BYTES } from './filter-update';
import type { CatalogState, PoolLoadState, ReadinessState, ServingLoadState } from './source';
import type { Window } from './windows';

const EMPTY = new Uint8Array(0);

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

/**
 * FilterUpdate bytes around a cached encoding of fields 1-3 (protocol version, relay, producer):
 * those are the same in every frame of a pool generation, and encoding the nested producer identity
 * through the codec costs tens of µs per delta (filter-update.ts writes the rest). A multi-MiB
 * snapshot payload is copied once.
 */
export function filterUpdateMessage(
  relay: RelayIdentity,
  producer: ProducerIdentity,
  baseSequence: bigint,
  sequence: bigint,
  kind: number,
  payload: Uint8Array,
): Buffer {
  return filterUpdateBytes(filterPrefix(relay, producer), baseSequence, sequence, kind, payload);
}

/** Fields 1-3 of FilterUpdate per producer identity (identities are immutable values). */
const filterPrefixes = new WeakMap<ProducerIdentity, { relay: RelayIdentity; bytes: Buffer }>();

/** The bytes every FilterUpdate of `producer` served by `relay` starts with (filter-update.ts). */
export function filterPrefix(relay: RelayIdentity, producer: ProducerIdentity): Buffer {
  const cached = filterPrefixes.get(producer);
  if (cached?.relay === relay) return cached.bytes;
  // Every later field at its zero value is omitted: what remains is fields 1-3 and the marker.
  const head = response('FilterUpdate', relay, { producer, baseSequence: 0n, sequence: 0n, sendTsUs: 0n, kind: 0, payload: EMPTY });
  const bytes = Buffer.from(head.subarray(0, head.length - MARKER_FIELD_BYTES));
  filterPrefixes.set(producer, { relay, bytes });
  return bytes;
}

export function heartbeatMessage(relay: RelayIdentity, producer: ProducerIdentity, sequence: bigint): Buffer {
  return filterUpdateMessage(relay, producer, sequence, sequence, FilterUpdateKind.HEARTBEAT, EMPTY);
}

/**
 * One pool frame (snapshot chunk or delta) shared by every subscriber: encoded into FilterUpdate
 * bytes the first time a subscriber needs it (unless its feed encoded it already: `encoded`, whose
 * payload field is `payload`), then the same Buffer goes to everyone.
 */
export class SharedFrame {
  /** Queue accounting of the frame: CBI1 payload length plus the fixed per-frame overhead. */
  readonly accountedBytes: number;

  constructor(
    private readonly relay: RelayIdentity,
    private readonly producer: ProducerIdentity,
    readonly kind: number,
    readonly baseSequence: bigint,
    readonly sequence: bigint,
    private payload: Buffer | undefined,
    private encoded?: Buffer,
  ) {
    this.accountedBytes = (payload?.length ?? 0) + FRAME_OVERHEAD_BYTES;
    if (encoded) this.payload = undefined;
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
