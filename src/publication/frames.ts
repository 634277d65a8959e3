// Every response message the publication layer sends, encoded once: the transport writes these
// bytes as they are and never re-encodes. Envelope fields (protocol version, relay identity,
// contract marker) are filled in here and nowhere else.
import { RELAY_CONTRACT_MARKER, RELAY_PROTOCOL_VERSION } from '../wire/constants';
import { encodeMessage } from '../wire/codec';
import { FilterUpdateKind } from '../wire/enums';
import type { ProducerIdentity, RelayIdentity, WireMessages } from '../wire/types';
import { FRAME_OVERHEAD_BYTES } from '../config/defaults';
import { MAX_U64 } from '../config/limits';
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

/**
 * FilterUpdate bytes, built by hand around a cached encoding of fields 1-3 (protocol version, relay,
 * producer): those are the same in every frame of a pool generation, and encoding the nested
 * producer identity through the codec costs tens of µs per delta. The rest is written as a canonical
 * proto3 encoder writes it (fields in number order, zero values omitted), so the bytes equal one
 * encodeMessage of the whole message, and a multi-MiB snapshot payload is copied once.
 */
export function filterUpdateMessage(
  relay: RelayIdentity,
  producer: ProducerIdentity,
  baseSequence: bigint,
  sequence: bigint,
  kind: number,
  payload: Uint8Array,
): Buffer {
  const prefix = filterPrefix(relay, producer);
  const sendTsUs = nowMicros();
  if (!Number.isInteger(kind) || kind < 0 || kind > 0x7fff_ffff) throw new RangeError(`FilterUpdate.kind: ${kind} is not a valid enum value`);
  const out = Buffer.allocUnsafe(prefix.length + 3 * (1 + MAX_VARINT64_BYTES) + 1 + 5 + 1 + 5 + payload.length + MARKER_FIELD_BYTES);
  let pos = prefix.copy(out, 0);
  pos = writeU64Field(out, pos, BASE_SEQUENCE_TAG, baseSequence, 'FilterUpdate.base_sequence');
  pos = writeU64Field(out, pos, SEQUENCE_TAG, sequence, 'FilterUpdate.sequence');
  pos = writeU64Field(out, pos, SEND_TS_TAG, sendTsUs, 'FilterUpdate.send_ts_us');
  if (kind !== 0) {
    out[pos++] = KIND_TAG;
    pos = writeVarint32(out, pos, kind);
  }
  if (payload.length > 0) {
    out[pos++] = PAYLOAD_TAG;
    pos = writeVarint32(out, pos, payload.length);
    out.set(payload, pos);
    pos += payload.length;
  }
  out[pos++] = MARKER_TAG[0];
  out[pos++] = MARKER_TAG[1];
  pos = out.writeUInt32LE(RELAY_CONTRACT_MARKER, pos);
  return out.subarray(0, pos);
}

// FilterUpdate fields 4-8 and 127 (contract_marker, fixed32, never 0 so always written).
const BASE_SEQUENCE_TAG = 4 << 3;
const SEQUENCE_TAG = 5 << 3;
const SEND_TS_TAG = 6 << 3;
const KIND_TAG = 7 << 3;
const PAYLOAD_TAG = (8 << 3) | 2;
const MARKER_TAG = [0xfd, 0x07]; // (127 << 3) | 5 as a varint
const MARKER_FIELD_BYTES = 6;
const MAX_VARINT64_BYTES = 10;

/** Fields 1-3 of FilterUpdate per producer identity (identities are immutable values). */
const filterPrefixes = new WeakMap<ProducerIdentity, { relay: RelayIdentity; bytes: Buffer }>();

function filterPrefix(relay: RelayIdentity, producer: ProducerIdentity): Buffer {
  const cached = filterPrefixes.get(producer);
  if (cached?.relay === relay) return cached.bytes;
  // Every later field at its zero value is omitted: what remains is fields 1-3 and the marker.
  const head = response('FilterUpdate', relay, { producer, baseSequence: 0n, sequence: 0n, sendTsUs: 0n, kind: 0, payload: EMPTY });
  const bytes = Buffer.from(head.subarray(0, head.length - MARKER_FIELD_BYTES));
  filterPrefixes.set(producer, { relay, bytes });
  return bytes;
}

function writeU64Field(out: Buffer, pos: number, tag: number, value: bigint, name: string): number {
  if (typeof value !== 'bigint' || value < 0n || value > MAX_U64) throw new RangeError(`${name} must be a u64 bigint`);
  if (value === 0n) return pos;
  out[pos++] = tag;
  let lo = Number(value & 0xffff_ffffn);
  let hi = Number(value >> 32n);
  // 7 bits at a time over the 64-bit value held as two 32-bit halves.
  while (hi > 0 || lo > 0x7f) {
    out[pos++] = (lo & 0x7f) | 0x80;
    lo = ((lo >>> 7) | ((hi & 0x7f) << 25)) >>> 0;
    hi >>>= 7;
  }
  out[pos++] = lo;
  return pos;
}

function writeVarint32(out: Buffer, pos: number, value: number): number {
  let n = value >>> 0;
  while (n > 0x7f) {
    out[pos++] = (n & 0x7f) | 0x80;
    n >>>= 7;
  }
  out[pos++] = n;
  return pos;
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
