import * as fs from 'fs';
import * as path from 'path';
import { parseConfigText } from '../../src/config/load';
import type { EndpointConfig } from '../../src/config/schema';
import { buildDeployment } from '../../src/producer/deployment';
import { diffDeployments } from '../../src/producer/diff';
import { poolIdDisplay } from '../../src/identity';
import { poolIdOf } from '../../src/producer/pool-identity';
import { normalizeAliases } from '../../src/producer/registrations';
import { IdentitySource, KvQueryHashFormat, WorkerRole } from '../../src/wire/enums';

const VECTORS = path.resolve(__dirname, '..', '..', '..', 'shared', 'vectors');
const identity = JSON.parse(fs.readFileSync(path.join(VECTORS, 'identity.json'), 'utf8'));

function endpoints(list: object[]): EndpointConfig[] {
  return parseConfigText(JSON.stringify({ dcId: 'dc-a', endpoints: list }), 'test.json').endpoints;
}

const kv = { endpoint: 'tcp://127.0.0.1:5557' };
const base = {
  namespace: 'prod',
  component: 'backend',
  endpoint: 'generate',
  model: { name: 'llama', kvBlockSize: 16 },
  workers: [{ id: 7, kvEvents: kv }],
};

describe('pool identity of a configured endpoint equals identity.json', () => {
  test.each<[string, any]>(identity.cards.map((c: { name: string }) => [c.name, c]))('%s', (_name, card) => {
    const [ep] = endpoints([
      {
        namespace: card.endpoint.namespace,
        component: card.endpoint.component,
        endpoint: card.endpoint.name,
        model: {
          name: card.card.display_name,
          ...(card.card.source_path === null ? {} : { sourcePath: card.card.source_path }),
          kvBlockSize: card.card.kv_cache_block_size,
          hashFormat: card.card.enable_eagle ? 'eagle' : 'standard',
        },
        ...(card.card.indexer_identity
          ? {
              indexerIdentity: {
                ...(card.card.indexer_identity.semantics ? { semantics: card.card.indexer_identity.semantics } : {}),
                ...(card.card.indexer_identity.routing_scope ? { routingScope: card.card.indexer_identity.routing_scope } : {}),
              },
            }
          : {}),
        workers: [{ id: 1, kvEvents: kv }],
      },
    ]);
    const id = poolIdOf(ep, 'dc-a');
    const source = (s: string) => (s === 'Explicit' ? IdentitySource.EXPLICIT : IdentitySource.DEFAULT_DERIVED);
    expect(id.identityVersion).toBe(1);
    expect(Buffer.from(id.indexerDomain!.cacheSemantics!.digest).toString('hex')).toBe(card.expected.cache_semantics.digest);
    expect(id.indexerDomain!.cacheSemantics!.source).toBe(source(card.expected.cache_semantics.source));
    expect(Buffer.from(id.indexerDomain!.routingScope!.digest).toString('hex')).toBe(card.expected.routing_scope.digest);
    expect(id.indexerDomain!.routingScope!.source).toBe(source(card.expected.routing_scope.source));
    const dcA = identity.stable_dc_id.find((d: { input: string }) => d.input === 'dc-a');
    expect(id.dcId).toBe(BigInt(dcA.dc_id));
    expect(poolIdDisplay(id)).toBe(`${card.expected.indexer_domain}/${dcA.dc_id_hex}`);
  });
});

