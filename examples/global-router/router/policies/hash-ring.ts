// The hash functions of the consistent-hashing ring: FNV-1a over the key's leading tokens, and a
// point per (owner, index). 32-bit, deterministic across processes and runs.

/** FNV-1a over the first `count` tokens (each as 4 little-endian bytes). */
export function fnv1a(tokens: ArrayLike<number>, count: number): number {
  let h = 0x811c9dc5;
  const n = Math.min(count, tokens.length);
  for (let i = 0; i < n; i++) {
    const t = tokens[i];
    for (let b = 0; b < 32; b += 8) {
      h ^= (t >>> b) & 0xff;
      h = Math.imul(h, 0x01000193);
    }
  }
  return h >>> 0;
}

/** The ring point of an owner's i-th virtual node. */
export function mixPoint(owner: string, i: number): number {
  let h = 0x811c9dc5 ^ i;
  for (let k = 0; k < owner.length; k++) h = Math.imul(h ^ owner.charCodeAt(k), 0x01000193);
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}
