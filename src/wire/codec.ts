// Encode/decode between the plain wire types of types.ts and protobuf bytes. protobufjs represents
// 64-bit integers as Long; this layer converts them to and from bigint exactly (never through a JS
// number) and turns absent message / proto3-optional fields into `undefined`. Converters are built
// once per message type from the loaded descriptor.
import * as protobuf from 'protobufjs';
import { MAX_U32, MAX_U64 } from '../config/limits';
import { relayType } from './proto';
import type { WireMessageName, WireMessages } from './types';

const LONG_TYPES = new Set(['uint64', 'fixed64']);
const U32_TYPES = new Set(['uint32', 'fixed32']);

/** A protobuf payload could not be decoded as the named message. */
export class WireDecodeError extends Error {
  readonly code = 'WireDecode';
  constructor(typeName: string, cause: unknown) {
    super(`malformed ${typeName}: ${cause instanceof Error ? cause.message : String(cause)}`);
    this.name = 'WireDecodeError';
  }
}

/** protobufjs' 64-bit representation: a Long, or any object with 32-bit halves. */
interface LongBitsLike {
  low: number;
  high: number;
  unsigned: boolean;
}

function longToBigInt(value: unknown): bigint {
  if (typeof value === 'object' && value !== null && 'low' in value && 'high' in value) {
    const l = value as LongBitsLike;
    return (BigInt(l.high >>> 0) << 32n) | BigInt(l.low >>> 0);
  }
  if (typeof value === 'number' || typeof value === 'string') return BigInt(value);
  throw new TypeError(`expected a 64-bit integer, got ${typeof value}`);
}

function bigIntToLong(value: unknown, field: string): LongBitsLike {
  let v: bigint;
  if (typeof value === 'bigint') v = value;
  else if (typeof value === 'number' && Number.isSafeInteger(value)) v = BigInt(value);
  else throw new TypeError(`${field} must be a bigint`);
  if (v < 0n || v > MAX_U64) throw new RangeError(`${field} out of u64 range: ${v}`);
  return { low: Number(v & 0xffffffffn) | 0, high: Number(v >> 32n) | 0, unsigned: true };
}

type Kind = 'message' | 'u64' | 'u32' | 'enum' | 'bytes' | 'string' | 'bool';

interface FieldPlan {
  name: string;
  kind: Kind;
  repeated: boolean;
  /** Absent on the wire ⇒ undefined (message fields, oneof members, proto3 optional). */
  presence: boolean;
  type?: protobuf.Type;
  /** A fresh proto3 default (fresh so callers may mutate decoded values). */
  makeDefault: () => unknown;
}

function kindOf(field: protobuf.Field): Kind {
  if (field.resolvedType instanceof protobuf.Type) return 'message';
  if (field.resolvedType instanceof protobuf.Enum) return 'enum';
  if (LONG_TYPES.has(field.type)) return 'u64';
  if (U32_TYPES.has(field.type)) return 'u32';
  if (field.type === 'bytes' || field.type === 'string' || field.type === 'bool') return field.type;
  throw new Error(`relay.proto uses an unsupported scalar type ${field.type} (${field.fullName})`);
}

const DEFAULTS: Record<Kind, () => unknown> = {
  message: () => undefined,
  u64: () => 0n,
  u32: () => 0,
  enum: () => 0,
  bytes: () => new Uint8Array(0),
  string: () => '',
  bool: () => false,
};

const plans = new Map<protobuf.Type, FieldPlan[]>();

function planOf(type: protobuf.Type): FieldPlan[] {
  let plan = plans.get(type);
  if (!plan) {
    plan = type.fieldsArray.map((field) => {
      const kind = kindOf(field);
      return {
        name: field.name,
        kind,
        repeated: field.repeated,
        presence: kind === 'message' || field.partOf !== null,
        type: kind === 'message' ? (field.resolvedType as protobuf.Type) : undefined,
        makeDefault: DEFAULTS[kind],
      };
    });
    plans.set(type, plan);
  }
  return plan;
}

function fromWireValue(f: FieldPlan, v: unknown): unknown {
  switch (f.kind) {
    case 'message':
      return fromWire(f.type!, v as Record<string, unknown>);
    case 'u64':
      return longToBigInt(v);
    case 'bytes':
      return v instanceof Uint8Array ? v : Uint8Array.from(v as number[]);
    default:
      return v;
  }
}

