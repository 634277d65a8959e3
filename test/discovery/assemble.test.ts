// Assembling the deployment from discovery entries: each value is validated alone, a bad one is
// rejected with its key and problem, everything else is kept, and the result is in key order.
import { assembleEndpoints, ValueCache } from '../../src/discovery/assemble';
import { parseKey } from '../../src/discovery/keys';

const ep = (component: string, extra: Record<string, unknown> = {}): string =>
  JSON.stringify({ namespace: 'prod', component, endpoint: 'generate', model: { name: `m-${component}`, kvBlockSize: 16 }, ...extra });
const worker = (id: number, extra: Record<string, unknown> = {}): string =>
  JSON.stringify({ id, kvEvents: { endpoint: `tcp://127.0.0.1:${5000 + id}` }, ...extra });

function assemble(entries: Record<string, string>) {
  return assembleEndpoints(new Map(Object.entries(entries)));
}

test('endpoints get their registered workers after their own, by id, in key order', () => {
  const a = assemble({
    'endpoints/prod/b/generate': ep('b'),
    'endpoints/prod/a/generate': ep('a', { workers: [{ id: 1 }] }),
    'workers/prod/a/generate/12': worker(12),
    'workers/prod/a/generate/3': worker(3),
    'workers/prod/b/generate/4': worker(4),
  });
  expect(a.rejected).toEqual([]);
  expect(a.endpoints.map((e) => [e.component, e.workers.map((w) => Number(w.id))])).toEqual([
    ['a', [1, 3, 12]],
    ['b', [4]],
  ]);
});

test.each([
  ['invalid JSON', 'workers/prod/a/generate/5', '{"id":5', /invalid JSON/],
  ['a schema violation names the field', 'workers/prod/a/generate/5', '{"id":5,"dpSize":0}', /^dpSize: /],
  ['an unknown field', 'endpoints/prod/c/generate', ep('c', { extra: 1 }), /^extra: unknown field$/],
  ['a misspelt field', 'endpoints/prod/c/generate', ep('c', { adapter: [] }), /^adapter: unknown field \(did you mean adapters\?\)$/],
  ['a worker id other than its key', 'workers/prod/a/generate/6', worker(7), /has id 7/],
  ['an endpoint other than its key', 'endpoints/prod/d/generate', ep('e'), /names prod\/e\/generate/],
  ['a worker id used twice', 'workers/prod/b/generate/3', worker(3), /worker id 3 is also in prod\/a\/generate/],
  ['an oversized value', 'workers/prod/a/generate/8', JSON.stringify({ id: 8, pad: 'x'.repeat(70_000) }), /larger than/],
])('%s is rejected alone', (_what, key, value, problem) => {
  const a = assemble({
    'endpoints/prod/a/generate': ep('a'),
    'endpoints/prod/b/generate': ep('b'),
    'workers/prod/a/generate/3': worker(3),
    [key]: value,
  });
  expect(a.rejected).toHaveLength(1);
  expect(a.rejected[0].key).toBe(key);
  expect(a.rejected[0].problem).toMatch(problem);
  expect(a.endpoints.map((e) => e.component)).toEqual(['a', 'b']);
  expect(a.endpoints[0].workers.map((w) => Number(w.id))).toEqual([3]);
});

test('a worker waits for its endpoint entry; keys outside the layout are ignored', () => {
  const a = assemble({ 'workers/prod/x/generate/1': worker(1), 'shards/abc': '{}', 'owners/p': 'abc:1', stray: 'x' });
  expect(a.endpoints).toEqual([]);
  expect(a.rejected).toEqual([]);
  expect(a.waiting).toEqual(['workers/prod/x/generate/1']);
});

test('an unchanged value is validated once (the cache), a changed one again', () => {
  const cache = new ValueCache();
  const entries = new Map([['endpoints/prod/a/generate', ep('a')]]);
  const first = assembleEndpoints(entries, cache).endpoints[0];
  expect(assembleEndpoints(entries, cache).endpoints[0].model).toBe(first.model);
  entries.set('endpoints/prod/a/generate', ep('a', { workerType: 'decode' }));
  expect(assembleEndpoints(entries, cache).endpoints[0].workerType).toBe('decode');
});

test('key segments are URI-encoded, so a name with a slash stays one segment', () => {
  expect(parseKey('endpoints/ns%2Fx/c/e')).toEqual({ kind: 'endpoint', triple: { namespace: 'ns/x', component: 'c', endpoint: 'e' } });
  expect(parseKey('endpoints/ns/c')).toBeUndefined();
  expect(parseKey('workers/ns/c/e/%ZZ')).toBeUndefined();
});
