// Engine block hashes arrive as msgpack uint64, int64 or bytes (engine-inputs.md §1.3, §6 rec. 1).
import { MAX_U64 } from '../config/limits';
import { DecodeError } from './errors';

/**
 * Folds an engine hash to u64: integers by two's complement (an i64 and its u64 are the same
 * hash), bytes to their big-endian value mod 2^64, i.e. the last 8 bytes — what vLLM's int mode
 * publishes for the same digest.
 */
export function engineHashToU64(value: unknown, field: string): bigint {
  if (typeof value === 'bigint') {
    if (value < -(1n << 63n) || value > MAX_U64) throw new DecodeError(`${field}: out of 64-bit range`);
    return value & MAX_U64;
  }
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value)) throw new DecodeError(`${field}: not an integer`);
    return BigInt(value) & MAX_U64;
  }
  if (value instanceof Uint8Array) {
    if (value.length === 0) throw new DecodeError(`${field}: empty bytes`);
    let out = 0n;
    for (const byte of value.subarray(Math.max(0, value.length - 8))) out = (out << 8n) | BigInt(byte);
    return out;
  }
  throw new DecodeError(`${field}: expected an integer or bytes`);
}