function fromWire(type: protobuf.Type, msg: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of planOf(type)) {
    // Decoding sets own properties only for fields on the wire; the prototype holds shared defaults.
    const present = Object.prototype.hasOwnProperty.call(msg, f.name) && msg[f.name] != null;
    const v = msg[f.name];
    if (f.repeated) {
      out[f.name] = present ? (v as unknown[]).map((x) => fromWireValue(f, x)) : [];
    } else if (present) {
      out[f.name] = fromWireValue(f, v);
    } else if (!f.presence) {
      out[f.name] = f.makeDefault();
    }
  }
  return out;
}

function checkU32(v: unknown, field: string): number {
  if (typeof v !== 'number' || !Number.isInteger(v)) throw new TypeError(`${field} must be an integer`);
  if (v < 0 || v > MAX_U32) throw new RangeError(`${field} out of u32 range: ${v}`);
  return v;
}

function checkEnum(v: unknown, field: string): number {
  if (typeof v !== 'number' || !Number.isInteger(v)) throw new TypeError(`${field} must be an integer`);
  if (v < -0x80000000 || v > 0x7fffffff) throw new RangeError(`${field} out of enum (int32) range: ${v}`);
  return v;
}

function toWireValue(f: FieldPlan, v: unknown, path: string): unknown {
  switch (f.kind) {
    case 'message':
      if (typeof v !== 'object' || v === null) throw new TypeError(`${path} must be an object`);
      return toWire(f.type!, v as Record<string, unknown>, path);
    case 'u64':
      return bigIntToLong(v, path);
    case 'u32':
      return checkU32(v, path);
    case 'enum':
      return checkEnum(v, path);
    case 'bytes':
      if (!(v instanceof Uint8Array)) throw new TypeError(`${path} must be a Uint8Array`);
      return v;
    case 'string':
      if (typeof v !== 'string') throw new TypeError(`${path} must be a string`);
      return v;
    case 'bool':
      if (typeof v !== 'boolean') throw new TypeError(`${path} must be a boolean`);
      return v;
  }
}

// protobufjs omits proto3 implicit-presence defaults itself and writes fields in number order, so
// the bytes match a canonical (prost/protoc) encoder.
function toWire(type: protobuf.Type, obj: Record<string, unknown>, path: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of planOf(type)) {
    const v = obj[f.name];
    if (v === undefined || v === null) continue;
    const fieldPath = `${path}.${f.name}`;
    if (f.repeated) {
      if (!Array.isArray(v)) throw new TypeError(`${fieldPath} must be an array`);
      out[f.name] = v.map((x, i) => toWireValue(f, x, `${fieldPath}[${i}]`));
    } else {
      out[f.name] = toWireValue(f, v, fieldPath);
    }
  }
  return out;
}

export interface WireCodec<T> {
  readonly typeName: string;
  encode(msg: T): Buffer;
  /** Throws WireDecodeError on bytes that are not a valid encoding of the message. */
  decode(bytes: Uint8Array): T;
}

const codecs = new Map<string, WireCodec<unknown>>();

/** The codec of one dynamo.kvrelay.v1 message type (cached). */
export function wireCodec<N extends WireMessageName>(typeName: N): WireCodec<WireMessages[N]> {
  let codec = codecs.get(typeName);
  if (!codec) {
    const type = relayType(typeName);
    codec = {
      typeName,
      encode(msg: unknown): Buffer {
        if (typeof msg !== 'object' || msg === null) throw new TypeError(`${typeName} must be an object`);
        const bytes = type.encode(toWire(type, msg as Record<string, unknown>, typeName)).finish();
        return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      },
      decode(bytes: Uint8Array): unknown {
        let msg: protobuf.Message;
        try {
          msg = type.decode(bytes);
        } catch (e) {
          throw new WireDecodeError(typeName, e);
        }
        return fromWire(type, msg as unknown as Record<string, unknown>);
      },
    };
    codecs.set(typeName, codec);
  }
  return codec as WireCodec<WireMessages[N]>;
}

export function encodeMessage<N extends WireMessageName>(typeName: N, msg: WireMessages[N]): Buffer {
  return wireCodec(typeName).encode(msg);
}

export function decodeMessage<N extends WireMessageName>(typeName: N, bytes: Uint8Array): WireMessages[N] {
  return wireCodec(typeName).decode(bytes);
}