describe('materialization', () => {
  test('a pool per endpoint with kvEvents; descriptor fields', () => {
    const d = buildDeployment(
      'dc-a',
      endpoints([
        {
          ...base,
          model: { name: 'llama', sourcePath: 'meta/llama', kvBlockSize: 16, hashFormat: 'eagle', aliases: ['zeta', 'chat', 'llama', 'chat'] },
          workerType: 'decode',
          adapters: [{ name: 'tenant-a-lora', servedModel: 'llama-tenant-a', workers: [7] }],
        },
        { ...base, endpoint: 'static', workers: [{ id: 8 }] },
        { ...base, endpoint: 'zero', model: { name: 'other', kvBlockSize: 0 }, workers: [{ id: 9, kvEvents: kv }] },
      ]),
    );
    expect(d.pools).toHaveLength(1);
    const [p] = d.pools;
    expect(p.servingEndpoint).toEqual({ namespace: 'prod', component: 'backend', endpoint: 'generate' });
    expect(p.querySemantics).toEqual({ kvBlockSize: 16, hashFormat: KvQueryHashFormat.DYNAMO_EAGLE_V1 });
    expect(p.poolRoles).toEqual([WorkerRole.DECODE]);
    expect(p.registrations).toEqual([
      { canonicalModelId: 'llama', target: { base: { baseModel: 'llama' } }, aliases: ['chat', 'zeta'] },
      { canonicalModelId: 'llama-tenant-a', target: { lora: { baseModel: 'llama', adapter: 'tenant-a-lora' } }, aliases: [] },
    ]);
    // Every endpoint with a valid base registration is in topology; only the first has a pool link.
    expect(d.topology.map((t) => [t.endpoint.endpoint, t.poolKey])).toEqual([
      ['generate', p.key],
      ['static', undefined],
      ['zero', undefined],
    ]);
    expect(d.topology[0].adapters).toEqual([{ servedModel: 'llama-tenant-a', workers: [7n] }]);
    expect(d.conflicts).toEqual(['prod/backend/zero: not materialized: kvBlockSize is 0']);
  });

  test('an adapter without workers is served by every worker of the endpoint', () => {
    const d = buildDeployment('dc-a', endpoints([{ ...base, workers: [{ id: 7, kvEvents: kv }, { id: 8 }], adapters: [{ name: 'l', servedModel: 'm-l' }] }]));
    expect(d.topology[0].adapters).toEqual([{ servedModel: 'm-l', workers: [7n, 8n] }]);
  });

  test('legacy endpoints declare the LEGACY role', () => {
    const d = buildDeployment('dc-a', endpoints([base]));
    expect(d.pools[0].poolRoles).toEqual([WorkerRole.LEGACY]);
  });

  test('an endpoint whose workers declare their own worker types declares each role once, sorted', () => {
    const d = buildDeployment('dc-a', endpoints([{ ...base, workerType: 'decode', needs: [['prefill']], workers: [
      { id: 7, kvEvents: kv }, { id: 8, workerType: 'prefill' }, { id: 9, workerType: 'prefill', needs: [['decode']] },
    ] }]));
    expect(d.pools[0].poolRoles).toEqual([WorkerRole.PREFILL, WorkerRole.DECODE]);
  });

  test('aliases: self dropped, sorted by UTF-8 bytes, deduplicated', () => {
    expect(normalizeAliases('m', ['m', 'b', 'a', 'b', '\u{1F600}', '\uFFFD'])).toEqual(['a', 'b', '\uFFFD', '\u{1F600}']);
  });

  test('pools are sorted by pool id', () => {
    const names = ['a', 'b', 'c', 'd', 'e', 'f'];
    const d = buildDeployment('dc-a', endpoints(names.map((n, i) => ({ ...base, endpoint: n, workers: [{ id: i, kvEvents: kv }] }))));
    const keys = d.pools.map((p) => p.key);
    expect(keys).toEqual([...keys].sort());
    expect(keys).toHaveLength(6);
  });

  test('a name that resolves to two targets is dropped everywhere; the same target twice is fine', () => {
    const d = buildDeployment(
      'dc-a',
      endpoints([
        { ...base, endpoint: 'p', model: { name: 'llama', kvBlockSize: 16, aliases: ['chat'] }, workerType: 'prefill', workers: [{ id: 1, kvEvents: kv }] },
        { ...base, endpoint: 'd', model: { name: 'llama', kvBlockSize: 16 }, workerType: 'decode', workers: [{ id: 2, kvEvents: kv }] },
        { ...base, endpoint: 'm', model: { name: 'mistral', kvBlockSize: 16, aliases: ['chat'] }, workers: [{ id: 3, kvEvents: kv }] },
      ]),
    );
    expect(d.pools.map((p) => p.registrations.map((r) => [r.canonicalModelId, r.aliases]))).toEqual(
      expect.arrayContaining([[['llama', []]], [['mistral', []]]]),
    );
    expect(d.pools).toHaveLength(3);
    expect(d.conflicts).toEqual(['model name chat resolves to more than one target; dropped everywhere']);
  });

  test('conflicting registrations inside a pool fail closed; colliding names are filtered first', () => {
    const d = buildDeployment(
      'dc-a',
      endpoints([
        { ...base, adapters: [{ name: 'x', servedModel: 'llama', workers: [] }] },
        { ...base, endpoint: 'e2', model: { name: 'm2', kvBlockSize: 16, aliases: ['m2-lora'] }, adapters: [{ name: 'y', servedModel: 'm2-lora' }], workers: [{ id: 2, kvEvents: kv }] },
        { ...base, endpoint: 'e3', model: { name: 'm3', kvBlockSize: 16 }, adapters: [{ name: 'z', servedModel: 's' }, { name: 'z', servedModel: 's' }], workers: [{ id: 3, kvEvents: kv }] },
      ]),
    );
    expect(d.pools.map((p) => [p.endpoint.endpoint, p.registrations.map((r) => [r.canonicalModelId, r.aliases])])).toEqual([['e2', [['m2', []]]]]);
    expect(d.conflicts).toEqual([
      'model name llama resolves to more than one target; dropped everywhere',
      'model name m2-lora resolves to more than one target; dropped everywhere',
      'prod/backend/generate: not materialized: no model registrations',
      'prod/backend/e3: not materialized: duplicate canonical model registration s',
    ]);
    // The endpoint whose base model was dropped takes no part in topology.
    expect(d.topology.map((t) => t.endpoint.endpoint)).toEqual(['e2', 'e3']);
  });

  test('two endpoints resolving to one pool id are both fenced', () => {
    const shared = { semantics: { weights: 'a' }, routingScope: { authority: 'shared' } };
    const d = buildDeployment(
      'dc-a',
      endpoints([
        { ...base, endpoint: 'a', indexerIdentity: shared, workers: [{ id: 1, kvEvents: kv }] },
        { ...base, endpoint: 'b', model: { name: 'other', kvBlockSize: 16 }, indexerIdentity: shared, workers: [{ id: 2, kvEvents: kv }] },
      ]),
    );
    expect(d.pools).toEqual([]);
    expect(d.conflicts).toHaveLength(2);
    expect(d.conflicts[0]).toMatch(/^prod\/backend\/a: not materialized: pool .* is claimed by multiple serving endpoints$/);
  });
});

