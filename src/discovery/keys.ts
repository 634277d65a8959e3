// The etcd key layout under a datacenter's prefix (README "Discovery from etcd"). Key segments that
// carry names are URI-component encoded, so a name containing '/' cannot shift the layout.
//
//   {prefix}endpoints/{namespace}/{component}/{endpoint}          endpoint entry (JSON)
//   {prefix}workers/{namespace}/{component}/{endpoint}/{workerId} worker entry (JSON), under the worker's lease
//   {prefix}shards/{shardId}                                      relay shard {address, ...}, under the shard's lease
//   {prefix}owners/{poolKey}                                      id of the shard serving the pool, under its lease

export interface EndpointTriple {
  namespace: string;
  component: string;
  endpoint: string;
}

export type DiscoveryKey =
  | { kind: 'endpoint'; triple: EndpointTriple }
  | { kind: 'worker'; triple: EndpointTriple; workerId: string }
  | { kind: 'shard'; shardId: string }
  | { kind: 'owner'; poolKey: string };

/** The prefix with exactly one trailing '/', so `a/b` and `a/b/` name the same deployment. */
export function normalizePrefix(prefix: string): string {
  return `${prefix.replace(/\/+$/, '')}/`;
}

const enc = encodeURIComponent;

function tripleKey(t: EndpointTriple): string {
  return `${enc(t.namespace)}/${enc(t.component)}/${enc(t.endpoint)}`;
}

export function endpointKey(prefix: string, t: EndpointTriple): string {
  return `${prefix}endpoints/${tripleKey(t)}`;
}

export function workerKey(prefix: string, t: EndpointTriple, workerId: bigint): string {
  return `${prefix}workers/${tripleKey(t)}/${workerId}`;
}

export function shardKey(prefix: string, shardId: string): string {
  return `${prefix}shards/${enc(shardId)}`;
}

export function ownerKey(prefix: string, poolKey: string): string {
  return `${prefix}owners/${enc(poolKey)}`;
}

/** Parses a key relative to the prefix; undefined for anything outside the layout. */
export function parseKey(relative: string): DiscoveryKey | undefined {
  const parts = relative.split('/');
  let decoded: string[];
  try {
    decoded = parts.map((p) => decodeURIComponent(p));
  } catch {
    return undefined;
  }
  if (decoded.some((p) => p.length === 0)) return undefined;
  const [kind, ...rest] = decoded;
  const triple = (): EndpointTriple => ({ namespace: rest[0], component: rest[1], endpoint: rest[2] });
  if (kind === 'endpoints' && rest.length === 3) return { kind: 'endpoint', triple: triple() };
  if (kind === 'workers' && rest.length === 4) return { kind: 'worker', triple: triple(), workerId: rest[3] };
  if (kind === 'shards' && rest.length === 1) return { kind: 'shard', shardId: rest[0] };
  if (kind === 'owners' && rest.length === 1) return { kind: 'owner', poolKey: rest[0] };
  return undefined;
}
