// Seeded fuzzing of the pure Dynamo projection (src/dynamo/discovery/project.ts) over hostile etcd
// entries: every v1/ key and value is written by a network peer holding etcd credentials. Starts from a
// valid, realistic deployment (the shapes of project.test.ts and dynamo-event-plane-and-discovery.md
// §2-§5), mutates it, and checks what must hold whatever the input: the projection does not throw;
// every entry it reads is used or reported with a reason; the result does not depend on the entries'
// order; its output is bounded by the input's size (entries and the fixed limits), never by a number
// inside a value; a pass with the parse memo of earlier passes projects the same. A failure prints its
// seed: `DYNAMO_FUZZ_SEEDS=<seed> npx jest test/dynamo/project-fuzz`. More iterations:
// DYNAMO_FUZZ_ITERATIONS (default 30 per seed).
import { MAX_DP_SIZE } from '../../src/config/limits';
import { DYNAMO_PREFIX, parseDynamoKey } from '../../src/dynamo/discovery/keys';
import { projectDynamo, type DynamoProjection } from '../../src/dynamo/discovery/project';
import type { ParseMemo } from '../../src/dynamo/discovery/values';
import { endpointName } from '../../src/producer/deployment';
import { eventSourceEntry } from '../support/dynamo-worker';

const SEEDS = process.env.DYNAMO_FUZZ_SEEDS?.split(',').map(Number) ?? [1, 2, 3, 5, 8, 13];
const ITERATIONS = Number(process.env.DYNAMO_FUZZ_ITERATIONS ?? 30);
const MAX_U32 = 0xffff_ffff;

/** mulberry32: small, seedable, good enough to pick mutations. */
function rng(seed: number) {
  let a = seed >>> 0;
  const next = (): number => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number): number => Math.floor(next() * n);
  return { next, int, pick: <T>(xs: readonly T[]): T => xs[int(xs.length)], chance: (p: number): boolean => next() < p };
}
type Rng = ReturnType<typeof rng>;

/** A number written verbatim (serde_json writes u64 above 2^53, and peers write anything). */
class Raw {
  constructor(readonly text: string) {}
}
/** JSON with bigints and Raw numbers written as bare numbers. */
function toJson(v: unknown): string {
  if (v instanceof Raw) return v.text;
  if (typeof v === 'bigint') return v.toString();
  if (Array.isArray(v)) return `[${v.map(toJson).join(',')}]`;
  if (v && typeof v === 'object') return `{${Object.entries(v).filter(([, x]) => x !== undefined).map(([k, x]) => `${JSON.stringify(k)}:${toJson(x)}`).join(',')}}`;
  return JSON.stringify(v) ?? 'null';
}
const hex = (id: bigint): string => id.toString(16);

interface Endpoint {
  namespace: string;
  component: string;
  endpoint: string;
}
const ep = (s: string): Endpoint => {
  const [namespace, component, endpoint] = s.split('/');
  return { namespace, component, endpoint };
};
const ENDPOINTS = ['ns/backend/generate', 'ns/prefill/generate', 'dyn-2/worker/generate'].map(ep);
const KV_STATE = ep('ns/backend/kv_state');

function randomId(r: Rng): bigint {
  return r.chance(0.5) ? BigInt(1 + r.int(1_000_000)) : (BigInt(r.int(0x7fffffff)) << 32n) | BigInt(r.int(0x7fffffff));
}