describe('deployment diff', () => {
  const d0 = buildDeployment('dc-a', endpoints([base, { ...base, endpoint: 'two', workers: [{ id: 2, kvEvents: kv }] }]));

  test('identical deployments: no change', () => {
    const again = buildDeployment('dc-a', endpoints([base, { ...base, endpoint: 'two', workers: [{ id: 2, kvEvents: kv }] }]));
    expect(diffDeployments(d0, again)).toEqual({ added: [], removed: [], updated: [] });
  });

  test('metadata (aliases, workers) updates in place', () => {
    const d1 = buildDeployment(
      'dc-a',
      endpoints([
        { ...base, model: { name: 'llama', kvBlockSize: 16, aliases: ['chat'] } },
        { ...base, endpoint: 'two', workers: [{ id: 2, kvEvents: kv }, { id: 3 }] },
      ]),
    );
    const diff = diffDeployments(d0, d1);
    expect(diff.added).toEqual([]);
    expect(diff.removed).toEqual([]);
    expect(diff.updated.map((p) => p.key).sort()).toEqual(d0.pools.map((p) => p.key).sort());
  });

  test.each([
    ['block size', { model: { name: 'llama', kvBlockSize: 32 } }],
    ['hash format', { model: { name: 'llama', kvBlockSize: 16, hashFormat: 'eagle' } }],
    ['source path', { model: { name: 'llama', kvBlockSize: 16, sourcePath: 'meta/llama' } }],
    ['endpoint triple', { component: 'backend2' }],
    ['explicit identity', { indexerIdentity: { semantics: { w: '1' } } }],
  ])('identity material (%s) withdraws the old pool and adds a new one', (_n, patch) => {
    const d1 = buildDeployment('dc-a', endpoints([{ ...base, ...patch }, { ...base, endpoint: 'two', workers: [{ id: 2, kvEvents: kv }] }]));
    const diff = diffDeployments(d0, d1);
    expect(diff.added).toHaveLength(1);
    expect(diff.removed).toHaveLength(1);
    expect(diff.removed[0].endpoint.endpoint).toBe('generate');
    expect(diff.updated).toEqual([]);
  });
});
