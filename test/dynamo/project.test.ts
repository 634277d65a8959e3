// Projection of Dynamo's discovery entries (src/dynamo/discovery/project.ts). Each rule adopted from
// Dynamo's sources or the spec has a case here (identity-topology-load.md §5.1,
// dynamo-event-plane-and-discovery.md §2-§5).
import { kvStreamName, projectDynamo } from '../../src/dynamo/discovery/project';
import { eventSourceEntry } from '../support/dynamo-worker';

const ID = 4321100813102084358n; // above 2^53: must stay exact
const hex = (id: bigint) => id.toString(16);

function card(over: Record<string, unknown> = {}): Record<string, unknown> {
  return { display_name: 'llama', kv_cache_block_size: 16, model_type: 'Chat', worker_type: 'aggregated', needs: [], runtime_config: { total_kv_blocks: 10, data_parallel_size: 2, data_parallel_start_rank: 4 }, ...over };
}
/** serde_json writes u64 as bare numbers (above 2^53 too). */
function raw(v: Record<string, unknown>, id: bigint): string {
  return JSON.stringify({ ...v, instance_id: '@ID@' }).replace('"@ID@"', id.toString());
}
function entries(...kv: [string, string][]): Map<string, string> {
  return new Map(kv);
}
const model = (id: bigint, c: Record<string, unknown>, over: Record<string, unknown> = {}, ep = 'ns/backend/generate', suffix = ''): [string, string] => {
  const [namespace, component, endpoint] = ep.split('/');
  return [`v1/mdc/${ep}/${hex(id)}${suffix ? `/${suffix}` : ''}`, raw({ type: 'Model', namespace, component, endpoint, card_json: c, ...over }, id)];
};
const instance = (id: bigint, ep = 'ns/backend/generate'): [string, string] => {
  const [namespace, component, endpoint] = ep.split('/');
  return [`v1/instances/${ep}/${hex(id)}`, raw({ type: 'Endpoint', component, endpoint, namespace, transport: { tcp: '1.2.3.4:5' } }, id)];
};

/**
 * A v1/event_channels entry as Dynamo writes it: the key from the scope ('ns', 'ns/component' or
 * 'ns/component/endpoint'), the topic and the publisher's instance id in hex; the value serde's
 * DiscoveryInstance::EventChannel (EventScope tagged by "kind", snake_case).
 */
const eventChannel = (scope: string, topic: string, id: number, transport: Record<string, unknown>): [string, string] => {
  const [namespace, component, name] = scope.split('/');
  const path = `namespace/${namespace}${component ? `/component/${component}` : ''}${name ? `/endpoint/${name}` : ''}`;
  const scopeValue = name ? { kind: 'endpoint', endpoint: { namespace, component, name } } : component ? { kind: 'component', namespace, component } : { kind: 'namespace', name: namespace };
  return [`v1/event_channels/${path}/topic/${topic}/${id.toString(16)}`, JSON.stringify({ type: 'EventChannel', scope: scopeValue, topic, instance_id: id, transport })];
};
const zmq = (endpoint: string) => ({ kind: 'Zmq', config: { endpoint } });
const nats = (subjectPrefix: string) => ({ kind: 'Nats', config: { subject_prefix: subjectPrefix } });

test('the worker id is the instance id (lease id) exactly; ranks and capacity come from runtime_config', () => {
  const p = projectDynamo(entries(model(ID, card()), instance(ID)));
  expect(p.endpoints).toHaveLength(1);
  const w = p.endpoints[0].workers[0];
  expect(w.id).toBe(ID);
  expect([w.dpStartRank, w.dpSize, w.totalKvBlocks]).toEqual([4, 2, 10]);
  expect(p.workers.get(ID)).toEqual({ dpStartRank: 4, dpSize: 2 });
});

test('a worker is live while its instance entry exists', () => {
  expect(projectDynamo(entries(model(ID, card()), instance(ID))).endpoints[0].workers[0].live).toBe(true);
  expect(projectDynamo(entries(model(ID, card()))).endpoints[0].workers[0].live).toBe(false);
  // An instance of another endpoint does not make it live.
  expect(projectDynamo(entries(model(ID, card()), instance(ID, 'ns/backend/clear_kv_blocks'))).endpoints[0].workers[0].live).toBe(false);
});

