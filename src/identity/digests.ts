// Pool-identity digests (identity-topology-load.md §1.2): cache semantics and routing scope, each a
// 16-byte BLAKE3 digest over framed material, either default-derived (from the card / endpoint) or
// explicit (an operator-supplied map). Default and explicit tags differ, so the two never collide.
import { IDENTITY_KEY_MAX_BYTES, IDENTITY_MAP_MAX_ENTRIES, IDENTITY_VALUE_MAX_BYTES } from '../config/limits';
import { IdentitySource, KvQueryHashFormat } from '../wire/enums';
import type { DigestIdentity } from '../wire/types';
import { MaterialWriter, digest16 } from './material';

export const CACHE_SEMANTICS_DEFAULT_TAG = 'dynamo/indexer-cache-semantics/default/v1';
export const CACHE_SEMANTICS_EXPLICIT_TAG = 'dynamo/indexer-cache-semantics/explicit/v1';
export const ROUTING_SCOPE_DEFAULT_TAG = 'dynamo/indexer-routing-scope/default/v1';
export const ROUTING_SCOPE_EXPLICIT_TAG = 'dynamo/indexer-routing-scope/explicit/v1';

/** An explicit identity map (`indexer_identity.semantics` / `.routing_scope` of a card). */
export type ExplicitIdentityMap = Readonly<Record<string, string>>;

/** Material plus the digest identity it yields. */
export interface DerivedDigest {
  material: Buffer;
  identity: DigestIdentity;
}

/** The cache-semantics hash version of a query hash format: standard 1, Eagle 2. */
export function hashFormatIdentityVersion(hashFormat: number): number {
  switch (hashFormat) {
    case KvQueryHashFormat.DYNAMO_STANDARD_V1:
      return 1;
    case KvQueryHashFormat.DYNAMO_EAGLE_V1:
      return 2;
    default:
      throw new RangeError(`no identity version for KV query hash format ${hashFormat}`);
  }
}

function utf8Length(s: string): number {
  return Buffer.byteLength(s, 'utf8');
}

/** ExplicitIdentityMap bounds: 1..=32 entries, keys 1..=128 and values 1..=1024 UTF-8 bytes. */
export function explicitMapError(map: ExplicitIdentityMap): string | undefined {
  const entries = Object.entries(map);
  if (entries.length < 1 || entries.length > IDENTITY_MAP_MAX_ENTRIES) {
    return `explicit identity map must have 1..=${IDENTITY_MAP_MAX_ENTRIES} entries, has ${entries.length}`;
  }
  for (const [k, v] of entries) {
    if (utf8Length(k) < 1 || utf8Length(k) > IDENTITY_KEY_MAX_BYTES) {
      return `explicit identity key ${JSON.stringify(k)} must be 1..=${IDENTITY_KEY_MAX_BYTES} UTF-8 bytes`;
    }
    if (utf8Length(v) < 1 || utf8Length(v) > IDENTITY_VALUE_MAX_BYTES) {
      return `explicit identity value of ${JSON.stringify(k)} must be 1..=${IDENTITY_VALUE_MAX_BYTES} UTF-8 bytes`;
    }
  }
  return undefined;
}

// Framed tag, then either count + framed defaults or count + framed (key, value) pairs in
// byte-wise (UTF-8) key order, as the reference's BTreeMap<String, String> iterates.
function baseMaterial(
  defaultTag: string,
  explicitTag: string,
  defaults: readonly string[],
  explicit: ExplicitIdentityMap | undefined,
): { writer: MaterialWriter; source: number } {
  const writer = new MaterialWriter();
  if (explicit === undefined) {
    writer.framed(defaultTag).count(defaults.length);
    for (const d of defaults) writer.framed(d);
    return { writer, source: IdentitySource.DEFAULT_DERIVED };
  }
  const error = explicitMapError(explicit);
  if (error) throw new RangeError(error);
  const keys = Object.keys(explicit)
    .map((k) => ({ k, bytes: Buffer.from(k, 'utf8') }))
    .sort((a, b) => Buffer.compare(a.bytes, b.bytes));
  writer.framed(explicitTag).count(keys.length);
  for (const { k, bytes } of keys) writer.framed(bytes).framed(explicit[k]);
  return { writer, source: IdentitySource.EXPLICIT };
}

function derived(writer: MaterialWriter, source: number): DerivedDigest {
  const material = writer.bytes();
  return { material, identity: { digest: digest16(material), source } };
}

export interface CacheSemanticsInput {
  /** Default material: the Relay passes [card.source_path ?? card.display_name]. */
  defaults: readonly string[];
  /** Card `indexer_identity.semantics`; when set it replaces `defaults`. */
  explicit?: ExplicitIdentityMap;
  kvBlockSize: number;
  /** A KvQueryHashFormat value (standard or Eagle). */
  hashFormat: number;
}

/** Block size and hash version are always appended, so explicit material cannot remove them. */
export function deriveCacheSemantics(input: CacheSemanticsInput): DerivedDigest {
  const { writer, source } = baseMaterial(
    CACHE_SEMANTICS_DEFAULT_TAG,
    CACHE_SEMANTICS_EXPLICIT_TAG,
    input.defaults,
    input.explicit,
  );
  writer.u32(input.kvBlockSize).u16(hashFormatIdentityVersion(input.hashFormat));
  return derived(writer, source);
}

export interface RoutingScopeInput {
  /** Default material: [namespace, component, endpoint] of the serving endpoint. */
  defaults: readonly string[];
  /** Card `indexer_identity.routing_scope`; when set it replaces `defaults`. */
  explicit?: ExplicitIdentityMap;
}

export function deriveRoutingScope(input: RoutingScopeInput): DerivedDigest {
  const { writer, source } = baseMaterial(ROUTING_SCOPE_DEFAULT_TAG, ROUTING_SCOPE_EXPLICIT_TAG, input.defaults, input.explicit);
  return derived(writer, source);
}