/** A valid deployment: cards, instances, adapters, event channels and event sources, as Dynamo writes them. */
function deployment(r: Rng): Map<string, string> {
  const out = new Map<string, string>();
  for (const e of ENDPOINTS.slice(0, 1 + r.int(ENDPOINTS.length))) {
    const kvState = e === ENDPOINTS[0] && r.chance(0.3) ? KV_STATE : e;
    const model = `${e.component}-model`;
    const start = r.int(4);
    for (let w = 0, n = 1 + r.int(3); w < n; w++) {
      const id = randomId(r);
      const dpSize = 1 + r.int(3);
      const card = {
        display_name: model,
        source_path: `/models/${model}`,
        kv_cache_block_size: 16,
        model_type: e.component === 'prefill' ? 'Prefill' : 'Chat | Completions',
        ...(e.component === 'prefill' ? {} : { worker_type: 'aggregated', needs: [] }),
        aliases: ['alias-a'],
        indexer_identity: { semantics: { tokenizer: 'hf' } },
        runtime_config: {
          total_kv_blocks: 1000,
          max_num_seqs: 64,
          data_parallel_size: dpSize,
          data_parallel_start_rank: start + w * 3,
          enable_local_indexer: r.chance(0.8),
          ...(kvState === e ? {} : { kv_state_endpoint: { namespace: kvState.namespace, component: kvState.component, name: kvState.endpoint } }),
        },
      };
      const base = { namespace: e.namespace, component: e.component, endpoint: e.endpoint, instance_id: id };
      out.set(`v1/mdc/${e.namespace}/${e.component}/${e.endpoint}/${hex(id)}`, toJson({ type: 'Model', ...base, card_json: card }));
      if (r.chance(0.9)) out.set(`v1/instances/${e.namespace}/${e.component}/${e.endpoint}/${hex(id)}`, toJson({ type: 'Endpoint', ...base, transport: { tcp: '10.0.0.1:9000' } }));
      if (r.chance(0.3)) {
        const lora = { ...card, display_name: `${model}-sql`, lora: { name: 'sql-lora' } };
        out.set(`v1/mdc/${e.namespace}/${e.component}/${e.endpoint}/${hex(id)}/sql`, toJson({ type: 'Model', ...base, card_json: lora, model_suffix: 'sql' }));
      }
      for (let rank = card.runtime_config.data_parallel_start_rank; rank < card.runtime_config.data_parallel_start_rank + dpSize; rank++) {
        if (r.chance(0.8)) {
          const [key, value] = eventSourceEntry(kvState, id, rank, randomId(r), { recoverable: r.chance(0.5) });
          out.set(key, value);
        }
      }
      const topic = r.pick(['kv-events', 'kv_metrics']);
      const scope = r.pick([
        { path: `namespace/${e.namespace}/component/${e.component}/endpoint/${e.endpoint}`, value: { kind: 'endpoint', endpoint: { namespace: e.namespace, component: e.component, name: e.endpoint } } },
        { path: `namespace/${e.namespace}/component/${e.component}`, value: { kind: 'component', namespace: e.namespace, component: e.component } },
        { path: `namespace/${e.namespace}`, value: { kind: 'namespace', name: e.namespace } },
      ]);
      const transport = r.pick([
        { kind: 'Zmq', config: { endpoint: `tcp://10.0.0.${w}:${5000 + r.int(1000)}` } },
        { kind: 'Nats', config: { subject_prefix: `namespace.${e.namespace}.component.${e.component}` } },
        { kind: 'ZmqBroker', config: { xpub_endpoints: [`tcp://broker:${6000 + r.int(100)}`] } },
      ]);
      out.set(`v1/event_channels/${scope.path}/topic/${topic}/${hex(id)}`, toJson({ type: 'EventChannel', scope: scope.value, topic, instance_id: id, transport }));
    }
  }
  return out;
}

const HOSTILE_NUMBERS = ['-1', '0', '1.5', '-0', '1e308', '4096', '4097', '4294967295', '4294967296', '9007199254740991', '9007199254740992', '9007199254740993', '18446744073709551615', '18446744073709551616', '340282366920938463463374607431768211456', '1e-7', '3.0'];
const hostileNumber = (r: Rng): Raw => new Raw(r.pick(HOSTILE_NUMBERS));
function hostileValue(r: Rng, bytesLeft: number): unknown {
  switch (r.int(9)) {
    case 0: return hostileNumber(r);
    case 1: return 'x'.repeat(r.int(Math.min(bytesLeft, 200_000)));
    case 2: return r.chance(0.5);
    case 3: return null;
    case 4: return [];
    case 5: return {};
    case 6: return '\u0000\ud83d\ude00%2F/..';
    case 7: return Array.from({ length: r.int(50) }, () => hostileNumber(r));
    default: return { kind: 'endpoint', name: 'x', namespace: 'ns', component: 'backend', endpoint: { namespace: 'ns', component: 'backend', name: 'generate' } };
  }
}

