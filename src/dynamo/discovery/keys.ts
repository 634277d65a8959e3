// Dynamo's etcd key layout (dynamo-event-plane-and-discovery.md §2; kv_store.rs @020f5c17): buckets
// are key prefixes under `v1/`, every key is written under its process's lease, and instance ids
// (= the etcd lease id = the KV worker id) are lowercase hex without 0x.
//
//   v1/instances/{ns}/{component}/{endpoint}/{instance_id:x}           one per served endpoint
//   v1/mdc/{ns}/{component}/{endpoint}/{instance_id:x}                 base model card
//   v1/mdc/{ns}/{component}/{endpoint}/{instance_id:x}/{model_suffix}  LoRA adapter card
//   v1/event_channels/{scope path}/topic/{topic}/{publisher_id:x}      event-plane publisher
//   v1/event_sources/{scope path}/topic/{topic}/{publisher_id:x}       KV event source (newest revisions)
//
// A scope path is `namespace/{ns}[/component/{c}[/endpoint/{e}]]` (EventScope's path, segments
// percent-encoded by encode_event_segment).

export const DYNAMO_PREFIX = 'v1/';

export interface EndpointPath {
  namespace: string;
  component: string;
  endpoint: string;
}

export type DynamoKey =
  | { kind: 'instance'; path: EndpointPath; instanceId: bigint }
  | { kind: 'card'; path: EndpointPath; instanceId: bigint; suffix?: string }
  | { kind: 'eventChannel'; topic: string; publisherId: bigint }
  /** scope: the key's scope path, undefined when it is none of EventScope's paths. */
  | { kind: 'eventSource'; scope?: KeyScope; topic: string; publisherId: bigint };

export interface KeyScope {
  namespace: string;
  component?: string;
  endpoint?: string;
}

/** `{id:x}`: lowercase, no leading zero (another spelling of one id would make it two entries). */
const HEX = /^(0|[1-9a-f][0-9a-f]{0,15})$/;

/** Parses a key relative to `v1/`; undefined for anything outside the layout. */
export function parseDynamoKey(relative: string): DynamoKey | undefined {
  const parts = relative.split('/');
  const [bucket, ...rest] = parts;
  if (bucket === 'instances' && rest.length === 4 && HEX.test(rest[3])) {
    return { kind: 'instance', path: pathOf(rest), instanceId: BigInt(`0x${rest[3]}`) };
  }
  if (bucket === 'mdc' && (rest.length === 4 || rest.length === 5) && HEX.test(rest[3])) {
    return { kind: 'card', path: pathOf(rest), instanceId: BigInt(`0x${rest[3]}`), ...(rest.length === 5 ? { suffix: rest[4] } : {}) };
  }
  if (bucket === 'event_channels' && rest.length >= 3 && rest[rest.length - 3] === 'topic' && HEX.test(rest[rest.length - 1])) {
    return { kind: 'eventChannel', topic: decodeSegment(rest[rest.length - 2]), publisherId: BigInt(`0x${rest[rest.length - 1]}`) };
  }
  if (bucket === 'event_sources' && rest.length >= 3 && rest[rest.length - 3] === 'topic' && HEX.test(rest[rest.length - 1])) {
    const scope = scopeOf(rest.slice(0, -3));
    return { kind: 'eventSource', ...(scope ? { scope } : {}), topic: decodeSegment(rest[rest.length - 2]), publisherId: BigInt(`0x${rest[rest.length - 1]}`) };
  }
  return undefined;
}

/**
 * For a key that parseDynamoKey does not take: null when it is in no bucket the relay reads, else the
 * namespace it names (undefined when it names none), so that a malformed key of an unserved namespace
 * is not counted.
 */
export function layoutNamespace(relative: string): string | null | undefined {
  const [bucket, first, second] = relative.split('/', 3);
  if (bucket === 'instances' || bucket === 'mdc') return first;
  if (bucket === 'event_channels' || bucket === 'event_sources') return first === 'namespace' && second !== undefined ? decodeSegment(second) : undefined;
  return null;
}

function pathOf(rest: string[]): EndpointPath {
  return { namespace: rest[0], component: rest[1], endpoint: rest[2] };
}

const SCOPE_LEVELS = ['namespace', 'component', 'endpoint'] as const;

/** `namespace/{ns}[/component/{c}[/endpoint/{e}]]`, decoded; undefined for any other path. */
function scopeOf(path: string[]): KeyScope | undefined {
  if (path.length < 2 || path.length > 6 || path.length % 2 !== 0) return undefined;
  const names: string[] = [];
  for (let i = 0; i < path.length; i += 2) {
    if (path[i] !== SCOPE_LEVELS[i / 2]) return undefined;
    names.push(decodeSegment(path[i + 1]));
  }
  const [namespace, component, endpoint] = names;
  return { namespace, ...(component === undefined ? {} : { component }), ...(endpoint === undefined ? {} : { endpoint }) };
}

/** Newest revisions percent-encode event-channel segments (encode_event_segment); older ones wrote them plain. */
function decodeSegment(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}
