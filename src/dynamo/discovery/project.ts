// A Dynamo deployment's discovery entries (etcd `v1/...`) projected onto this relay's deployment
// model: one EndpointConfig per serving endpoint with base model cards, its workers from the cards
// (ranks and capacity from runtime_config, liveness from the instance entries), its LoRA adapters
// from the adapter cards; and the event-plane channels its KV events travel on. Pure.
//
// Rules (identity-topology-load.md §5.1, dynamo-event-plane-and-discovery.md §2-§5; each has a test
// in test/dynamo/project.test.ts):
// - the worker id is the card's instance id (= its process's etcd lease id = RouterEvent.worker_id);
// - a worker is live while its instance entry (v1/instances) exists under the same endpoint;
// - adapter cards are those with a model suffix and `lora`; a mismatch either way is ignored with a
//   conflict, and an adapter without a base card of the same instance on the endpoint is an orphan;
// - a card with no worker_type whose model_type supports prefill is a prefill worker needing decode
//   (normalize_legacy_prefill_topology);
// - the hash format is eagle when runtime_config.enable_eagle;
// - the base cards of one endpoint must agree on the served model (else ServingTopology conflict),
//   on the identity material (source path, block size, hash format, indexer identity: else "resolves
//   to multiple indexer domains"); an endpoint that does not is left out, with the conflict logged;
// - workers of one endpoint may declare different worker types and needs (a P/D endpoint): each
//   projected worker then carries its own, and readiness makes one unit per (worker type, needs);
// - events: every component with base cards publishes on `namespace.{ns}.component.{c}.kv-events`
//   (older releases `kv_events`); workers with enable_local_indexer false publish to the JetStream
//   stream slugify("namespace.{ns}.component.{c}.kv-events") with '_' -> '-'; v1/event_channels
//   entries for the kv-events topic name NATS subject prefixes and ZMQ publishers;
// - load: each serving endpoint's workers publish ActiveLoad on `namespace.{ns}.component.{c}.endpoint.{e}.kv_metrics`;
// - event sources (newest revisions): v1/event_sources entries of the kv-events topic give, per KV-state
//   endpoint, each publisher's (worker, dp rank) and each rank's status (event-sources.ts). A serving
//   endpoint's KV-state endpoint is its cards' runtime_config.kv_state_endpoint, or itself where a card
//   omits it; cards that name more than one leave its ranks Ambiguous (endpoint mapping). Its pool binds
//   (materializes) only when the KV-state endpoint resolves and, where that endpoint has v1/event_sources
//   entries, one of its carded ranks is Active there (Dynamo's desired_actor_binding); an endpoint whose
//   KV-state endpoint has no entries binds as before event sources existed. Serving topology keeps it.
import { endpointSchema, WORKER_TYPES, type EndpointConfig, type WorkerType } from '../../config/schema';
import { endpointName } from '../../producer/deployment';
import { DYNAMO_PREFIX, layoutNamespace, parseDynamoKey, type EndpointPath } from './keys';
import { markMappingAmbiguous, projectEventSources, type EndpointSources, type SourceEntry } from './event-sources';
import { endpointIdName, eventChannelValue, instanceValue, modelValue, parseEntry, type Card, type ModelValue, type ParseMemo } from './values';

export const KV_EVENT_TOPIC = 'kv-events';
/** Workers' ActiveLoad, endpoint-scoped (KvMetricsSubscriber::for_endpoint_id: EventSubscriber for the endpoint). */
export const KV_METRICS_TOPIC = 'kv_metrics';
/** The topic's name in Dynamo releases before the event plane (spec engine-inputs.md §7 decision 5). */
export const LEGACY_KV_EVENT_TOPIC = 'kv_events';

export interface EventPlaneChannels {
  /** NATS core subjects carrying event-plane envelopes (or, before the event plane, bare JSON events). */
  subjects: string[];
  /** JetStream streams of workers without a local indexer (bare JSON events, read from the stream's start). */
  streams: string[];
  /** ZMQ event-plane publishers (PUB endpoints, 4-frame messages). */
  zmq: string[];
  /** The serving endpoints' `kv_metrics` subjects (the workers' ActiveLoad: their kv_used_blocks). */
  load: string[];
  /** ZMQ publishers of `kv_metrics` (their event channels; 4-frame messages as the KV events'). */
  loadZmq: string[];
}