test('adapter cards need a model suffix and lora; a mismatch is ignored; an orphan is ignored', () => {
  const lora = card({ display_name: 'llama-sql', lora: { name: 'sql-lora' } });
  const p = projectDynamo(entries(model(ID, card()), model(ID, lora, { model_suffix: 'llama_sql' }, undefined, 'llama_sql')));
  expect(p.endpoints[0].adapters).toEqual([{ name: 'sql-lora', servedModel: 'llama-sql', workers: [ID] }]);
  const mismatch = projectDynamo(entries(model(ID, card()), model(ID, card({ display_name: 'x' }), { model_suffix: 'x' }, undefined, 'x')));
  expect(mismatch.endpoints[0].adapters).toEqual([]);
  expect(mismatch.conflicts.join()).toMatch(/without lora/);
  const orphan = projectDynamo(entries(model(ID, card()), model(7n, lora, { model_suffix: 'llama_sql' }, undefined, 'llama_sql')));
  expect(orphan.endpoints[0].adapters).toEqual([]);
  expect(orphan.conflicts.join()).toMatch(/orphan/);
});

test('a card without worker_type whose model_type supports prefill is a prefill worker needing decode', () => {
  const c = card({ worker_type: undefined, needs: undefined, model_type: 'Prefill' });
  delete c.worker_type;
  const ep = projectDynamo(entries(model(ID, c))).endpoints[0];
  expect([ep.workerType, ep.needs]).toEqual(['prefill', [['decode']]]);
  const legacy = card({ model_type: 'Chat | Completions' });
  delete legacy.worker_type;
  expect(projectDynamo(entries(model(ID, legacy))).endpoints[0].workerType).toBeUndefined();
});

test('workers of one endpoint with different worker types each carry their own (a P/D endpoint is served, not left out)', () => {
  const legacyPrefill = card({ model_type: 'Prefill' });
  delete legacyPrefill.worker_type;
  delete legacyPrefill.needs;
  const p = projectDynamo(entries(
    model(1n, card({ worker_type: 'decode', needs: [['prefill']] })),
    model(2n, card({ worker_type: 'prefill' })),
    model(3n, legacyPrefill),
  ));
  expect(p.conflicts).toEqual([]);
  const [ep] = p.endpoints;
  expect([ep.workerType, ep.needs]).toEqual([undefined, undefined]);
  expect(ep.workers.map((w) => [w.id, w.workerType, w.needs])).toEqual([
    [1n, 'decode', [['prefill']]],
    [2n, 'prefill', undefined],
    [3n, 'prefill', [['decode']]], // normalize_legacy_prefill_topology, per card
  ]);
  // Workers that agree keep declaring it on the endpoint.
  const same = projectDynamo(entries(model(1n, card()), model(2n, card()))).endpoints[0];
  expect([same.workerType, same.workers.map((w) => w.workerType)]).toEqual(['aggregated', [undefined, undefined]]);
});

test('enable_eagle selects the eagle hash format; source_path falls back to display_name', () => {
  const ep = projectDynamo(entries(model(ID, card({ runtime_config: { enable_eagle: true } })))).endpoints[0];
  expect(ep.model.hashFormat).toBe('eagle');
  expect(ep.model.sourcePath).toBeUndefined();
  expect(projectDynamo(entries(model(ID, card({ source_path: 'meta/llama' })))).endpoints[0].model.sourcePath).toBe('meta/llama');
});

test('cards of one endpoint that disagree on the served model or the identity material leave it out', () => {
  const two = projectDynamo(entries(model(ID, card()), model(7n, card({ display_name: 'other' }))));
  expect(two.endpoints).toEqual([]);
  expect(two.conflicts.join()).toMatch(/ServingTopology/);
  const domains = projectDynamo(entries(model(ID, card()), model(7n, card({ kv_cache_block_size: 32 }))));
  expect(domains.conflicts.join()).toMatch(/multiple indexer domains/);
});