/** Every (container, field) in a parsed value, to mutate one. */
function slots(v: unknown, out: [Record<string, unknown> | unknown[], string | number][] = []): typeof out {
  if (Array.isArray(v)) v.forEach((x, i) => (out.push([v, i]), slots(x, out)));
  else if (v && typeof v === 'object' && !(v instanceof Raw)) for (const [k, x] of Object.entries(v)) (out.push([v as Record<string, unknown>, k]), slots(x, out));
  return out;
}

/** Parses with big integers kept as Raw, so a mutated value is written back exactly. */
function parseKeeping(text: string): any {
  // A value an earlier mutation made unparseable (or too deep for JSON.parse) is mutated no further.
  if (text.length > 200_000) return undefined;
  try {
    return JSON.parse(text.replace(/(?<=[:,[]\s*)(-?\d{16,})(?=\s*[,}\]])/g, '"@raw@$1"'), (_k, x) => (typeof x === 'string' && x.startsWith('@raw@') ? new Raw(x.slice(5)) : x));
  } catch {
    return undefined;
  }
}

const mutations: ((m: Map<string, string>, r: Rng) => void)[] = [
  // A field of a value set to another type, a hostile number, a long string, or removed.
  (m, r) => {
    const key = r.pick([...m.keys()]);
    const v = parseKeeping(m.get(key)!);
    const all = slots(v);
    if (all.length === 0) return;
    const [container, field] = r.pick(all);
    if (r.chance(0.2) && !Array.isArray(container)) delete container[field as string];
    else (container as Record<string | number, unknown>)[field] = hostileValue(r, 1_000_000);
    m.set(key, toJson(v));
  },
  // The numbers the projection walks set to hostile ones (dp ranks and sizes above all).
  (m, r) => {
    const key = r.pick([...m.keys()].filter((k) => k.startsWith('v1/mdc/') || k.startsWith('v1/event_sources/')));
    if (!key) return;
    const v = parseKeeping(m.get(key)!);
    const rc = v?.card_json?.runtime_config;
    if (rc) rc[r.pick(['data_parallel_size', 'data_parallel_start_rank', 'total_kv_blocks', 'max_num_seqs'])] = hostileNumber(r);
    else if (v?.metadata?.worker) v.metadata.worker[r.pick(['dp_rank', 'worker_id'])] = hostileNumber(r);
    m.set(key, toJson(v));
  },
  // Extra fields: small, deep, or huge up to (and just past) the value bound.
  (m, r) => {
    const key = r.pick([...m.keys()]);
    const text = m.get(key)!;
    const extra = r.pick([
      () => '{"future":1}',
      () => `${'['.repeat(20_000)}${']'.repeat(20_000)}`,
      () => `"${'y'.repeat(1_048_576 - text.length - 20 + r.int(40))}"`,
      () => `[${Array.from({ length: 60_000 }, (_, i) => i).join(',')}]`,
    ])();
    m.set(key, `${text.slice(0, -1)},"extra_${r.int(3)}":${extra}}`);
  },
  // Not JSON at all.
  (m, r) => m.set(r.pick([...m.keys()]), r.pick(['', 'null', '[]', '{', '"Model"', '\u0000\u00ff', '{"type":"Model"}', '1'.repeat(5000)])),
  // A card duplicated onto another instance, disagreeing on what an endpoint must agree on.
  (m, r) => {
    const key = r.pick([...m.keys()].filter((k) => k.startsWith('v1/mdc/')));
    if (!key) return;
    const v = parseKeeping(m.get(key)!);
    if (!v?.card_json) return;
    const id = randomId(r);
    v.instance_id = id;
    const c = v.card_json;
    r.pick([
      () => (c.display_name = 'other'),
      () => (c.kv_cache_block_size = 32),
      () => (c.worker_type = 'decode'),
      () => (c.runtime_config = { ...c.runtime_config, kv_state_endpoint: { namespace: 'ns', component: 'elsewhere', name: 'kv' } }),
      () => (c.runtime_config = { ...c.runtime_config, data_parallel_size: 4096, data_parallel_start_rank: 0 }),
      () => (c.lora = { name: 'l' }),
      () => undefined,
    ])();
    m.set(key.replace(/[0-9a-f]+(\/[^/]+)?$/, `${hex(id)}$1`), toJson(v));
  },
  // Event sources for absent workers and ranks, or a publisher advertised twice.
  (m, r) => {
    const e = r.pick([...ENDPOINTS, KV_STATE]);
    const workers = [...m.keys()].map((k) => k.split('/')).filter((p) => p[1] === 'mdc' && /^[0-9a-f]{1,16}$/.test(p[5] ?? '')).map((p) => BigInt(`0x${p[5]}`));
    const worker = workers.length > 0 && r.chance(0.6) ? r.pick(workers) : randomId(r);
    const publisher = r.chance(0.2) ? 1n : randomId(r);
    const [key, value] = eventSourceEntry(e, worker, r.pick([0, 1, 7, 4095, 65_536, MAX_U32]), publisher, { recoverable: r.chance(0.5) });
    m.set(key, value);
  },
  // Keys rewritten: ids in upper case, zero-padded, 0x-prefixed, too wide; segments percent-encoded
  // (validly or not), empty, very long; buckets and depths Dynamo does not write.
  (m, r) => {
    const key = r.pick([...m.keys()]);
    const text = m.get(key)!;
    const parts = key.split('/');
    const last = parts.length - 1;
    r.pick([
      () => (parts[last] = parts[last].toUpperCase()),
      () => (parts[last] = `0${parts[last]}`),
      () => (parts[last] = `0x${parts[last]}`),
      () => (parts[last] = 'f'.repeat(17)),
      () => (parts[2] = encodeURIComponent(parts[2]).replace(/[a-z]/, (ch) => `%${ch.charCodeAt(0).toString(16)}`)),
      () => (parts[2] = `${parts[2]}%2F${parts[2]}`),
      () => (parts[r.int(parts.length)] = r.pick(['%', '%ZZ', '%E0%A4%A', ''])),
      () => (parts[1 + r.int(last)] = 'k'.repeat(100_000)),
      () => parts.splice(2, 0, 'extra'),
      () => parts.splice(2, 1),
      () => (parts[1] = r.pick(['mdc', 'instances', 'event_sources', 'event_channels', 'other'])),
    ])();
    m.delete(key);
    m.set(parts.join('/'), text);
  },
  // A value's type tag swapped for another DiscoveryInstance's.
  (m, r) => {
    const key = r.pick([...m.keys()]);
    m.set(key, m.get(key)!.replace(/"type":"[A-Za-z]+"/, `"type":"${r.pick(['Model', 'Endpoint', 'EventChannel', 'EventSource', 'model', ''])}"`));
  },
  // Many entries: a crowd of cards, instances and sources on one endpoint.
  (m, r) => {
    const e = r.pick(ENDPOINTS);
    for (let i = 0, n = 50 + r.int(250); i < n; i++) {
      const id = BigInt(1_000_000 + i);
      const c = { display_name: `${e.component}-model`, kv_cache_block_size: 16, runtime_config: { data_parallel_size: 1 + r.int(8), data_parallel_start_rank: r.int(8) } };
      m.set(`v1/mdc/${e.namespace}/${e.component}/${e.endpoint}/${hex(id)}`, toJson({ type: 'Model', ...e, instance_id: id, card_json: c }));
      if (r.chance(0.5)) m.set(`v1/instances/${e.namespace}/${e.component}/${e.endpoint}/${hex(id)}`, toJson({ type: 'Endpoint', ...e, instance_id: id }));
      if (r.chance(0.3)) {
        const [key, value] = eventSourceEntry(e, id, r.int(8), BigInt(i + 1), {});
        m.set(key, value);
      }
    }
  },
  // An entry removed.
  (m, r) => m.delete(r.pick([...m.keys()])),
];

