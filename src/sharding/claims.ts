// A pool's claim: the key owners/{poolKey} under the serving shard's lease, holding
// `{shardId}:{leaseId}` (so a claim left from an expired lease of the same shard is not mistaken for
// a live one). Created only while absent and deleted only by its holder, each in one etcd
// transaction, so two shards never both hold it.
import type { Etcd3 } from 'etcd3';
import { ownerKey } from '../discovery/keys';

export function claimValue(shardId: string, leaseId: string): string {
  return `${shardId}:${leaseId}`;
}

/** The shard id of a claim value. */
export function claimShard(value: string): string {
  const i = value.lastIndexOf(':');
  return i < 0 ? value : value.slice(0, i);
}

/** The etcd revision of the new claim, or undefined when another claim exists. */
export async function claimPool(client: Etcd3, prefix: string, poolKey: string, value: string, leaseId: string): Promise<bigint | undefined> {
  const key = ownerKey(prefix, poolKey);
  const res = await client.if(key, 'Create', '==', 0).then(client.put(key).value(value).lease(leaseId)).commit();
  return res.succeeded ? BigInt(res.header.revision) : undefined;
}

/** Deletes the claim if it is still `value`; resolves with the revision after the transaction. */
export async function releasePool(client: Etcd3, prefix: string, poolKey: string, value: string): Promise<bigint> {
  const key = ownerKey(prefix, poolKey);
  const res = await client.if(key, 'Value', '==', value).then(client.delete().key(key)).commit();
  return BigInt(res.header.revision);
}
