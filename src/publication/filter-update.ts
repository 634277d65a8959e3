// FilterUpdate bytes written by hand after the fields every frame of a pool generation shares
// (fields 1-3: protocol version, relay, producer; frames.ts encodes them once through the codec).
// The rest is written as a canonical proto3 encoder writes it (fields in number order, zero values
// omitted), so the bytes equal one encodeMessage of the whole message. No codec here: an ingest
// thread that hosts a pool encodes its deltas with this (pool-host.ts), without loading protobufjs.
import { MAX_U64 } from '../config/limits';
import { RELAY_CONTRACT_MARKER } from '../wire/constants';

/** Wall clock in microseconds since the Unix epoch. */
export function nowMicros(): bigint {
  return BigInt(Math.round((performance.timeOrigin + performance.now()) * 1000));
}

// FilterUpdate fields 4-8 and 127 (contract_marker, fixed32, never 0 so always written).
const BASE_SEQUENCE_TAG = 4 << 3;
const SEQUENCE_TAG = 5 << 3;
const SEND_TS_TAG = 6 << 3;
const KIND_TAG = 7 << 3;
const PAYLOAD_TAG = (8 << 3) | 2;
const MARKER_TAG = [0xfd, 0x07]; // (127 << 3) | 5 as a varint
/** The contract marker field, always the message's last bytes (the payload ends right before it). */
export const MARKER_FIELD_BYTES = 6;
const MAX_VARINT64_BYTES = 10;

/**
 * A FilterUpdate message: `prefix` (fields 1-3 of its generation), then fields 4-8 and the marker;
 * send_ts_us is now. `ownMemory`: in an ArrayBuffer of its own (not Node's shared pool), so that it
 * can be transferred to another thread.
 */
export function filterUpdateBytes(prefix: Uint8Array, baseSequence: bigint, sequence: bigint, kind: number, payload: Uint8Array, ownMemory = false): Buffer {
  const sendTsUs = nowMicros();
  if (!Number.isInteger(kind) || kind < 0 || kind > 0x7fff_ffff) throw new RangeError(`FilterUpdate.kind: ${kind} is not a valid enum value`);
  const size = prefix.length + 3 * (1 + MAX_VARINT64_BYTES) + 1 + 5 + 1 + 5 + payload.length + MARKER_FIELD_BYTES;
  const out = ownMemory ? Buffer.allocUnsafeSlow(size) : Buffer.allocUnsafe(size);
  out.set(prefix, 0);
  let pos = prefix.length;
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