function mutate(m: Map<string, string>, r: Rng): void {
  for (let i = 0, n = 1 + r.int(6); i < n && m.size > 0; i++) r.pick(mutations)(m, r);
}

/** A projection as plain, comparable data (bigints as text, Maps as sorted entries). */
function canonical(p: DynamoProjection): string {
  return JSON.stringify(p, (_k, v) => {
    if (typeof v === 'bigint') return `${v}n`;
    if (v instanceof Map) return [...v].map(([k, x]) => [typeof k === 'bigint' ? `${k}n` : k, x]).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    if (v instanceof Set) return [...v].sort();
    return v;
  });
}

function shuffled<K, V>(m: Map<K, V>, r: Rng): Map<K, V> {
  const xs = [...m];
  for (let i = xs.length - 1; i > 0; i--) {
    const j = r.int(i + 1);
    [xs[i], xs[j]] = [xs[j], xs[i]];
  }
  return new Map(xs);
}

const bucketOf = (key: string): string => key.split('/')[1];
const READ_BUCKETS = new Set(['instances', 'mdc', 'event_channels', 'event_sources']);

/** What must hold of the projection of any entries. */
function check(m: Map<string, string>, p: DynamoProjection, namespaces: readonly string[] | undefined): void {
  const keys = new Set(m.keys());
  const cards = [...keys].filter((k) => bucketOf(k) === 'mdc').length;
  const sourceEntries = [...keys].filter((k) => bucketOf(k) === 'event_sources').length;
  const inputBytes = [...m].reduce((n, [k, v]) => n + k.length + v.length, 0);

  // Every report names an input entry, with a reason.
  for (const { key, problem } of [...p.rejected, ...p.invalidSources]) {
    expect(keys.has(key)).toBe(true);
    expect(problem.length).toBeGreaterThan(0);
  }
  expect(new Set(p.rejected.map((r) => r.key)).size).toBe(p.rejected.length);
  for (const c of p.conflicts) expect(c).toMatch(/\S: \S/);
  const reported = new Set([...p.rejected, ...p.invalidSources].map((r) => r.key));
  const conflictText = p.conflicts.join('\n');

  // Every entry read is used or reported.
  const projectedWorkers = new Set(p.endpoints.flatMap((e) => e.workers.map((w) => String(w.id))));
  const adapterWorkers = new Set(p.endpoints.flatMap((e) => e.adapters.flatMap((a) => (a.workers ?? []).map(String))));
  const publishers = new Set([...p.eventSources.values()].flatMap((s) => s.ranks.flatMap((r) => r.publishers.map(String))));
  const channels = new Set(Object.values(p.channels).flat());
  const served = (ns: string): boolean => !namespaces || namespaces.includes(ns);
  for (const [key, text] of m) {
    if (!key.startsWith(DYNAMO_PREFIX) || !READ_BUCKETS.has(bucketOf(key)) || reported.has(key)) continue;
    const parsed = parseDynamoKey(key.slice(DYNAMO_PREFIX.length));
    const shown = key.slice(0, 200);
    if (!parsed) {
      const parts = key.split('/');
      const ns = bucketOf(key) === 'instances' || bucketOf(key) === 'mdc' ? parts[2] : parts[2] === 'namespace' ? decodeURIComponentOr(parts[3] ?? '') : undefined;
      if (ns === undefined || served(ns)) throw new Error(`${shown}: a key outside the layout, not reported`);
    } else if (parsed.kind === 'card') {
      if (!served(parsed.path.namespace)) continue;
      const id = parsed.instanceId.toString();
      const used = parsed.suffix === undefined ? projectedWorkers.has(id) : adapterWorkers.has(id);
      if (!used && !conflictText.includes(endpointName(parsed.path))) throw new Error(`card ${shown} is neither used nor reported`);
    } else if (parsed.kind === 'eventSource' && /^kv[-_]events$/.test(parsed.topic)) {
      if (parsed.scope && !served(parsed.scope.namespace)) continue;
      if (!publishers.has(parsed.publisherId.toString())) throw new Error(`event source ${shown} is neither used nor reported`);
    } else if (parsed.kind === 'eventChannel' && /^(kv-events|kv_metrics)$/.test(parsed.topic)) {
      const v = JSON.parse(text);
      if (!served(v.scope.namespace ?? v.scope.name ?? v.scope.endpoint?.namespace)) continue;
      const t = v.transport.config;
      const targets: string[] = t.endpoint ? [t.endpoint] : t.xpub_endpoints ?? [`${t.subject_prefix}.${parsed.topic}`];
      for (const target of targets) if (!channels.has(target)) throw new Error(`event channel ${shown} is neither used nor reported`);
    }
  }

  // Bounded by the input: entries, bytes and fixed limits, never a number read from a value.
  const ranks = [...p.eventSources.values()].flatMap((s) => s.ranks);
  expect(ranks.length).toBeLessThanOrEqual(sourceEntries + MAX_DP_SIZE * cards);
  for (const r of ranks) expect(Number.isInteger(r.dpRank) && r.dpRank >= 0 && r.dpRank <= MAX_U32).toBe(true);
  for (const w of p.workers.values()) {
    expect(w.dpSize).toBeLessThanOrEqual(MAX_DP_SIZE);
    expect(w.dpStartRank + Math.max(w.dpSize, 1) - 1).toBeLessThanOrEqual(MAX_U32);
  }
  expect(p.workers.size).toBeLessThanOrEqual(cards);
  expect(p.endpoints.reduce((n, e) => n + e.workers.length, 0)).toBeLessThanOrEqual(cards);
  expect(Object.values(p.channels).flat().length).toBeLessThanOrEqual(m.size * 3);
  expect(p.rejected.length + p.invalidSources.length + p.conflicts.length).toBeLessThanOrEqual(m.size * 2);
  // Beyond the carded ranks (up to MAX_DP_SIZE per card, a few bytes each), the output is no larger than its input.
  expect(canonical(p).length).toBeLessThanOrEqual(4 * inputBytes + 200 * (ranks.length + m.size) + 10_000);
}

function decodeURIComponentOr(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

describe.each(SEEDS)('seed %i', (seed) => {
  test('projectDynamo never throws, accounts for every entry, ignores entry order and stays bounded by its input', () => {
    const r = rng(seed);
    // Kept across iterations as the relay keeps it across passes: many keys recur with other texts.
    const memo: ParseMemo = new Map();
    for (let i = 0; i < ITERATIONS; i++) {
      const m = deployment(r);
      mutate(m, r);
      const namespaces = r.chance(0.3) ? ['ns'] : undefined;
      let p: DynamoProjection;
      try {
        p = projectDynamo(m, namespaces);
        check(m, p, namespaces);
        expect(canonical(projectDynamo(shuffled(m, r), namespaces))).toBe(canonical(p));
        expect(canonical(projectDynamo(m, namespaces, undefined, memo))).toBe(canonical(p));
        expect([...memo.keys()].every((k) => m.has(k))).toBe(true);
      } catch (err) {
        throw new Error(`seed ${seed}, iteration ${i}: ${(err as Error).message}\n${m.size} entries (rerun with DYNAMO_FUZZ_SEEDS=${seed} and print them)`);
      }
    }
  });
});