export interface WorkerRanks {
  dpStartRank: number;
  dpSize: number;
}

export interface DynamoProjection {
  endpoints: EndpointConfig[];
  channels: EventPlaneChannels;
  /** Every carded worker's ranks (events of other workers or ranks are not applied). */
  workers: Map<bigint, WorkerRanks>;
  /** By KV-state endpoint name, for endpoints with at least one valid v1/event_sources entry. */
  eventSources: Map<string, EndpointSources>;
  /** Serving endpoints (by name) whose pool does not bind for its KV event sources, with why (§5.2). */
  unbound: Map<string, string>;
  /** v1/event_sources entries that contradict their key or themselves (they count for no rank). */
  invalidSources: { key: string; problem: string }[];
  /** Entries left out, with why (key relative to the etcd root). */
  rejected: { key: string; problem: string }[];
  conflicts: string[];
}

/**
 * `entries`: full etcd key (from `v1/`) -> value. `namespaces`: those served (undefined = all).
 * `changedSources`: v1/event_sources keys whose value changed while present (watch.ts tracks them).
 * `memo`: parsed values of the previous passes (the result is the same with or without it); keys no
 * longer in `entries` are dropped from it.
 */
export function projectDynamo(entries: ReadonlyMap<string, string>, namespaces?: readonly string[], changedSources?: ReadonlySet<string>, memo?: ParseMemo): DynamoProjection {
  if (memo) for (const key of memo.keys()) if (!entries.has(key)) memo.delete(key);
  const served = namespaces && new Set(namespaces);
  const inScope = (ns: string): boolean => !served || served.has(ns);
  const rejected: DynamoProjection['rejected'] = [];
  const conflicts: string[] = [];
  const live = new Set<string>();
  const bases = new Map<string, { path: EndpointPath; cards: ModelValue[] }>();
  const adapters: { key: string; value: ModelValue }[] = [];
  const subjects = new Set<string>();
  const zmq = new Set<string>();
  const load = new Set<string>();
  const loadZmq = new Set<string>();
  const sources: SourceEntry[] = [];

  for (const key of [...entries.keys()].sort()) {
    if (!key.startsWith(DYNAMO_PREFIX)) continue;
    const parsed = parseDynamoKey(key.slice(DYNAMO_PREFIX.length));
    if (!parsed) {
      // A key in a bucket the relay reads that is not in Dynamo's layout (an id not lowercase hex of
      // at most 16 digits, a segment too many or too few) is counted, as a value that does not parse.
      const ns = layoutNamespace(key.slice(DYNAMO_PREFIX.length));
      if (ns !== null && (ns === undefined || inScope(ns))) rejected.push({ key, problem: 'key is not in Dynamo\'s layout' });
      continue;
    }
    const text = entries.get(key)!;
    if (parsed.kind === 'instance') {
      if (!inScope(parsed.path.namespace)) continue;
      const v = parseEntry(memo, key, text, instanceValue);
      if (typeof v === 'string') rejected.push({ key, problem: v });
      else if (v.instance_id !== parsed.instanceId) rejected.push({ key, problem: `instance_id ${v.instance_id} is not the id of its key` });
      else live.add(workerKey(parsed.path, v.instance_id));
    } else if (parsed.kind === 'card') {
      if (!inScope(parsed.path.namespace)) continue;
      const v = parseEntry(memo, key, text, modelValue);
      if (typeof v === 'string') {
        rejected.push({ key, problem: v });
        continue;
      }
      if (v.instance_id !== parsed.instanceId || endpointName(v) !== endpointName(parsed.path)) {
        rejected.push({ key, problem: 'names another endpoint or instance than its key' });
        continue;
      }
      const isAdapter = v.model_suffix !== undefined;
      if (isAdapter !== (v.card_json.lora !== undefined)) {
        conflicts.push(`${key}: ${isAdapter ? 'an adapter card (model suffix) without lora' : 'a base card with lora'}; ignored`);
        continue;
      }
      if (isAdapter) {
        adapters.push({ key, value: v });
        continue;
      }
      const name = endpointName(parsed.path);
      const entry = bases.get(name) ?? bases.set(name, { path: parsed.path, cards: [] }).get(name)!;
      entry.cards.push(v);
    } else if (parsed.kind === 'eventSource') {
      const kvTopic = parsed.topic === KV_EVENT_TOPIC || parsed.topic === LEGACY_KV_EVENT_TOPIC;
      if (kvTopic && (!parsed.scope || inScope(parsed.scope.namespace))) sources.push({ key, scope: parsed.scope, topic: parsed.topic, publisherId: parsed.publisherId, text });
    } else if (parsed.topic === KV_EVENT_TOPIC || parsed.topic === KV_METRICS_TOPIC) {
      const v = parseEntry(memo, key, text, eventChannelValue);
      if (typeof v === 'string') {
        rejected.push({ key, problem: v });
        continue;
      }
      if (!inScope(v.scope.namespace)) continue;
      // A worker's kv_metrics publisher is a channel of its own (ZMQ: its own PUB), advertised like its
      // KV events': on the ZMQ plane (the default since 1.3) this entry is the only way to hear its load.
      const [nats, pubs] = parsed.topic === KV_EVENT_TOPIC ? [subjects, zmq] : [load, loadZmq];
      if (v.transport.kind === 'Nats') nats.add(`${v.transport.config.subject_prefix}.${parsed.topic}`);
      else if (v.transport.kind === 'Zmq') pubs.add(v.transport.config.endpoint);
      else for (const e of v.transport.config.xpub_endpoints) pubs.add(e);
    }
  }

  // Adapters grouped once by endpoint: each endpoint and the orphan check read only their own (walking
  // every adapter per endpoint made a pass quadratic in what a peer may write).
  const adaptersByEndpoint = new Map<string, { key: string; value: ModelValue }[]>();
  for (const a of adapters) {
    const name = endpointName(a.value);
    (adaptersByEndpoint.get(name) ?? adaptersByEndpoint.set(name, []).get(name)!).push(a);
  }
  const endpoints: EndpointConfig[] = [];
  const workers = new Map<bigint, WorkerRanks>();
  const streams = new Set<string>();
  /** By KV-state endpoint: the carded workers whose KV state it holds. */
  const carded = new Map<string, { workerId: bigint; dpStartRank: number; dpSize: number }[]>();
  /** By serving endpoint: the KV-state endpoints its cards name (one when they agree). */
  const kvStates = new Map<string, string[]>();
  for (const [name, { path, cards }] of bases) {
    const kvState = [...new Set(cards.map((c) => kvStateEndpointOf(c, path)))].sort();
    kvStates.set(name, kvState);
    const scope = `namespace.${eventSegment(path.namespace)}.component.${eventSegment(path.component)}`;
    load.add(`${scope}.endpoint.${eventSegment(path.endpoint)}.${KV_METRICS_TOPIC}`);
    subjects.add(`${scope}.${KV_EVENT_TOPIC}`);
    subjects.add(`${scope}.${LEGACY_KV_EVENT_TOPIC}`);
    for (const c of cards) {
      const rc = c.card_json.runtime_config;
      const ranks = cardRankRange(c);
      workers.set(c.instance_id, ranks);
      if (kvState.length === 1) (carded.get(kvState[0]) ?? carded.set(kvState[0], []).get(kvState[0])!).push({ workerId: c.instance_id, ...ranks });
      if (rc?.enable_local_indexer === false) streams.add(kvStreamName(path));
    }
    const projected = projectEndpoint(path, cards, adaptersByEndpoint.get(name) ?? [], live);
    if (typeof projected === 'string') conflicts.push(`${name}: ${projected}`);
    else endpoints.push(projected);
  }
  for (const [name, list] of adaptersByEndpoint) {
    const base = bases.get(name);
    const ids = new Set(base?.cards.map((c) => c.instance_id));
    for (const a of list) if (!ids.has(a.value.instance_id)) conflicts.push(`${a.key}: adapter card without a base card of its instance on the endpoint (orphan); ignored`);
  }
  const eventSources = projectEventSources(sources, carded, changedSources, memo);
  rejected.push(...eventSources.rejected);
  const unbound = new Map<string, string>();
  for (const [name, { cards }] of bases) {
    const kvState = kvStates.get(name)!;
    const own = cards.flatMap((c) => cardRanks(c).map((r) => ({ workerId: c.instance_id, dpRank: r })));
    if (kvState.length > 1) {
      // Resolution is Ambiguous: KV membership fails closed (every rank Ambiguous), serving continues.
      markMappingAmbiguous(eventSources.endpoints, name, own);
      unbound.set(name, `its cards name more than one KV-state endpoint (runtime_config.kv_state_endpoint: ${kvState.join(', ')})`);
      continue;
    }
    const membership = eventSources.endpoints.get(kvState[0]);
    if (!membership) continue;
    const ownKeys = new Set(own.map((r) => `${r.workerId}/${r.dpRank}`));
    if (!membership.ranks.some((r) => r.status === 'active' && ownKeys.has(`${r.workerId}/${r.dpRank}`))) {
      unbound.set(name, `no active KV event source for its workers (v1/event_sources of ${kvState[0]})`);
    }
  }
  // An endpoint left out for a conflict has no pool to hold unbound.
  const projected = new Set(endpoints.map(endpointName));
  for (const name of unbound.keys()) if (!projected.has(name)) unbound.delete(name);
  return {
    endpoints,
    channels: { subjects: [...subjects].sort(), streams: [...streams].sort(), zmq: [...zmq].sort(), load: [...load].sort(), loadZmq: [...loadZmq].sort() },
    workers,
    eventSources: eventSources.endpoints,
    unbound,
    invalidSources: eventSources.invalid,
    rejected,
    conflicts,
  };
}