test('namespaces filter what is served', () => {
  const p = projectDynamo(entries(model(ID, card()), model(7n, card(), {}, 'other/backend/generate')), ['ns']);
  expect(p.endpoints.map((e) => e.namespace)).toEqual(['ns']);
});

test('event channels: component subjects, JetStream streams of workers without a local indexer, ZMQ publishers', () => {
  const js = card({ runtime_config: { enable_local_indexer: false } });
  const zmqChannel = eventChannel('ns/backend', 'kv-events', 8776565086972537, zmq('tcp://10.0.0.1:5555'));
  const p = projectDynamo(entries(model(ID, js, {}, 'ns/prefill/generate'), zmqChannel));
  expect(p.channels.subjects).toEqual(['namespace.ns.component.prefill.kv-events', 'namespace.ns.component.prefill.kv_events']);
  expect(p.channels.streams).toEqual(['namespace-ns-component-prefill-kv-events']);
  expect(p.channels.zmq).toEqual(['tcp://10.0.0.1:5555']);
  // Load: ActiveLoad on the serving endpoint's kv_metrics subject (KvMetricsSubscriber::for_endpoint_id).
  expect(p.channels.load).toEqual(['namespace.ns.component.prefill.endpoint.generate.kv_metrics']);
});

test('event channels in every scope Dynamo writes: endpoint-scoped (nested EndpointId, the newest KV publishers), namespace-scoped, component-scoped', () => {
  // serde of EventScope (tag "kind", snake_case): Endpoint { endpoint: EndpointId { namespace, component, name } }.
  const endpointZmq = eventChannel('ns/backend/generate', 'kv-events', 8776565086972538, zmq('tcp://10.0.0.2:5555'));
  const endpointNats = eventChannel('ns/backend/generate', 'kv-events', 8776565086972539, nats('namespace.ns.component.backend.endpoint.generate'));
  const namespaceZmq = eventChannel('ns', 'kv-events', 8776565086972540, zmq('tcp://10.0.0.3:5555'));
  const otherNamespace = eventChannel('other/backend/generate', 'kv-events', 8776565086972541, zmq('tcp://10.0.0.4:5555'));
  const p = projectDynamo(entries(model(ID, card()), endpointZmq, endpointNats, namespaceZmq, otherNamespace), ['ns']);
  expect(p.rejected).toEqual([]);
  expect(p.channels.zmq).toEqual(['tcp://10.0.0.2:5555', 'tcp://10.0.0.3:5555']);
  expect(p.channels.subjects).toContain('namespace.ns.component.backend.endpoint.generate.kv-events');
  // A scope that is none of Dynamo's shapes is still rejected with its key.
  const bad = projectDynamo(entries(model(ID, card()), [endpointZmq[0], endpointZmq[1].replace('"name":"generate"', '"name":7')]));
  expect(bad.rejected.map((r) => r.key)).toEqual([endpointZmq[0]]);
});

test('kv_metrics event channels: a ZMQ publisher is a load channel of its own; a NATS one adds its subject', () => {
  const zmqLoad = eventChannel('ns/backend/generate', 'kv_metrics', 42, zmq('tcp://10.0.0.5:6000'));
  const natsLoad = eventChannel('ns', 'kv_metrics', 43, nats('namespace.ns'));
  const p = projectDynamo(entries(model(ID, card()), zmqLoad, natsLoad));
  expect(p.rejected).toEqual([]);
  expect(p.channels.loadZmq).toEqual(['tcp://10.0.0.5:6000']);
  expect(p.channels.zmq).toEqual([]);
  expect(p.channels.load).toEqual(['namespace.ns.component.backend.endpoint.generate.kv_metrics', 'namespace.ns.kv_metrics']);
});

test('the JetStream stream name is create_kv_stream_name (slugify, then _ -> -)', () => {
  expect(kvStreamName({ namespace: 'disagg', component: 'prefill' })).toBe('namespace-disagg-component-prefill-kv-events');
  expect(kvStreamName({ namespace: 'Prod.A', component: 'back end' })).toBe('namespace-prod-a-component-back-end-kv-events');
});

