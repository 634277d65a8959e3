import { buildTopologyEntries, type TopologyEndpointInput } from '../../src/topology';
import { ServingReadinessState as S, WorkerRole as R } from '../../src/wire/enums';
import type { KvPoolId, TopologyEntry } from '../../src/wire/types';

const { PREFILL: P, DECODE: D, ENCODE: E, AGGREGATED: A, LEGACY: L } = R;

function poolId(n: number): KvPoolId {
  const digest = (b: number) => ({ digest: new Uint8Array(16).fill(b), source: 1 });
  return { identityVersion: 1, indexerDomain: { cacheSemantics: digest(n), routingScope: digest(n + 1) }, dcId: 0x04f110c98b1bfc48n };
}

let nextWorker = 1n;
/** An endpoint of model "llama" in namespace "prod"; `live` lists each worker's availability. */
function ep(endpoint: string, over: Partial<TopologyEndpointInput> & { live?: (boolean | undefined)[] } = {}): TopologyEndpointInput {
  const { live = [true], ...rest } = over;
  return {
    namespace: 'prod',
    component: 'backend',
    endpoint,
    model: 'llama',
    workers: live.map((l) => ({ id: nextWorker++, live: l })),
    ...rest,
  };
}

function only(endpoints: TopologyEndpointInput[]): TopologyEntry {
  const entries = buildTopologyEntries(endpoints);
  expect(entries).toHaveLength(1);
  return entries[0];
}

type Expect = Partial<Pick<TopologyEntry, 'state' | 'presentRoles' | 'missingRoles' | 'duplicateRoleEndpoints' | 'legacyFallbackActive'>>;