/** runtime_config.effective_kv_state_endpoint: the card's kv_state_endpoint, or its serving endpoint. */
function kvStateEndpointOf(c: ModelValue, serving: EndpointPath): string {
  const kv = c.card_json.runtime_config?.kv_state_endpoint;
  return kv ? endpointIdName(kv) : endpointName(serving);
}

/** The dp ranks a card declares (runtime_config; one rank, 0, where it says none). */
function cardRankRange(c: ModelValue): WorkerRanks {
  const rc = c.card_json.runtime_config;
  return { dpStartRank: rc?.data_parallel_start_rank ?? 0, dpSize: rc?.data_parallel_size ?? 1 };
}

/** The global dp ranks a card declares. */
function cardRanks(c: ModelValue): number[] {
  const { dpStartRank, dpSize } = cardRankRange(c);
  return Array.from({ length: dpSize }, (_, i) => dpStartRank + i);
}

function workerKey(path: EndpointPath, id: bigint): string {
  return `${endpointName(path)}/${id}`;
}

/** `adapterCards`: the adapter cards of this endpoint. */
function projectEndpoint(path: EndpointPath, cards: ModelValue[], adapterCards: readonly { value: ModelValue }[], live: Set<string>): EndpointConfig | string {
  const first = cards[0].card_json;
  const topo = (c: Card) => JSON.stringify(workerTopology(c));
  const material = (c: Card) => JSON.stringify([c.source_path ?? c.display_name, c.kv_cache_block_size, c.runtime_config?.enable_eagle === true, c.indexer_identity ?? null]);
  if (cards.some((c) => c.card_json.display_name !== first.display_name)) return 'more than one canonical base model on the endpoint (ServingTopology conflict); left out';
  if (cards.some((c) => material(c.card_json) !== material(first))) return 'endpoint resolves to multiple indexer domains (PoolMaterialization conflict); left out';
  // Workers that agree declare their topology on the endpoint; otherwise each worker carries its own
  // and readiness groups them into units by (worker type, needs), as upstream's does.
  const uniform = cards.every((c) => topo(c.card_json) === topo(first));
  const { workerType, needs } = uniform ? workerTopology(first) : { workerType: undefined, needs: [] };
  const ids = new Set(cards.map((c) => c.instance_id));
  const byServed = new Map<string, { name: string; workers: bigint[] }>();
  for (const { value } of adapterCards) {
    if (!ids.has(value.instance_id)) continue;
    const served = value.card_json.display_name;
    const entry = byServed.get(served) ?? byServed.set(served, { name: value.card_json.lora!.name, workers: [] }).get(served)!;
    if (entry.name === value.card_json.lora!.name) entry.workers.push(value.instance_id);
  }
  const aliases = [...new Set(cards.flatMap((c) => c.card_json.aliases ?? []))].filter((a) => a !== first.display_name && a.length > 0 && a.trim() === a).sort();
  const raw = {
    namespace: path.namespace,
    component: path.component,
    endpoint: path.endpoint,
    model: {
      name: first.display_name,
      ...(first.source_path === undefined ? {} : { sourcePath: first.source_path }),
      kvBlockSize: first.kv_cache_block_size,
      hashFormat: first.runtime_config?.enable_eagle ? 'eagle' : 'standard',
      aliases,
    },
    ...(first.indexer_identity && (first.indexer_identity.semantics || first.indexer_identity.routing_scope)
      ? {
          indexerIdentity: {
            ...(first.indexer_identity.semantics ? { semantics: first.indexer_identity.semantics } : {}),
            ...(first.indexer_identity.routing_scope ? { routingScope: first.indexer_identity.routing_scope } : {}),
          },
        }
      : {}),
    ...(workerType ? { workerType } : {}),
    ...(needs.length > 0 ? { needs } : {}),
    adapters: [...byServed].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([servedModel, a]) => ({ name: a.name, servedModel, workers: a.workers.map(String) })),
    workers: [...cards]
      .sort((a, b) => (a.instance_id < b.instance_id ? -1 : 1))
      .map((c) => {
        const rc = c.card_json.runtime_config;
        const own = uniform ? undefined : workerTopology(c.card_json);
        return {
          id: c.instance_id.toString(),
          ...(own?.workerType ? { workerType: own.workerType } : {}),
          ...(own?.workerType && own.needs.length > 0 ? { needs: own.needs } : {}),
          ...cardRankRange(c),
          ...(rc?.total_kv_blocks === undefined ? {} : { totalKvBlocks: rc.total_kv_blocks }),
          ...(rc?.max_num_seqs === undefined ? {} : { maxNumSeqs: rc.max_num_seqs }),
          live: live.has(workerKey(path, c.instance_id)),
        };
      }),
  };
  const result = endpointSchema.safeParse(raw);
  if (!result.success) {
    const issue = result.error.issues[0];
    return `card not usable: ${issue.path.join('.')}: ${issue.message}; left out`;
  }
  return result.data;
}