test('a value that is not valid is rejected alone, with its key', () => {
  const p = projectDynamo(entries(model(ID, card()), ['v1/mdc/ns/x/generate/7', '{"type":"Model"'], instance(ID)));
  expect(p.endpoints).toHaveLength(1);
  expect(p.rejected.map((r) => r.key)).toEqual(['v1/mdc/ns/x/generate/7']);
});

/** A v1/event_sources entry (eventSourceEntry); `over` replaces value fields, `meta` metadata fields. */
const eventSource = (ep: string, workerId: bigint, dpRank: number, publisherId: number, o: { over?: Record<string, unknown>; meta?: Record<string, unknown>; recoverable?: boolean } = {}): [string, string] => {
  const [namespace, component, endpoint] = ep.split('/');
  return eventSourceEntry({ namespace, component, endpoint }, workerId, dpRank, BigInt(publisherId), {
    recoverable: o.recoverable,
    edit: (v) => {
      Object.assign(v.metadata, o.meta);
      Object.assign(v, o.over);
    },
  });
};
const ranksOf = (p: ReturnType<typeof projectDynamo>, ep = 'ns/backend/generate') => p.eventSources.get(ep)?.ranks.map((r) => [r.workerId, r.dpRank, r.status, r.reason, r.publishers]);

test('event sources: one publisher per rank is Active, the publisher speaks for its (worker, rank); a carded rank without one is Missing', () => {
  // card(): data_parallel_start_rank 4, size 2.
  const p = projectDynamo(entries(model(ID, card()), eventSource('ns/backend/generate', ID, 4, 77, { recoverable: true })));
  expect(p.rejected).toEqual([]);
  expect(p.invalidSources).toEqual([]);
  expect(ranksOf(p)).toEqual([
    [ID, 4, 'active', undefined, [77n]],
    [ID, 5, 'missing', undefined, []],
  ]);
  expect(p.eventSources.get('ns/backend/generate')!.ranks[0].recoverable).toBe(true);
  expect([...p.eventSources.get('ns/backend/generate')!.publishers]).toEqual([[77n, { workerId: ID, dpRank: 4 }]]);
  // The worker id (above 2^53) stays exact; without a recovery target the source is live-only.
  const liveOnly = projectDynamo(entries(model(ID, card()), eventSource('ns/backend/generate', ID, 5, 78)));
  expect(liveOnly.eventSources.get('ns/backend/generate')!.ranks.find((r) => r.dpRank === 5)).toMatchObject({ workerId: ID, status: 'active', recoverable: false });
});

test('event sources: two publishers for one rank make it Ambiguous (incarnations); one publisher id advertised for two ranks makes both Ambiguous (conflicting descriptor)', () => {
  const two = projectDynamo(entries(model(ID, card()), eventSource('ns/backend/generate', ID, 4, 77), eventSource('ns/backend/generate', ID, 4, 78), eventSource('ns/backend/generate', ID, 5, 79)));
  expect(ranksOf(two)).toEqual([
    [ID, 4, 'ambiguous', 'incarnations', [77n, 78n]],
    [ID, 5, 'active', undefined, [79n]],
  ]);
  // The same publisher id under the legacy topic too, for another rank.
  const [key, value] = eventSource('ns/backend/generate', ID, 5, 77);
  const legacy: [string, string] = [key.replace('/kv-events/', '/kv_events/'), value.replace('"topic":"kv-events"', '"topic":"kv_events"')];
  const reused = projectDynamo(entries(model(ID, card()), eventSource('ns/backend/generate', ID, 4, 77), legacy));
  expect(reused.invalidSources).toEqual([]);
  expect(ranksOf(reused)).toEqual([
    [ID, 4, 'ambiguous', 'conflicting-descriptor', [77n]],
    [ID, 5, 'ambiguous', 'conflicting-descriptor', [77n]],
  ]);
});

test('event sources: a descriptor that changed while advertised makes its rank Ambiguous (conflicting descriptor)', () => {
  const source = eventSource('ns/backend/generate', ID, 4, 77);
  const p = projectDynamo(entries(model(ID, card()), source), undefined, new Set([source[0]]));
  expect(ranksOf(p)![0]).toEqual([ID, 4, 'ambiguous', 'conflicting-descriptor', [77n]]);
});

