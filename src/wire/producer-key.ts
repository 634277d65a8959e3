// The frozen v1 subscription key (identity-topology-load.md §2.3). Equality covers exactly 13
// dimensions: identity_version, (cache digest, cache source), (routing digest, routing source), dc_id,
// producer_incarnation, layout_generation, and the five CkfFormat fields. Descriptor metadata is never
// part of it. Sources compare as raw numbers, so equal digests with different sources differ.
import type { DigestIdentity, KvPoolId, ProducerIdentity } from './types';
import { checkProducerIdentity } from './validate-identity';
import { checked, type WireValidationError } from './validation';

const MISSING = '-';

function hex(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex');
}

function digestKey(d: DigestIdentity | undefined): string {
  return d ? `${hex(d.digest)}.${d.source}` : MISSING;
}

/** Stable map key of a wire pool id over all of its fields (missing parts render as '-'). */
export function poolKey(poolId: KvPoolId): string {
  const domain = poolId.indexerDomain;
  const domainKey = domain ? `${digestKey(domain.cacheSemantics)}:${digestKey(domain.routingScope)}` : MISSING;
  return `${poolId.identityVersion}/${domainKey}/${poolId.dcId.toString(16)}`;
}

/**
 * Stable map key over the 13 ProducerKey dimensions. Two identities have equal keys exactly when
 * ProducerKey equality holds. Does not validate; use ProducerKey.from for a checked key.
 */
export function producerKey(identity: ProducerIdentity): string {
  const pool = identity.poolId ? poolKey(identity.poolId) : MISSING;
  const f = identity.ckfFormat;
  const format = f
    ? `${f.formatVersion},${f.seed.toString(16)},${f.bucketCount},${f.fingerprintBits},${f.slotsPerBucket}`
    : MISSING;
  return `${pool}|${identity.producerIncarnation.toString(16)}|${identity.layoutGeneration}|${format}`;
}

export class ProducerKey {
  private constructor(
    /** The stable string form (see producerKey). */
    readonly key: string,
  ) {}

  /** ProducerKey::try_from: validates the identity first; an invalid identity yields an error. */
  static from(identity: ProducerIdentity): { ok: true; key: ProducerKey } | { ok: false; error: WireValidationError } {
    const result = checked(() => checkProducerIdentity(identity));
    if (!result.ok) return result;
    return { ok: true, key: new ProducerKey(producerKey(identity)) };
  }

  equals(other: ProducerKey): boolean {
    return this.key === other.key;
  }

  toString(): string {
    return this.key;
  }
}
