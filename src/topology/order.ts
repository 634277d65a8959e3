// Orderings of published lists. Upstream sorts Rust Strings (BTreeMap keys, Display strings), i.e.
// by UTF-8 bytes, which differs from JS UTF-16 comparison for astral vs high-BMP characters.

export function compareUtf8(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

/** (namespace, canonical model id) key order of topology entries and model load entries. */
export function compareModelKey(
  a: { namespace: string; canonicalModelId: string },
  b: { namespace: string; canonicalModelId: string },
): number {
  return compareUtf8(a.namespace, b.namespace) || compareUtf8(a.canonicalModelId, b.canonicalModelId);
}