/** worker_type and needs, with Dynamo's legacy-prefill normalization. Unknown type names are dropped. */
function workerTopology(c: Card): { workerType?: WorkerType; needs: WorkerType[][] } {
  const known = (t: string | undefined): WorkerType | undefined => (WORKER_TYPES as readonly string[]).includes(t ?? '') ? (t as WorkerType) : undefined;
  let workerType = known(c.worker_type);
  let needs = (c.needs ?? []).map((alt) => alt.map(known).filter((t): t is WorkerType => t !== undefined)).filter((alt) => alt.length > 0);
  if (c.worker_type === undefined && supportsPrefill(c.model_type)) {
    workerType = 'prefill';
    if (needs.length === 0) needs = [['decode']];
  }
  return { workerType, needs };
}

/** model_type is bitflags 2 text ("Chat | Completions", "Prefill"). */
function supportsPrefill(modelType: string | undefined): boolean {
  return (modelType ?? '').split('|').some((f) => f.trim() === 'Prefill');
}

/** encode_event_segment: newest revisions percent-encode each byte outside [A-Za-z0-9_-]. */
export function eventSegment(s: string): string {
  return [...Buffer.from(s, 'utf8')].map((b) => (/[A-Za-z0-9_-]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, '0')}`)).join('');
}

/** create_kv_stream_name: Slug::slugify("namespace.{ns}.component.{c}.kv-events") with '_' -> '-'. */
export function kvStreamName(path: Pick<EndpointPath, 'namespace' | 'component'>): string {
  const text = `namespace.${path.namespace}.component.${path.component}.${KV_EVENT_TOPIC}`;
  const slug = [...text.toLowerCase()].map((c) => (/^[a-z0-9_-]$/.test(c) ? c : '_')).join('').replace(/^_+/, '');
  return slug.replace(/_/g, '-');
}
