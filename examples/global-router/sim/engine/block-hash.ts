// The simulated engine's own block hash: chained over the parent's hash and the block's tokens, as
// vLLM's is. It only names blocks in KV events (the relay hashes the tokens itself), so a fast
// 52-bit mix replaces vLLM's SHA-256: a JavaScript number, exact, and cheap to use as a map key.
import { mix32 } from '../request';

/** The parent hash of a sequence's first block. */
export const ROOT_HASH = 0;

export function chainHash(parent: number, tokens: Uint32Array, start: number, end: number): number {
  let a = (parent >>> 0) ^ 0x9e3779b9;
  let b = Math.floor(parent / 0x1_0000_0000) ^ 0x85ebca6b;
  for (let i = start; i < end; i++) {
    const t = tokens[i];
    a = Math.imul(a ^ t, 0xcc9e2d51);
    a = (a << 15) | (a >>> 17);
    b = Math.imul(b ^ t ^ a, 0x1b873593);
    b = (b << 13) | (b >>> 19);
  }
  const lo = mix32(a ^ Math.imul(end - start, 0x27d4eb2f));
  const hi = mix32(b ^ lo) >>> 12;
  return hi * 0x1_0000_0000 + lo;
}
