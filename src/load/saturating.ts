import { MAX_U32, MAX_U64 } from '../config/limits';

/** u64 sum that sticks at u64::MAX, as upstream's saturating_add (forwarded unchanged on the wire). */
export function saturatingSum(values: Iterable<bigint>): bigint {
  let sum = 0n;
  for (const v of values) sum = sum + v > MAX_U64 ? MAX_U64 : sum + v;
  return sum;
}

export function saturateU32(n: number): number {
  return Math.min(n, MAX_U32);
}
