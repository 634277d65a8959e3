import { ReadinessProjection, type TopologyEndpointInput } from '../../src/topology';
import { ServingReadinessState as S } from '../../src/wire/enums';

function endpoints(live: boolean | undefined, poolDigest = 7): TopologyEndpointInput[] {
  return [
    {
      namespace: 'prod',
      component: 'backend',
      endpoint: 'generate',
      model: 'llama',
      workerType: 'aggregated',
      workers: [{ id: 7n, live }],
      // A fresh object each call: equality must be by value, not identity.
      poolId: {
        identityVersion: 1,
        indexerDomain: {
          cacheSemantics: { digest: new Uint8Array(16).fill(poolDigest), source: 1 },
          routingScope: { digest: new Uint8Array(16).fill(2), source: 1 },
        },
        dcId: 1n,
      },
    },
  ];
}

describe('ReadinessProjection revisions', () => {
  test('starts at 1 with no entries', () => {
    expect(new ReadinessProjection().current()).toEqual({ revision: 1n, entries: [] });
  });

  test('+1 only when the entries change', () => {
    const p = new ReadinessProjection();
    const steps: [TopologyEndpointInput[], bigint, boolean, number | undefined][] = [
      [endpoints(undefined), 2n, true, S.UNKNOWN],
      [endpoints(undefined), 2n, false, S.UNKNOWN], // identical availability: nothing to publish
      [endpoints(true), 3n, true, S.READY],
      [endpoints(true), 3n, false, S.READY],
      [endpoints(false), 4n, true, S.UNAVAILABLE],
      [endpoints(false, 9), 5n, true, S.UNAVAILABLE], // a different pool link is a change
      [[], 6n, true, undefined], // terminal clear publishes empty entries
      [[], 6n, false, undefined],
    ];
    for (const [input, revision, changed, state] of steps) {
      const u = p.update(input);
      expect({ revision: u.revision, changed, state: u.entries[0]?.state }).toEqual({ revision, changed, state });
      expect(p.current()).toEqual({ revision: u.revision, entries: u.entries });
    }
  });
});
