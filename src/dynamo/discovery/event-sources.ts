// KV event-source membership from `v1/event_sources` (newest Dynamo revisions; identity-topology-load.md
// §5.2, Dynamo's lib/llm/src/discovery/kv_source_membership.rs): per KV-state endpoint, which publisher
// speaks for which (worker, dp rank), and each logical source's status. Pure.
//
// - a source is endpoint-scoped to its KV-state endpoint; a publisher whose value disagrees with its key
//   (scope, topic, publisher id) or whose metadata disagrees with its value (publisher id, KV-state
//   endpoint) is invalid: it counts for no rank;
// - per (worker, dp rank): no valid publisher is Missing, one is Active (recoverable with a
//   recovery_target, else live-only), more than one is Ambiguous{incarnations}; a publisher whose
//   descriptor changed while it was advertised (values are immutable once written), or whose id is
//   advertised for two ranks, makes its rank Ambiguous{conflicting-descriptor}: fail closed;
// - the statuses cover the ranks carded for the KV-state endpoint (cards whose kv_state_endpoint, or
//   serving endpoint where they omit it, is this one) and every advertised rank; an endpoint with no
//   valid source has no membership (its events are handled as before event sources existed);
// - the ranks of a serving endpoint whose cards name more than one KV-state endpoint are
//   Ambiguous{endpoint-mapping} (markMappingAmbiguous): no publisher is trusted for them.
import { endpointName } from '../../producer/deployment';
import type { KeyScope } from './keys';
import { endpointIdName, eventSourceValue, parseEntry, type EventSourceValue, type ParseMemo } from './values';

export type SourceStatus = 'missing' | 'active' | 'ambiguous';
export type AmbiguousReason = 'incarnations' | 'conflicting-descriptor' | 'endpoint-mapping';

export interface RankSource {
  workerId: bigint;
  dpRank: number;
  status: SourceStatus;
  reason?: AmbiguousReason;
  /** The valid publishers advertised for this rank. */
  publishers: bigint[];
  /** Active with a recovery target (Dynamo's ActiveRecoverable; otherwise ActiveLiveOnly). */
  recoverable: boolean;
}

export interface WorkerRank {
  workerId: bigint;
  dpRank: number;
}

export interface EndpointSources {
  /** Every valid advertised publisher and the (worker, dp rank) it speaks for. */
  publishers: Map<bigint, WorkerRank>;
  /** One per logical source, sorted by worker then rank. */
  ranks: RankSource[];
}

export interface SourceEntry {
  key: string;
  scope?: KeyScope;
  topic: string;
  publisherId: bigint;
  text: string;
}

export interface EventSourcesProjection {
  /** By KV-state endpoint name (`ns/component/endpoint`). */
  endpoints: Map<string, EndpointSources>;
  /** Values that parse but contradict their key or themselves. */
  invalid: { key: string; problem: string }[];
  /** Values that do not parse. */
  rejected: { key: string; problem: string }[];
}

/**
 * `entries`: the kv-events topic's source entries in served namespaces; `carded`: each serving endpoint's
 * workers and ranks from their cards; `changed`: keys whose value changed while present; `memo`: as
 * projectDynamo's.
 */