describe('readiness of one (namespace, model) entry', () => {
  const cases: [string, TopologyEndpointInput[], Expect][] = [
    ['aggregated, live', [ep('agg', { workerType: 'aggregated' })],
      { state: S.READY, presentRoles: [A], missingRoles: [], duplicateRoleEndpoints: [], legacyFallbackActive: false }],
    ['aggregated, dead', [ep('agg', { workerType: 'aggregated', live: [false] })],
      { state: S.UNAVAILABLE, presentRoles: [], missingRoles: [A] }],
    ['aggregated, no workers configured', [ep('agg', { workerType: 'aggregated', live: [] })],
      { state: S.UNAVAILABLE, presentRoles: [], missingRoles: [A] }],
    ['aggregated, one of two workers live', [ep('agg', { workerType: 'aggregated', live: [false, true] })],
      { state: S.READY, presentRoles: [A], missingRoles: [] }],
    ['two aggregated endpoints are scale-out, not ambiguous',
      [ep('a1', { workerType: 'aggregated' }), ep('a2', { workerType: 'aggregated' })],
      { state: S.READY, presentRoles: [A], duplicateRoleEndpoints: [] }],

    ['P/D pair, both live',
      [ep('p', { workerType: 'prefill', needs: [['decode']] }), ep('d', { workerType: 'decode', needs: [['prefill']] })],
      { state: S.READY, presentRoles: [P, D], missingRoles: [] }],
    ['P/D pair, prefill dead',
      [ep('p', { workerType: 'prefill', needs: [['decode']], live: [false] }), ep('d', { workerType: 'decode', needs: [['prefill']] })],
      { state: S.UNAVAILABLE, presentRoles: [D], missingRoles: [P] }],
    ['P/D pair, decode dead: the dead unit is missing, the live prefill needs it',
      [ep('p', { workerType: 'prefill', needs: [['decode']] }), ep('d', { workerType: 'decode', live: [false] })],
      { state: S.UNAVAILABLE, presentRoles: [P], missingRoles: [D] }],
    ['decode alone, needing prefill that is not declared',
      [ep('d', { workerType: 'decode', needs: [['prefill']] })],
      { state: S.UNAVAILABLE, presentRoles: [D], missingRoles: [P] }],
    ['the needs of a dead unit are ignored',
      [ep('d', { workerType: 'decode', needs: [['prefill', 'encode']], live: [false] })],
      { state: S.UNAVAILABLE, presentRoles: [], missingRoles: [D] }],

    ['needs DNF: the second alternative satisfies',
      [ep('d', { workerType: 'decode', needs: [['prefill', 'encode'], ['aggregated']] }), ep('a', { workerType: 'aggregated' })],
      { state: S.READY, presentRoles: [D, A], missingRoles: [] }],
    ['needs DNF: the first alternative satisfies',
      [ep('d', { workerType: 'decode', needs: [['prefill', 'encode'], ['aggregated']] }),
        ep('p', { workerType: 'prefill' }), ep('e', { workerType: 'encode' })],
      { state: S.READY, presentRoles: [P, D, E], missingRoles: [] }],
    ['needs DNF: no alternative complete reports every needed role not present',
      [ep('d', { workerType: 'decode', needs: [['prefill', 'encode'], ['aggregated']] }), ep('p', { workerType: 'prefill' })],
      { state: S.UNAVAILABLE, presentRoles: [P, D], missingRoles: [E, A] }],

    ['duplicate live prefill endpoints',
      [ep('p1', { workerType: 'prefill' }), ep('p2', { workerType: 'prefill' }), ep('d', { workerType: 'decode', needs: [['prefill']] })],
      { state: S.UNAVAILABLE, presentRoles: [P, D], missingRoles: [], duplicateRoleEndpoints: [P] }],
    ['duplicate live prefill and decode endpoints',
      [ep('p1', { workerType: 'prefill' }), ep('p2', { workerType: 'prefill' }), ep('d1', { workerType: 'decode' }), ep('d2', { workerType: 'decode' })],
      { state: S.UNAVAILABLE, duplicateRoleEndpoints: [P, D] }],
    ['a duplicated endpoint that is dead is not ambiguous',
      [ep('p1', { workerType: 'prefill' }), ep('p2', { workerType: 'prefill', live: [false] }), ep('d', { workerType: 'decode' })],
      { state: S.READY, presentRoles: [P, D], duplicateRoleEndpoints: [] }],
    ['many workers on one endpoint are one unit',
      [ep('p', { workerType: 'prefill', live: [true, true, true] }), ep('d', { workerType: 'decode' })],
      { state: S.READY, duplicateRoleEndpoints: [] }],
    ['duplicate encode endpoints gate the state but are not listed',
      [ep('e1', { workerType: 'encode' }), ep('e2', { workerType: 'encode' }), ep('a', { workerType: 'aggregated' })],
      { state: S.UNAVAILABLE, presentRoles: [E, A], missingRoles: [], duplicateRoleEndpoints: [] }],

    ['legacy only, live', [ep('x', { live: [true] })],
      { state: S.READY, presentRoles: [], missingRoles: [], legacyFallbackActive: true }],
    ['legacy only, dead', [ep('x', { live: [false] })],
      { state: S.UNAVAILABLE, presentRoles: [], missingRoles: [], legacyFallbackActive: true }],
    ['legacy + typed: strict gating off, any live worker is enough',
      [ep('x', { live: [false] }), ep('d', { workerType: 'decode', needs: [['prefill']] })],
      { state: S.READY, presentRoles: [D], missingRoles: [], duplicateRoleEndpoints: [], legacyFallbackActive: true }],
    ['legacy + duplicated typed roles: no ambiguity on the legacy branch',
      [ep('x'), ep('p1', { workerType: 'prefill' }), ep('p2', { workerType: 'prefill' })],
      { state: S.READY, presentRoles: [P], duplicateRoleEndpoints: [], legacyFallbackActive: true }],

    ['unknown: a worker whose health has not answered', [ep('agg', { workerType: 'aggregated', live: [undefined] })],
      { state: S.UNKNOWN, presentRoles: [], missingRoles: [] }],
    ['unknown: one endpoint of the entry not authoritative clears present/missing',
      [ep('p', { workerType: 'prefill', live: [false] }), ep('d', { workerType: 'decode', live: [true, undefined] })],
      { state: S.UNKNOWN, presentRoles: [], missingRoles: [] }],
    ['unknown still lists duplicates among authoritative endpoints',
      [ep('p1', { workerType: 'prefill' }), ep('p2', { workerType: 'prefill' }), ep('d', { workerType: 'decode', live: [undefined] })],
      { state: S.UNKNOWN, duplicateRoleEndpoints: [P] }],
  ];

  test.each(cases)('%s', (_name, endpoints, expected) => {
    expect(only(endpoints)).toMatchObject(expected);
  });
});

