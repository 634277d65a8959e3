// Display and ordering of pool ids (identity-topology-load.md §1.1). The catalog is ordered by
// PoolId: domain first (cache semantics, then routing scope; each digest bytes, then source with
// DefaultDerived < Explicit), then dc_id.
import type { DigestIdentity, KvPoolId } from '../wire/types';
import { formatDcId } from './dc-id';

export function digestHex(d: DigestIdentity | undefined): string {
  return d ? Buffer.from(d.digest.buffer, d.digest.byteOffset, d.digest.byteLength).toString('hex') : '';
}

/** `"{cache}:{routing}"`. */
export function indexerDomainDisplay(poolId: KvPoolId): string {
  const domain = poolId.indexerDomain;
  return `${digestHex(domain?.cacheSemantics)}:${digestHex(domain?.routingScope)}`;
}

/**
 * `"{cache}:{routing}/{dc:016x}"`: fixed-width lowercase hex, and default and explicit digests never
 * coincide, so its string order is PoolId order (the producer keys its pools, metrics and shard
 * claims by it).
 */
export function poolIdDisplay(poolId: KvPoolId): string {
  return `${indexerDomainDisplay(poolId)}/${formatDcId(poolId.dcId)}`;
}

function compareDigest(a: DigestIdentity | undefined, b: DigestIdentity | undefined): number {
  const bytes = Buffer.compare(a?.digest ?? new Uint8Array(0), b?.digest ?? new Uint8Array(0));
  if (bytes !== 0) return bytes;
  return (a?.source ?? 0) - (b?.source ?? 0);
}

export function comparePoolIds(a: KvPoolId, b: KvPoolId): number {
  return (
    compareDigest(a.indexerDomain?.cacheSemantics, b.indexerDomain?.cacheSemantics) ||
    compareDigest(a.indexerDomain?.routingScope, b.indexerDomain?.routingScope) ||
    (a.dcId < b.dcId ? -1 : a.dcId > b.dcId ? 1 : 0)
  );
}