export function projectEventSources(
  entries: readonly SourceEntry[],
  carded: ReadonlyMap<string, readonly { workerId: bigint; dpStartRank: number; dpSize: number }[]>,
  changed: ReadonlySet<string> = new Set(),
  memo?: ParseMemo,
): EventSourcesProjection {
  const invalid: EventSourcesProjection['invalid'] = [];
  const rejected: EventSourcesProjection['rejected'] = [];
  const byEndpoint = new Map<string, { key: string; value: EventSourceValue }[]>();
  for (const e of entries) {
    const value = parseEntry(memo, e.key, e.text, eventSourceValue);
    if (typeof value === 'string') {
      rejected.push({ key: e.key, problem: value });
      continue;
    }
    const problem = contradiction(e, value);
    if (problem) {
      invalid.push({ key: e.key, problem });
      continue;
    }
    const name = endpointIdName(value.metadata.kv_state_endpoint);
    (byEndpoint.get(name) ?? byEndpoint.set(name, []).get(name)!).push({ key: e.key, value });
  }

  const endpoints = new Map<string, EndpointSources>();
  for (const [name, sources] of byEndpoint) {
    const ranks = new Map<string, RankSource>();
    const rankOf = (workerId: bigint, dpRank: number): RankSource => {
      const id = `${workerId}/${dpRank}`;
      return ranks.get(id) ?? ranks.set(id, { workerId, dpRank, status: 'missing', publishers: [], recoverable: false }).get(id)!;
    };
    for (const w of carded.get(name) ?? []) for (let r = w.dpStartRank; r < w.dpStartRank + w.dpSize; r++) rankOf(w.workerId, r);
    const publishers = new Map<bigint, WorkerRank>();
    const conflicting = new Set<RankSource>();
    for (const { key, value } of sources) {
      const { worker_id: workerId, dp_rank: dpRank } = value.metadata.worker;
      const rank = rankOf(workerId, dpRank);
      rank.publishers.push(value.publisher_id);
      rank.recoverable = value.metadata.recovery_target !== undefined;
      if (changed.has(key)) conflicting.add(rank);
      const other = publishers.get(value.publisher_id);
      if (other && (other.workerId !== workerId || other.dpRank !== dpRank)) {
        conflicting.add(rank);
        conflicting.add(rankOf(other.workerId, other.dpRank));
      } else publishers.set(value.publisher_id, { workerId, dpRank });
    }
    for (const rank of ranks.values()) {
      if (conflicting.has(rank)) Object.assign(rank, { status: 'ambiguous', reason: 'conflicting-descriptor' });
      else if (rank.publishers.length > 1) Object.assign(rank, { status: 'ambiguous', reason: 'incarnations' });
      else if (rank.publishers.length === 1) rank.status = 'active';
      if (rank.status !== 'active') rank.recoverable = false;
      rank.publishers.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    }
    const sorted = [...ranks.values()].sort(compareRanks);
    endpoints.set(name, { publishers, ranks: sorted });
  }
  return { endpoints, invalid, rejected };
}

/**
 * Makes `ranks`, those of the serving endpoint `serving` whose cards disagree on their KV-state
 * endpoint, Ambiguous{endpoint-mapping} (Dynamo's KvSourceAmbiguity::EndpointMapping) whatever was
 * advertised for them: listed under `serving`, and under no other endpoint (each logical source is
 * counted once). Their advertised publishers stay known (an event of theirs is still attributed, then
 * dropped as Ambiguous).
 */
export function markMappingAmbiguous(endpoints: Map<string, EndpointSources>, serving: string, ranks: readonly WorkerRank[]): void {
  const keys = new Set(ranks.map((r) => `${r.workerId}/${r.dpRank}`));
  const publishersOf = new Map<string, bigint[]>();
  for (const sources of endpoints.values()) {
    sources.ranks = sources.ranks.filter((r) => {
      const key = `${r.workerId}/${r.dpRank}`;
      if (!keys.has(key)) return true;
      publishersOf.set(key, [...(publishersOf.get(key) ?? []), ...r.publishers]);
      return false;
    });
  }
  const own = endpoints.get(serving) ?? endpoints.set(serving, { publishers: new Map(), ranks: [] }).get(serving)!;
  for (const { workerId, dpRank } of ranks) {
    const publishers = (publishersOf.get(`${workerId}/${dpRank}`) ?? []).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    own.ranks.push({ workerId, dpRank, status: 'ambiguous', reason: 'endpoint-mapping', publishers, recoverable: false });
  }
  own.ranks.sort(compareRanks);
}

function compareRanks(a: RankSource, b: RankSource): number {
  return a.workerId !== b.workerId ? (a.workerId < b.workerId ? -1 : 1) : a.dpRank - b.dpRank;
}

/** What in a source's value contradicts its key or its own metadata; undefined when nothing does. */
function contradiction(e: SourceEntry, v: EventSourceValue): string | undefined {
  if (v.topic !== e.topic) return `topic ${v.topic} is not its key's (${e.topic})`;
  if (v.publisher_id !== e.publisherId) return `publisher_id ${v.publisher_id} is not its key's (${e.publisherId})`;
  if (v.metadata.publisher_id !== v.publisher_id) return `metadata.publisher_id ${v.metadata.publisher_id} is not its publisher_id (${v.publisher_id})`;
  if (v.scope.kind !== 'endpoint' || v.scope.component === undefined || v.scope.endpoint === undefined) return `scope is ${v.scope.kind}, not endpoint`;
  const scope = { namespace: v.scope.namespace, component: v.scope.component, endpoint: v.scope.endpoint };
  if (!e.scope || endpointName(scope) !== endpointName({ component: '', endpoint: '', ...e.scope })) return 'scope is not its key\'s';
  if (endpointIdName(v.metadata.kv_state_endpoint) !== endpointName(scope)) return 'metadata.kv_state_endpoint is not its scope\'s endpoint';
  return undefined;
}