describe('entries and members', () => {
  test('one entry per (namespace, model), sorted by UTF-8 bytes; members sorted by ns/component/endpoint', () => {
    const entries = buildTopologyEntries([
      ep('generate', { namespace: 'prod', model: '\u{1F600}' }),
      ep('generate', { namespace: 'prod', model: '\uFF5E' }),
      ep('generate', { namespace: 'dev', model: 'llama' }),
      ep('generate', { namespace: 'prod', model: 'llama', component: 'backend' }),
      ep('generate', { namespace: 'prod', model: 'llama', component: 'backend.a', workerType: 'aggregated' }),
    ]);
    expect(entries.map((e) => [e.namespace, e.canonicalModelId])).toEqual([
      ['dev', 'llama'],
      ['prod', 'llama'],
      ['prod', '\uFF5E'], // UTF-8 EF BD 9E sorts before F0 9F 98 80 (JS string order would invert them)
      ['prod', '\u{1F600}'],
    ]);
    // '.' (0x2E) sorts before '/' (0x2F): backend.a is a distinct member listed first.
    expect(entries[1].members).toEqual([
      { endpoint: { namespace: 'prod', component: 'backend.a', endpoint: 'generate' }, roles: [A] },
      { endpoint: { namespace: 'prod', component: 'backend', endpoint: 'generate' }, roles: [L] },
    ]);
  });

  test('a member carries its pool link only while the pool is materialized', () => {
    const entry = only([ep('p', { workerType: 'prefill', poolId: poolId(3) }), ep('e', { workerType: 'encode' })]);
    expect(entry.members[0]).not.toHaveProperty('poolId');
    expect(entry.members[0].endpoint?.endpoint).toBe('e');
    expect(entry.members[1]).toEqual({
      endpoint: { namespace: 'prod', component: 'backend', endpoint: 'p' },
      roles: [P],
      poolId: poolId(3),
    });
  });

  test('unknown in one entry leaves other entries authoritative', () => {
    const entries = buildTopologyEntries([
      ep('a', { model: 'm1', workerType: 'aggregated', live: [undefined] }),
      ep('b', { model: 'm2', workerType: 'aggregated' }),
    ]);
    expect(entries.map((e) => e.state)).toEqual([S.UNKNOWN, S.READY]);
  });

  test('no endpoints, no entries', () => {
    expect(buildTopologyEntries([])).toEqual([]);
  });
});

describe('adapters nested in the base entry', () => {
  function withAdapters(endpoint: string, over: Partial<TopologyEndpointInput> & { live?: (boolean | undefined)[] }, adapters: [string, number[]][]) {
    const e = ep(endpoint, over);
    e.adapters = adapters.map(([servedModel, idx]) => ({ servedModel, workers: idx.map((i) => e.workers[i].id) }));
    return e;
  }

  test('an adapter on a live aggregated route is READY next to P/D in the same entry', () => {
    const entry = only([
      withAdapters('agg', { workerType: 'aggregated' }, [['llama-tenant-a', [0]]]),
      ep('p', { workerType: 'prefill' }),
      ep('d', { workerType: 'decode', needs: [['prefill']] }),
    ]);
    expect(entry.state).toBe(S.READY);
    expect(entry.adapters).toEqual([{ canonicalModelId: 'llama-tenant-a', state: S.READY, missingRoles: [] }]);
  });

  test('a decode-only adapter in P/D is UNAVAILABLE with missing [PREFILL]', () => {
    const entry = only([
      ep('p', { workerType: 'prefill' }),
      withAdapters('d', { workerType: 'decode', needs: [['prefill']] }, [['llama-lora', [0]]]),
    ]);
    expect(entry.state).toBe(S.READY);
    expect(entry.adapters).toEqual([{ canonicalModelId: 'llama-lora', state: S.UNAVAILABLE, missingRoles: [P] }]);
  });

  test('only the workers listed for the adapter count', () => {
    const entry = only([withAdapters('agg', { workerType: 'aggregated', live: [false, true] }, [['on-dead', [0]], ['on-live', [1]]])]);
    expect(entry.adapters).toEqual([
      { canonicalModelId: 'on-dead', state: S.UNAVAILABLE, missingRoles: [A] },
      { canonicalModelId: 'on-live', state: S.READY, missingRoles: [] },
    ]);
  });

  test('a base UNAVAILABLE forces the adapter UNAVAILABLE (EPD with the encoder outside adapter membership)', () => {
    const entry = only([
      ep('e1', { workerType: 'encode' }),
      ep('e2', { workerType: 'encode' }),
      withAdapters('p', { workerType: 'prefill', needs: [['encode']] }, [['lora', [0]]]),
      withAdapters('d', { workerType: 'decode', needs: [['prefill']] }, [['lora', [0]]]),
    ]);
    expect(entry.state).toBe(S.UNAVAILABLE);
    expect(entry.adapters).toEqual([{ canonicalModelId: 'lora', state: S.UNAVAILABLE, missingRoles: [E] }]);
  });

  test('a base UNKNOWN makes the adapter UNKNOWN with no missing roles', () => {
    const entry = only([withAdapters('agg', { workerType: 'aggregated', live: [undefined] }, [['lora', [0]]])]);
    expect(entry.adapters).toEqual([{ canonicalModelId: 'lora', state: S.UNKNOWN, missingRoles: [] }]);
  });

  test('an adapter served by several endpoints is one nested entry; adapters sorted by id; never top-level', () => {
    const entries = buildTopologyEntries([
      withAdapters('p', { workerType: 'prefill' }, [['zeta', [0]], ['alpha', [0]]]),
      withAdapters('d', { workerType: 'decode', needs: [['prefill']] }, [['alpha', [0]]]),
    ]);
    expect(entries).toHaveLength(1);
    expect(entries[0].adapters).toEqual([
      { canonicalModelId: 'alpha', state: S.READY, missingRoles: [] },
      { canonicalModelId: 'zeta', state: S.READY, missingRoles: [] },
    ]);
  });

  test('legacy adapter: READY iff one of its workers is live', () => {
    const entry = only([withAdapters('x', { live: [true, false] }, [['a', [0]], ['b', [1]]])]);
    expect(entry.adapters.map((a) => a.state)).toEqual([S.READY, S.UNAVAILABLE]);
  });
});