test('event sources: a value that contradicts its key or its metadata is invalid and counts for no rank; a malformed one is rejected', () => {
  const ep = 'ns/backend/generate';
  const cases: [[string, string], RegExp][] = [
    [eventSource(ep, ID, 4, 77, { over: { topic: 'kv_metrics' } }), /topic/],
    [eventSource(ep, ID, 4, 77, { over: { publisher_id: 78 } }), /publisher_id 78 is not its key's/],
    [eventSource(ep, ID, 4, 77, { meta: { publisher_id: 78 } }), /metadata.publisher_id/],
    [eventSource(ep, ID, 4, 77, { over: { scope: { kind: 'endpoint', endpoint: { namespace: 'ns', component: 'backend', name: 'other' } } } }), /scope is not its key's/],
    [eventSource(ep, ID, 4, 77, { over: { scope: { kind: 'component', namespace: 'ns', component: 'backend' } } }), /not endpoint/],
    [eventSource(ep, ID, 4, 77, { meta: { kv_state_endpoint: { namespace: 'ns', component: 'backend', name: 'other' } } }), /kv_state_endpoint/],
  ];
  for (const [source, problem] of cases) {
    const p = projectDynamo(entries(model(ID, card()), source, eventSource(ep, ID, 5, 79)));
    expect(p.invalidSources.map((i) => i.key)).toEqual([source[0]]);
    expect(p.invalidSources[0].problem).toMatch(problem);
    expect(p.rejected).toEqual([]);
    // Its rank is Missing, the other rank's publisher unaffected; the invalid publisher speaks for none.
    expect(ranksOf(p)).toEqual([
      [ID, 4, 'missing', undefined, []],
      [ID, 5, 'active', undefined, [79n]],
    ]);
    expect(p.eventSources.get(ep)!.publishers.has(77n)).toBe(false);
  }
  // Not Dynamo's shape (a worker id as a string, a dp rank above u32): rejected alone, with its key.
  const [key, value] = eventSource(ep, ID, 4, 77);
  for (const bad of [value.replace(`"worker_id":${ID}`, `"worker_id":"${ID}"`), value.replace('"dp_rank":4', '"dp_rank":4294967296'), '{"type":"EventSource"']) {
    const p = projectDynamo(entries(model(ID, card()), [key, bad]));
    expect(p.rejected.map((r) => r.key)).toEqual([key]);
    expect(p.eventSources.size).toBe(0);
    expect(p.endpoints).toHaveLength(1);
  }
});

test('event sources: a deployment without v1/event_sources projects exactly as before; other namespaces and topics are not read', () => {
  const zmqChannel = eventChannel('ns/backend/generate', 'kv-events', 8776565086972538, zmq('tcp://10.0.0.2:5555'));
  const base = entries(model(ID, card()), instance(ID), zmqChannel);
  const without = projectDynamo(base);
  expect(without.eventSources.size).toBe(0);
  expect(without.invalidSources).toEqual([]);
  const withOthers = projectDynamo(new Map([...base, eventSource('other/backend/generate', ID, 4, 77), [eventSource('ns/backend/generate', ID, 4, 78)[0].replace('/kv-events/', '/kv_metrics/'), '{}']]), ['ns']);
  expect(withOthers).toEqual(without);
  const { eventSources: _e, invalidSources: _i, ...rest } = projectDynamo(new Map([...base, eventSource('ns/backend/generate', ID, 4, 77)]));
  const { eventSources: _e2, invalidSources: _i2, ...restWithout } = without;
  expect(rest).toEqual(restWithout);
});

test('event sources bind the pool: where the KV-state endpoint has entries, only with an Active rank of the endpoint’s cards; without entries, as before', () => {
  const ep = 'ns/backend/generate';
  // card(): ranks 4 and 5.
  expect(projectDynamo(entries(model(ID, card()), eventSource(ep, ID, 4, 77))).unbound).toEqual(new Map());
  expect(projectDynamo(entries(model(ID, card()))).unbound).toEqual(new Map());
  const none = projectDynamo(entries(model(ID, card()), eventSource(ep, ID, 4, 77), eventSource(ep, ID, 4, 78)));
  expect([...none.unbound.keys()]).toEqual([ep]);
  expect(none.unbound.get(ep)).toMatch(/no active KV event source/);
  // An Active source of a rank the endpoint's cards do not declare binds nothing.
  expect([...projectDynamo(entries(model(ID, card()), eventSource(ep, ID, 9, 77))).unbound.keys()]).toEqual([ep]);
  expect(none.endpoints).toHaveLength(1);
});

test('runtime_config.kv_state_endpoint names the endpoint whose sources are the card’s; cards that disagree leave every rank Ambiguous (endpoint mapping); a malformed one rejects the card', () => {
  const ep = 'ns/backend/generate';
  const kvState = { namespace: 'ns', component: 'backend', name: 'kv' };
  const mapped = card({ runtime_config: { data_parallel_size: 2, data_parallel_start_rank: 4, kv_state_endpoint: kvState } });
  const p = projectDynamo(entries(model(ID, mapped), eventSource('ns/backend/kv', ID, 4, 77)));
  expect(ranksOf(p, 'ns/backend/kv')).toEqual([
    [ID, 4, 'active', undefined, [77n]],
    [ID, 5, 'missing', undefined, []],
  ]);
  expect(p.unbound).toEqual(new Map());
  // A source at the serving endpoint is not the card's: the pool does not bind for it.
  const elsewhere = projectDynamo(entries(model(ID, mapped), eventSource('ns/backend/kv', ID, 4, 77), eventSource('ns/backend/kv', ID, 4, 78), eventSource(ep, ID, 5, 79)));
  expect([...elsewhere.unbound.keys()]).toEqual([ep]);
  // An explicit mapping to the serving endpoint agrees with an omitted one.
  const explicit = card({ runtime_config: { kv_state_endpoint: { namespace: 'ns', component: 'backend', name: 'generate' } } });
  const agreeing = projectDynamo(entries(model(ID, explicit), model(ID + 1n, card({ runtime_config: {} })), eventSource(ep, ID, 0, 77)));
  expect(agreeing.unbound).toEqual(new Map());
  expect(ranksOf(agreeing)).toEqual([
    [ID, 0, 'active', undefined, [77n]],
    [ID + 1n, 0, 'missing', undefined, []],
  ]);
  // Two workers naming different KV-state endpoints: every rank Ambiguous, no binding, with or without entries.
  const two = projectDynamo(entries(model(ID, mapped), model(ID + 1n, card({ runtime_config: {} })), eventSource('ns/backend/kv', ID, 4, 77)));
  expect(ranksOf(two)).toEqual([
    [ID, 4, 'ambiguous', 'endpoint-mapping', [77n]],
    [ID, 5, 'ambiguous', 'endpoint-mapping', []],
    [ID + 1n, 0, 'ambiguous', 'endpoint-mapping', []],
  ]);
  // Each source counted once: not also under the endpoint it was advertised at.
  expect(ranksOf(two, 'ns/backend/kv')).toEqual([]);
  expect(two.unbound.get(ep)).toMatch(/more than one KV-state endpoint.*ns\/backend\/generate, ns\/backend\/kv/);
  expect(two.endpoints).toHaveLength(1);
  // Not an EndpointId (a missing or empty part, not an object): the card is rejected alone, with its key.
  for (const bad of [{ namespace: 'ns', component: 'backend' }, { ...kvState, name: '' }, 'ns/backend/kv']) {
    const r = projectDynamo(entries(model(ID, card({ runtime_config: { kv_state_endpoint: bad } }))));
    expect(r.rejected.map((x) => x.key)).toEqual([model(ID, card())[0]]);
    expect(r.rejected[0].problem).toMatch(/kv_state_endpoint/);
    expect(r.endpoints).toEqual([]);
  }
});

test('a card whose data_parallel_size is above 4096 is rejected before its ranks are walked', () => {
  const r = projectDynamo(entries(model(ID, card({ runtime_config: { data_parallel_size: 2 ** 53 } }))));
  expect(r.rejected.map((x) => x.problem)).toEqual([expect.stringMatching(/data_parallel_size/)]);
  expect(r.workers.size).toBe(0);
});

test('a card whose dp rank range overflows u32 is rejected: its ranks are never walked (a start rank past 2^53 never ended the walk)', () => {
  const ep = 'ns/backend/generate';
  for (const [start, size] of [[2 ** 64, 1], [1e308, 2], [2 ** 53 - 1, 2], [0xffff_ffff, 2], [2 ** 32, 1]]) {
    const bad = card({ runtime_config: { data_parallel_size: size, data_parallel_start_rank: start } });
    // Without event sources (on main: accepted, its worker carded with that start rank).
    const alone = projectDynamo(entries(model(ID, bad)));
    expect([alone.rejected.map((x) => x.problem), alone.workers.size]).toEqual([[expect.stringMatching(/data_parallel_start_rank|overflows u32/)], 0]);
    // With a source on its KV-state endpoint (on main: the rank walk never ended for a start past 2^53).
    const p = projectDynamo(entries(model(ID, bad), model(7n, card()), eventSource(ep, 7n, 4, 77)));
    expect(p.rejected.map((x) => x.key)).toEqual([`v1/mdc/${ep}/${hex(ID)}`]);
    expect(ranksOf(p)).toEqual([[7n, 4, 'active', undefined, [77n]], [7n, 5, 'missing', undefined, []]]);
  }
  // The last rank a card may declare is u32::MAX.
  const top = projectDynamo(entries(model(ID, card({ runtime_config: { data_parallel_size: 2, data_parallel_start_rank: 0xffff_fffe } }))));
  expect(top.workers.get(ID)).toEqual({ dpStartRank: 0xffff_fffe, dpSize: 2 });
});

test('a key in a bucket the relay reads but outside Dynamo\'s layout is rejected, with its key; in another namespace or bucket it is not read', () => {
  const [, value] = model(ID, card());
  const bad = [
    `v1/mdc/ns/backend/generate/${hex(ID).toUpperCase()}`, // ids are lowercase hex
    'v1/mdc/ns/backend/generate/07', // without leading zeros
    `v1/instances/ns/backend/generate/${'f'.repeat(17)}`, // at most 16 digits (u64)
    'v1/instances/ns/backend/generate', // a segment short
    'v1/mdc/ns/backend/generate/7/lora/extra', // a segment too many
    'v1/event_sources/namespace/ns/component/backend/endpoint/generate/kv-events/4d', // no `topic` segment
    'v1/event_channels/namespace/ns/topic/kv-events/0x4d',
  ];
  const p = projectDynamo(new Map([model(ID, card()), ...bad.map((k): [string, string] => [k, value])]), ['ns']);
  expect(p.rejected.map((r) => [r.key, r.problem])).toEqual([...bad].sort().map((k) => [k, "key is not in Dynamo's layout"]));
  expect(p.endpoints.map((e) => e.workers.map((w) => w.id))).toEqual([[ID]]);
  const elsewhere = projectDynamo(entries(model(ID, card()), [`v1/mdc/other/backend/generate/${hex(ID).toUpperCase()}`, value], ['v1/event_channels/namespace/other/topic/kv-events/X', value], ['v1/other_bucket/x', value]), ['ns']);
  expect(elsewhere.rejected).toEqual([]);
});

test('an id spelled with a leading zero is not a second card of its worker (it took the whole endpoint out as a duplicate worker)', () => {
  const [key, value] = model(0x7n, card());
  const p = projectDynamo(entries([key, value], [key.replace(/\/7$/, '/07'), value], instance(0x7n)));
  expect(p.endpoints.map((e) => e.workers.map((w) => [w.id, w.live]))).toEqual([[[0x7n, true]]]);
  expect(p.conflicts).toEqual([]);
});

test('an endpoint left out for a conflict is not counted unbound', () => {
  const ep = 'ns/backend/generate';
  const p = projectDynamo(entries(model(ID, card()), model(ID + 1n, card({ display_name: 'mistral' })), eventSource(ep, ID, 4, 77), eventSource(ep, ID, 4, 78)));
  expect(p.endpoints).toEqual([]);
  expect(p.unbound).toEqual(new Map());
});
