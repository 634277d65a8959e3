import type { CatalogPool } from '../../src/client/catalog-plane';
import { buildNameIndex, resolveName } from '../../src/client/name-index';
import { poolKey, producerKey } from '../../src/wire/producer-key';
import type { ModelRegistration } from '../../src/wire/types';
import { baseRegistration, descriptor, loraRegistration } from './fixtures';

function pool(dc: bigint, registrations: ModelRegistration[]): CatalogPool {
  const d = descriptor(dc, registrations);
  return { poolKey: poolKey(d.producer!.poolId!), producerKey: producerKey(d.producer!), descriptor: d };
}

describe('name index (consumer.md §2.2)', () => {
  const llamaA = pool(1n, [baseRegistration('llama', ['chat']), loraRegistration('llama-tenant', 'llama', 'tenant-a')]);
  const llamaB = pool(2n, [baseRegistration('llama', ['chat'])]);
  const qwen = pool(3n, [baseRegistration('qwen', ['chat', 'q'])]);

  it.each([
    ['llama', [llamaA, llamaB], 'resolved', [1n, 2n]],
    ['chat', [llamaA, llamaB], 'resolved', [1n, 2n]], // the same binding repeated across pools is fine
    ['chat', [llamaA, qwen], 'ambiguous', []], // two distinct bindings: omitted, fail closed
    ['q', [llamaA, qwen], 'resolved', [3n]],
    ['llama-tenant', [llamaA, llamaB], 'resolved', [1n]],
    ['tenant-a', [llamaA], 'unknown', []], // the adapter name is a salt, not a lookup name
    ['mistral', [llamaA, qwen], 'unknown', []],
  ])('%s over %#', (name, pools, kind, dcs) => {
    const r = resolveName(buildNameIndex(pools as CatalogPool[]), name as string);
    expect(r.kind).toBe(kind);
    if (r.kind === 'resolved') expect(r.pools.map((p) => p.pool.descriptor.producer!.poolId!.dcId)).toEqual(dcs);
  });

  it('keeps the LoRA adapter as the binding salt and separates it from a base binding of the same name', () => {
    const r = resolveName(buildNameIndex([llamaA]), 'llama-tenant');
    expect(r).toMatchObject({ kind: 'resolved', binding: { canonicalModelId: 'llama-tenant', baseModel: 'llama', adapter: 'tenant-a' } });
    const clash = pool(4n, [baseRegistration('llama-tenant')]);
    expect(resolveName(buildNameIndex([llamaA, clash]), 'llama-tenant').kind).toBe('ambiguous');
  });
});