describe('an endpoint whose workers declare different worker types (units by worker type and needs)', () => {
  /** One endpoint "pd" with one worker per [type, needs, live]. */
  function mixed(workers: [TopologyEndpointInput['workerType'], TopologyEndpointInput['needs'], boolean][]): TopologyEndpointInput {
    return { ...ep('pd', { live: [] }), workers: workers.map(([workerType, needs, live]) => ({ id: nextWorker++, workerType, needs, live })) };
  }

  test('prefill and decode workers of one endpoint are two units: READY, both roles on the member', () => {
    const entry = only([mixed([['prefill', undefined, true], ['decode', [['prefill']], true]])]);
    expect(entry).toMatchObject({ state: S.READY, presentRoles: [P, D], missingRoles: [], duplicateRoleEndpoints: [] });
    expect(entry.members[0].roles).toEqual([P, D]);
  });

  test('its dead prefill worker leaves the decode unit short: UNAVAILABLE, missing [PREFILL]', () => {
    const entry = only([mixed([['prefill', undefined, false], ['decode', [['prefill']], true]])]);
    expect(entry).toMatchObject({ state: S.UNAVAILABLE, presentRoles: [D], missingRoles: [P] });
  });

  test('two live prefill units of one endpoint (different needs) are ambiguous', () => {
    const entry = only([mixed([['prefill', undefined, true], ['prefill', [['decode']], true], ['decode', undefined, true]])]);
    expect(entry).toMatchObject({ state: S.UNAVAILABLE, duplicateRoleEndpoints: [P] });
  });

  test('workers of one type and needs are one unit however many', () => {
    expect(only([mixed([['prefill', undefined, true], ['prefill', undefined, true], ['decode', [['prefill']], true]])]).state).toBe(S.READY);
  });

  test('a worker without its own type takes the endpoint\'s', () => {
    const e = mixed([['prefill', undefined, true], [undefined, undefined, true]]);
    e.workerType = 'decode';
    e.needs = [['prefill']];
    const entry = only([e]);
    expect(entry).toMatchObject({ state: S.READY, presentRoles: [P, D] });
    expect(entry.members[0].roles).toEqual([P, D]);
  });

  test("an adapter's units come from its workers only: on the decode worker alone it misses PREFILL", () => {
    const e = mixed([['prefill', undefined, true], ['decode', [['prefill']], true]]);
    e.adapters = [{ servedModel: 'on-decode', workers: [e.workers[1].id] }, { servedModel: 'on-both', workers: e.workers.map((w) => w.id) }];
    expect(only([e]).adapters).toEqual([
      { canonicalModelId: 'on-both', state: S.READY, missingRoles: [] },
      { canonicalModelId: 'on-decode', state: S.UNAVAILABLE, missingRoles: [P] },
    ]);
  });
});
