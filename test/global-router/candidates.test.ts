// From one DC's query() answer to eligible pools: readiness gates, load fields and skip reasons.
import { dcCandidates, type DcInput } from '../../examples/global-router/router';
import type { PoolQueryResult, QueryResult } from '../../src/client';

function pool(key: string, over: Partial<PoolQueryResult> = {}): PoolQueryResult {
  return {
    poolKey: key,
    producerKey: `${key}/gen1`,
    endpoint: `prod.${key}.generate`,
    canonicalModelId: 'llama',
    kvBlockSize: 16,
    hashFormat: 'standard',
    queryBlocks: 4,
    replica: 'ready',
    matchedBlocks: 2,
    matchedTokens: 32,
    replicaSequence: 7n,
    readiness: 'READY',
    load: null,
    servingLoad: null,
    ...over,
  };
}

const WORK = { inflight: 3, awaitingFirstToken: 2, pendingPrefillTokens: 900, pendingPrefills: [400, 500], activeBlocks: 40 };

const binding = { canonicalModelId: 'llama', baseModel: 'llama', adapter: undefined } as never;

function input(result: QueryResult, over: Partial<DcInput> = {}): DcInput {
  return {
    dc: 'dc-x',
    connected: true,
    hasReadiness: true,
    result,
    promptTokens: 70,
    prefix: true,
    rttMs: 12,
    work: () => WORK,
    lastResort: () => false,
    defaultCapacity: 64,
    ...over,
  };
}

describe('dcCandidates', () => {
  it('keeps READY pools with their depth, this router\'s work there, the round trip and default capacity', () => {
    const out = dcCandidates(input({ kind: 'ok', binding, pools: [pool('a'), pool('b', { readiness: 'UNAVAILABLE' }), pool('c', { readiness: null })] }));
    expect(out.candidates).toEqual([
      { dc: 'dc-x', poolKey: 'a', endpoint: 'prod.a.generate', promptTokens: 70, matchedTokens: 32, blockSize: 16, ranks: null, capacity: 64, kvUsage: null, rttMs: 12, ...WORK, lastResort: false },
    ]);
    expect(out.skipped).toEqual([
      { dc: 'dc-x', poolKey: 'b', reason: 'readiness UNAVAILABLE' },
      { dc: 'dc-x', poolKey: 'c', reason: 'readiness missing' },
    ]);
  });

  it('takes capacity from the relay max_concurrency and KV usage only from a complete window', () => {
    const producer = undefined;
    const complete = { producer, kvUsedBlocks: 30n, totalKvBlocks: 120n, kvObservedRanks: 2, kvExpectedRanks: 2 };
    const partial = { ...complete, kvUsedBlocks: 0n, kvObservedRanks: 1 };
    const serving = { deployment: { liveWorkers: 2n, maxConcurrency: 16n } };
    const out = dcCandidates(input({ kind: 'ok', binding, pools: [pool('a', { load: complete, servingLoad: serving }), pool('b', { load: partial, servingLoad: { deployment: { maxConcurrency: 0n } } })] }));
    expect(out.candidates.map((c) => [c.capacity, c.kvUsage, c.ranks])).toEqual([
      [16, 0.25, 2],
      [64, null, 2], // the relay expects two ranks even while one has not reported
    ]);
  });

  it('reports depth as unknown when the policy did not ask for it, and marks held pools', () => {
    const out = dcCandidates(input({ kind: 'ok', binding, pools: [pool('a')] }, { prefix: false, lastResort: (k) => (k === 'a' ? 'failing' : false) }));
    expect(out.candidates[0]).toMatchObject({ matchedTokens: null, lastResort: 'failing' });
  });

  it.each([
    [{ connected: false }, { kind: 'ok', binding, pools: [pool('a')] }, 'relayUnreachable'],
    [{}, { kind: 'noCatalog' }, 'noCatalog'],
    [{}, { kind: 'unknownModel' }, 'unknownModel'],
    [{}, { kind: 'ambiguousModel', bindings: [] }, 'ambiguousModel'],
    [{ hasReadiness: false }, { kind: 'ok', binding, pools: [pool('a')] }, 'noReadiness'],
    [{}, { kind: 'ok', binding, pools: [] }, 'noPool'],
  ] as const)('skips the whole DC: %j %j → %s', (over, result, reason) => {
    expect(dcCandidates(input(result as QueryResult, over))).toEqual({ candidates: [], skipped: [{ dc: 'dc-x', reason }] });
  });
});
